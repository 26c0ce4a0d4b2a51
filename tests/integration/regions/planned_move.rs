//! A planned move between two regions (docs/regions.md#failover-and-one-request-one-effect),
//! simulated as `regions` simulates MREC, with each region's home gate in front of its API:
//! home `h`'s users write through A while B's gate refuses them; the move closes `h` in A,
//! waits until every request A admitted has ended and its writes have replicated (the drain),
//! opens `h` in B and points the users' "DNS" there. Users keep writing throughout, several
//! requests of one user at once; a request the gate refuses is an answer without effect.
//! After quiet, every (user, post) history, across both regions, passes the linearizability
//! checker against the table; both replicas are equal, and each region's counts equal its
//! own table.
//!
//! Not shown here: named requests (Markers are not replicated by the simulation), and the
//! drain's length on AWS (no sentinel proves replication done; the runbook waits a minute).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use likes_core::homes::{Home, Homes};
use likes_core::{PostId, UserId};
use likes_harness::linear::{answer_of, linearizable, Answer, Kind, Op};
use likes_harness::regions::replicator::Delays;
use likes_harness::regions::{like_key, pair, quiet, spawn, Moto, Region};
use likes_harness::{call, like_path, ApiEvent};
use serde_json::Map;

const A: usize = 0;
const B: usize = 1;
const CLAIM: &str = "custom:home";
const USERS: usize = 3;
const POSTS: usize = 3;
/// Requests of one user in flight at once.
const DEVICES: usize = 2;

type Pair = (PostId, UserId);

/// Where the move stands, as the workers see it.
struct Routing {
    /// The region home `h`'s address points to.
    dns: AtomicUsize,
    /// Set once h is closed in A.
    closed: AtomicBool,
    /// Requests sent to A before `closed` was seen set and not yet answered: once 0, every
    /// request A's gate admitted has ended. (One counted late was sent after the close, and
    /// the gate refuses it.)
    in_a_open: AtomicUsize,
    /// Requests answered so far, and refused by a gate.
    done: AtomicUsize,
    refused: AtomicUsize,
    stop: AtomicBool,
}

/// One device's requests until told to stop: each a like or an unlike of a random post, sent
/// to where `h`'s address points, recorded with the history clock's ticks.
async fn device(
    regions: [Arc<Region>; 2],
    routing: Arc<Routing>,
    clock: Arc<AtomicU64>,
    user: UserId,
    posts: Vec<PostId>,
    mut x: u64,
) -> Vec<(Pair, Op)> {
    let tick = || clock.fetch_add(1, Ordering::SeqCst);
    let mut history = Vec::new();
    while !routing.stop.load(Ordering::SeqCst) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let post = posts[(x % POSTS as u64) as usize].clone();
        let kind = if x & 8 == 0 { Kind::Like } else { Kind::Unlike };
        let method = if kind == Kind::Like { "PUT" } else { "DELETE" };
        let mut claims = Map::new();
        claims.insert("sub".into(), user.as_str().into());
        claims.insert("iss".into(), "https://issuer.example".into());
        claims.insert(CLAIM.into(), "h".into());
        let event = ApiEvent::new(method, &like_path(&post)).claims(claims);
        let to = routing.dns.load(Ordering::SeqCst);
        let counted = to == A && !routing.closed.load(Ordering::SeqCst);
        if counted {
            routing.in_a_open.fetch_add(1, Ordering::SeqCst);
        }
        let start = tick();
        // A new execution environment per request: each reads its gate afresh.
        let (status, body, _) = call(&regions[to].homed_app(CLAIM), event).await;
        let end = tick();
        if counted {
            routing.in_a_open.fetch_sub(1, Ordering::SeqCst);
        }
        let answer = if status == 421 && body["error"]["code"] == "wrong_region" {
            routing.refused.fetch_add(1, Ordering::SeqCst);
            Answer::NoEffect
        } else {
            answer_of(status, &body)
        };
        routing.done.fetch_add(1, Ordering::SeqCst);
        history.push((
            (post, user.clone()),
            Op {
                kind,
                start,
                end,
                answer,
            },
        ));
    }
    history
}

/// Polls (20 s at most) until `done` holds.
async fn until(what: &str, done: impl Fn() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !done() {
        assert!(tokio::time::Instant::now() < deadline, "never: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_planned_move_keeps_every_pair_linearizable_across_regions() {
    let b_moto = Moto::start().await;
    let delays = Delays {
        min: Duration::from_millis(50),
        max: Duration::from_millis(400),
    };
    let (regions, replicator) = pair(&b_moto, delays, 23).await;
    let h = Home::parse("h").expect("a home");
    regions[A]
        .homes()
        .set(&h, true)
        .await
        .expect("h opened in A");
    // B serves nobody yet: a request there is refused, and writes nothing.
    let probe = (PostId::new_random(), UserId::new_random());
    let mut claims = Map::new();
    claims.insert("sub".into(), probe.1.as_str().into());
    claims.insert(CLAIM.into(), "h".into());
    let (status, body, _) = call(
        &regions[B].homed_app(CLAIM),
        ApiEvent::new("PUT", &like_path(&probe.0)).claims(claims),
    )
    .await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (421, &serde_json::json!("wrong_region")),
        "{body}"
    );
    let stop_replicator = spawn(&replicator);

    let routing = Arc::new(Routing {
        dns: AtomicUsize::new(A),
        closed: AtomicBool::new(false),
        in_a_open: AtomicUsize::new(0),
        done: AtomicUsize::new(0),
        refused: AtomicUsize::new(0),
        stop: AtomicBool::new(false),
    });
    let clock = Arc::new(AtomicU64::new(0));
    let users: Vec<UserId> = (0..USERS).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..POSTS).map(|_| PostId::new_random()).collect();
    let mut devices = Vec::new();
    for d in 0..USERS * DEVICES {
        devices.push(tokio::spawn(device(
            [Arc::clone(&regions[A]), Arc::clone(&regions[B])],
            Arc::clone(&routing),
            Arc::clone(&clock),
            users[d % USERS].clone(),
            posts.clone(),
            0x9E37_79B9_7F4A_7C15 ^ (d as u64 + 1),
        )));
    }

    // At home in A for a while.
    until("40 requests answered in A", || {
        routing.done.load(Ordering::SeqCst) >= 40
    })
    .await;
    // The move: close h in A; every request A admitted ends; the drain; open h in B; DNS.
    regions[A]
        .homes()
        .set(&h, false)
        .await
        .expect("h closed in A");
    routing.closed.store(true, Ordering::SeqCst);
    until("A's admitted requests ended", || {
        routing.in_a_open.load(Ordering::SeqCst) == 0
    })
    .await;
    quiet(&regions, &replicator).await;
    regions[B]
        .homes()
        .set(&h, true)
        .await
        .expect("h opened in B");
    let moved_at = routing.done.load(Ordering::SeqCst);
    routing.dns.store(B, Ordering::SeqCst);
    until("40 requests answered in B", || {
        routing.done.load(Ordering::SeqCst) >= moved_at + 40
    })
    .await;
    routing.stop.store(true, Ordering::SeqCst);
    let mut histories: HashMap<Pair, Vec<Op>> = HashMap::new();
    for d in devices {
        for (pair, op) in d.await.expect("a device's requests") {
            histories.entry(pair).or_default().push(op);
        }
    }
    quiet(&regions, &replicator).await;
    stop_replicator.store(true, Ordering::SeqCst);

    let (a_items, b_items) = (regions[A].items().await, regions[B].items().await);
    assert_eq!(a_items, b_items, "the replicas differ after quiet");
    for region in &regions {
        for (p, (held, counted)) in posts.iter().zip(region.counts_against_table(&posts).await) {
            assert_eq!(
                counted, held,
                "{}: post {p} counted {counted}, holds {held}",
                region.name
            );
        }
    }
    let mut applied = 0;
    for (pair, ops) in &histories {
        let liked = a_items.contains_key(&like_key(&pair.0, &pair.1));
        assert!(
            linearizable(ops, liked),
            "{pair:?} is not linearizable (ends liked: {liked}): {ops:?}"
        );
        applied += ops.iter().filter(|o| o.answer != Answer::NoEffect).count();
    }
    eprintln!(
        "a planned move: {} requests on {} pairs ({applied} answered by a region serving h, {} refused by a gate); replicator {:?}",
        routing.done.load(Ordering::SeqCst),
        histories.len(),
        routing.refused.load(Ordering::SeqCst),
        replicator.stats()
    );
    assert!(
        applied >= 60,
        "too few requests took effect to show anything: {applied}"
    );
    assert!(
        routing.refused.load(Ordering::SeqCst) > 0,
        "no request reached A between the close and the move: its gate was not shown refusing"
    );
    let probed = probe.1.to_string();
    assert!(
        a_items.keys().all(|(_, u)| *u != probed),
        "B's refused request wrote nothing"
    );
}
