//! Randomized: a few users, each on three devices, like and unlike a few posts concurrently
//! through the handler while the client injects throttles, lost answers and bare 5xx answers.
//! Every request's interval and answer is recorded, and the history of each (user, post) is
//! checked for a linearization against the final table (`likes_harness::linear`).
//! Named requests are also sent again after their answer came (a client's duplicate): the
//! duplicate must be answered as the first was — `changed: false` for a request that changed
//! nothing — and never take effect, whatever other devices did in between.
//! A fifth of the requests are strong reads (`GET …/like`), in the history with the writes; the
//! faults strike the consistent reads too (the read that settles a lost answer included).
//! `LIKES_LINEAR_SEED` replays a run; `LIKES_LINEAR_REQUESTS` sizes it (default 1,080).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Instant;

use likes_core::{PostId, UserId};
use likes_harness::linear::{answer_of, linearizable, read_answer_of, Answer, Kind, Op};
use likes_harness::sdk_faults::random_faults;
use likes_harness::{call, call_as, like_path, ApiEvent, Tables};

const USERS: usize = 3;
const DEVICES: usize = 3;
const POSTS: usize = 3;

use likes_sim::rng::SplitMix as Rng;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_likes_and_unlikes_under_faults_are_linearizable() {
    let seed = env_u64("LIKES_LINEAR_SEED").unwrap_or_else(|| {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(1)
    });
    let total = env_u64("LIKES_LINEAR_REQUESTS").unwrap_or(1080) as usize;
    let per_device = total.div_ceil(USERS * DEVICES);
    println!("seed {seed} (LIKES_LINEAR_SEED={seed} replays it)");

    let t = Tables::lagging().await;
    let faults = random_faults(seed);
    let app = Arc::new(t.app_with(faults.clone()));
    let users: Vec<UserId> = (0..USERS).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..POSTS).map(|_| PostId::new_random()).collect();
    let started = Instant::now();
    // The history's clock: one tick per event, so that a device's next request always starts
    // after its previous one was answered, and no two events share an instant.
    let clock = Arc::new(std::sync::atomic::AtomicU64::new(0));
    let tick =
        move |c: &std::sync::atomic::AtomicU64| c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let mut tasks = Vec::new();
    for device in 0..USERS * DEVICES {
        let (app, user, posts) = (app.clone(), users[device % USERS].clone(), posts.clone());
        let clock = Arc::clone(&clock);
        let mut rng = Rng(seed ^ (device as u64 + 1).wrapping_mul(0x2545_f491_4f6c_dd1d));
        tasks.push(tokio::spawn(async move {
            let mut history = Vec::new();
            // A named request answered definitely, to be sent again after the next request.
            let mut duplicate: Option<(usize, Kind, String, Answer)> = None;
            let mut mismatches = Vec::new();
            for _ in 0..per_device {
                let p = rng.below(POSTS as u64) as usize;
                // A fifth are strong reads (`GET …/like`), in the history with the writes.
                if rng.below(5) == 0 {
                    let start = tick(&clock);
                    let (status, body, _) = call_as(&app, "GET", &like_path(&posts[p]), user.as_str()).await;
                    let answer = read_answer_of(status, &body);
                    let end = tick(&clock);
                    history.push((p, Op { kind: Kind::Read, start, end, answer }));
                    continue;
                }
                let kind = if rng.below(2) == 0 {
                    Kind::Like
                } else {
                    Kind::Unlike
                };
                let method = if kind == Kind::Like { "PUT" } else { "DELETE" };
                // A quarter of the requests are named, and retried by their client while
                // their outcome is unknown: one logical request, one interval.
                let key = (rng.below(4) == 0).then(|| uuid::Uuid::new_v4().simple().to_string());
                let start = tick(&clock);
                let (mut tries, mut unknown) = (0, false);
                let answer = loop {
                    let mut event =
                        ApiEvent::new(method, &like_path(&posts[p])).caller(user.as_str());
                    if let Some(k) = &key {
                        event = event.header("Idempotency-Key", k);
                    }
                    let (status, body, _) = call(&app, event).await;
                    let answer = answer_of(status, &body);
                    tries += 1;
                    // A retry's `unavailable` leaves an earlier try's unknown outcome open: the
                    // request is unknown, not without effect (as in `reactions_linearizable`).
                    let open = match answer {
                        Answer::Unknown => true,
                        Answer::NoEffect => unknown,
                        _ => false,
                    };
                    unknown |= answer == Answer::Unknown;
                    if key.is_none() || !open || tries == 3 {
                        break if open { Answer::Unknown } else { answer };
                    }
                };
                let end = tick(&clock);
                history.push((
                    p,
                    Op {
                        kind,
                        start,
                        end,
                        answer,
                    },
                ));
                if let Some((dp, dkind, dkey, first)) = duplicate.take() {
                    let method = if dkind == Kind::Like { "PUT" } else { "DELETE" };
                    let event = ApiEvent::new(method, &like_path(&posts[dp]))
                        .caller(user.as_str())
                        .header("Idempotency-Key", &dkey);
                    let (status, body, _) = call(&app, event).await;
                    match answer_of(status, &body) {
                        // Answered as the first attempt was: in the history it changes nothing.
                        again if again == first => {
                            let at = tick(&clock);
                            let op = Op {
                                kind: dkind,
                                start: at,
                                end: tick(&clock),
                                answer: Answer::NoEffect,
                            };
                            history.push((dp, op));
                        }
                        // A fault on the way: the duplicate is no evidence either way.
                        Answer::Unknown | Answer::NoEffect => {}
                        other => mismatches.push(format!(
                            "a duplicate of a named {dkind:?} answered {other:?}, the first {first:?}"
                        )),
                    }
                }
                if let (Some(k), Answer::Changed(_)) = (&key, answer) {
                    if rng.below(2) == 0 {
                        duplicate = Some((p, kind, k.clone(), answer));
                    }
                }
            }
            (device % USERS, history, mismatches)
        }));
    }
    let mut by_key: HashMap<(usize, usize), Vec<Op>> = HashMap::new();
    let mut answers: BTreeMap<String, usize> = BTreeMap::new();
    let mut mismatches = Vec::new();
    for task in tasks {
        let (u, history, wrong) = task.await.expect("a device");
        mismatches.extend(wrong);
        for (p, op) in history {
            *answers.entry(format!("{:?}", op.answer)).or_default() += 1;
            by_key.entry((u, p)).or_default().push(op);
        }
    }

    let mut violations = 0;
    for ((u, p), ops) in &by_key {
        let (status, b, _) =
            call_as(&t.app(), "GET", &like_path(&posts[*p]), users[*u].as_str()).await;
        assert_eq!(status, 200, "the final read, without faults: {b}");
        let final_liked = b["liked"] == true;
        if !linearizable(ops, final_liked) {
            violations += 1;
            eprintln!("not linearizable (final liked: {final_liked}): {ops:#?}");
        }
    }
    let requests: usize = by_key.values().map(Vec::len).sum();
    let injected = faults.injected();
    println!(
        "requests {requests} in {:.1}s; answers {answers:?}; faults {injected:?} ({} in all); (user, post) histories checked {}; violations {violations}",
        started.elapsed().as_secs_f64(),
        injected.values().sum::<usize>(),
        by_key.len()
    );
    // Every kind of fault, on every kind of write, happened: a run that injected none of one
    // kind proved nothing about it.
    for op in ["PutItem", "DeleteItem", "TransactWriteItems", "GetItem"] {
        for fault in ["Throttle", "LoseAnswer", "BareServerError"] {
            let key = format!("{op} {fault}");
            assert!(
                injected.get(&key).is_some_and(|n| *n > 0),
                "no {key} in {injected:?}"
            );
        }
    }
    assert_eq!(violations, 0);
    assert!(mismatches.is_empty(), "{mismatches:#?}");
}
