//! Split brain between two regions (docs/regions.md#failover-and-one-request-one-effect),
//! simulated as `regions` simulates MREC: region A is cut off but still takes its users'
//! requests while B takes them too (as with their home open in both; the gates themselves
//! are `planned_move`'s), some users' requests going to A (a stale address), some to B, for
//! the split's length. After the rejoin and quiet:
//! - both replicas hold the same items, and each region's counts equal its own table;
//! - a pair written in one region only during the split ends as that write left it (nothing
//!   of it was lost);
//! - a pair written differently in both ends as the later write left it, last writer wins
//!   on when each was made (checked where the two are far enough apart for the records' ms
//!   times to order them; otherwise as one of the two) — the loss the design bounds to pairs
//!   written in the cut-off region during the split. Never a state no request asked for.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use likes_core::{PostId, UserId};
use likes_harness::regions::replicator::Delays;
use likes_harness::regions::{like_key, pair, quiet, spawn, Moto, Region};
use likes_harness::{call_as, like_path};

const A: usize = 0;
const B: usize = 1;

type Pair = (PostId, UserId);

/// Sends `liked` for `pair` to `region`: the state the region then holds for it, and whether
/// the request changed it (a write; a request that changed nothing wrote nothing).
async fn set(region: &Region, pair: &Pair, liked: bool) -> (bool, bool) {
    let method = if liked { "PUT" } else { "DELETE" };
    let (s, body, _) = call_as(&region.app(), method, &like_path(&pair.0), pair.1.as_str()).await;
    assert_eq!(s, 200, "{} {method}: {body}", region.name);
    (liked, body["changed"] == true)
}

/// Two writes this far apart (the later sent this long after the earlier was answered) are
/// ordered by last writer wins as they were made: their records' creation times (ms) cannot
/// tie.
const APART: Duration = Duration::from_millis(3);

/// What a region's requests left of a pair during the split: the state its last request asked
/// for, and its last write (when it was sent and answered, and the state it made).
#[derive(Default, Clone, Copy)]
struct Left {
    state: bool,
    write: Option<((Instant, Instant), bool)>,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_brain_loses_only_what_both_regions_wrote_and_keeps_counts_exact() {
    let b_moto = Moto::start().await;
    let delays = Delays {
        min: Duration::from_millis(50),
        max: Duration::from_millis(300),
    };
    let (regions, replicator) = pair(&b_moto, delays, 41).await;
    let stop = spawn(&replicator);
    let users: Vec<UserId> = (0..4).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..3).map(|_| PostId::new_random()).collect();
    let pairs: Vec<Pair> = users
        .iter()
        .flat_map(|u| posts.iter().map(|p| (p.clone(), u.clone())))
        .collect();

    // Before the split: every other pair liked, at home in A.
    let mut before: HashMap<Pair, bool> = HashMap::new();
    for (i, pair) in pairs.iter().enumerate() {
        before.insert(pair.clone(), set(&regions[A], pair, i % 2 == 0).await.0);
    }
    quiet(&regions, &replicator).await;

    // The split: each user's requests, one after another, each to A or B (seeded), each a
    // like or an unlike of one of their pairs.
    replicator.cut(true);
    let mut tasks = Vec::new();
    for (u, user) in users.iter().enumerate() {
        let regions = [Arc::clone(&regions[A]), Arc::clone(&regions[B])];
        let (user, posts) = (user.clone(), posts.clone());
        tasks.push(tokio::spawn(async move {
            let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ (u as u64 + 1);
            let mut left: HashMap<(Pair, usize), Left> = HashMap::new();
            for _ in 0..20 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pair = (posts[(x % 3) as usize].clone(), user.clone());
                let r = ((x >> 8) % 2) as usize;
                let sent = Instant::now();
                let (state, changed) = set(&regions[r], &pair, (x >> 16).is_multiple_of(2)).await;
                let entry = left.entry((pair, r)).or_default();
                entry.state = state;
                if changed {
                    entry.write = Some(((sent, Instant::now()), state));
                }
            }
            left
        }));
    }
    let mut left: HashMap<(Pair, usize), Left> = HashMap::new();
    for t in tasks {
        left.extend(t.await.expect("a user's requests"));
    }

    replicator.cut(false);
    quiet(&regions, &replicator).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);

    let (a_items, b_items) = (regions[A].items().await, regions[B].items().await);
    assert_eq!(a_items, b_items, "the replicas differ after quiet");
    for region in &regions {
        for (p, (held, counted)) in posts.iter().zip(region.counts_against_table(&posts).await) {
            assert_eq!(counted, held, "{}: post {p}", region.name);
        }
    }
    // A pair's state after the rejoin: its later write's, by last writer wins; with no write
    // in the split, as before it (requests that changed nothing wrote nothing).
    let (mut decided, mut close) = (0, 0);
    for pair in &pairs {
        let now = a_items.contains_key(&like_key(&pair.0, &pair.1));
        let written = |r: usize| left.get(&(pair.clone(), r)).and_then(|l| l.write);
        match (written(A), written(B)) {
            (None, None) => assert_eq!(now, before[pair], "{pair:?}: no write in the split"),
            (Some((_, a)), None) => assert_eq!(now, a, "{pair:?}: written in A only"),
            (None, Some((_, b))) => assert_eq!(now, b, "{pair:?}: written in B only"),
            (Some((ta, a)), Some((tb, b))) if a != b => {
                // The later write, and how long after the earlier's answer it was sent.
                let ((first, _), (second, later)) = if ta.0 > tb.0 {
                    ((tb, b), (ta, a))
                } else {
                    ((ta, a), (tb, b))
                };
                if second.0.saturating_duration_since(first.1) >= APART {
                    decided += 1;
                    assert_eq!(now, later, "{pair:?}: not the later write's state");
                } else {
                    close += 1;
                    assert!(now == a || now == b, "{pair:?}: neither write's state");
                }
            }
            (Some((_, a)), Some(_)) => assert_eq!(now, a, "{pair:?}: both regions wrote it so"),
        }
    }
    eprintln!(
        "split brain: {} pairs, {decided} conflicts decided by the later write ({close} too close to order); replicator {:?}",
        pairs.len(),
        replicator.stats()
    );
    assert!(
        decided > 0,
        "no pair was written differently in both regions: last writer wins decided nothing"
    );
}
