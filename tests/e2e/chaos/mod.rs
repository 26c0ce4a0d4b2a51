//! The end-to-end chaos run: many users like and unlike a Zipf-skewed choice of posts (some
//! hot) concurrently through HTTP on the local stack, while the local mapping delivers batches
//! twice, fails the function after it ran (bisect, retry) and fails Counts writes; the emulator
//! is stopped and started once (behind a loopback proxy that refuses and cuts its connections,
//! so that its in-memory data survives); the stack itself is restarted once mid-run (its mapping
//! resumes from its checkpoint file). Once the mapping has drained (whole idle rounds of every
//! shard) every bucket's count on its Counts item must equal the like items in that bucket, over
//! three polls in a row; every user's like state must be the last request of theirs that was
//! acknowledged; each kind of injected fault must have happened, and the aggregator must have
//! reported no anomaly, no mark ahead and no batch given up.
//!
//! Clients retry a request until it is acknowledged (a 503 or a refused connection is retried);
//! one in twenty is named with an `Idempotency-Key`, retried with the same key. A quarter of the
//! requests are a second kind, `love` (`PUT`/`DELETE …/reactions/love`): every bucket's count of
//! each kind must equal its items of that kind. Each answer's `changed` is checked against the
//! state the user's own requests left (a user's requests are one client's, in order): always for
//! a named request (answered as its first attempt was), and for an unnamed one acknowledged at
//! its first attempt (a retried one may find its own earlier attempt's effect).
//!
//! Size: `LIKES_CHAOS_REQUESTS` (default 2,400, the CI size; `make chaos` runs 20,000). Like
//! events are published as `make dev` publishes them (`LIKES_CHAOS_EVENTS`, default
//! `notifications`; `none` leaves the events mapping out). `LIKES_CHAOS_FAULTS=off` runs the same
//! load with no fault injected (no chaos plan, the emulator and the stack left running): the
//! throughput and settle time of a quiet stack, for comparison.

use crate::common;
mod diagnose;
mod moderation;
mod oracle;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{http, request, token, Emulator, Options, Stack};
use likes_sim::rng::SplitMix;
use serde_json::Value;

const USERS: usize = 48;
/// The kinds the clients use: the like, and one other.
const KINDS: [&str; 2] = ["like", "love"];
const CLIENTS: usize = 12;
const POSTS: usize = 60;

fn zipf_post(rng: &mut SplitMix) -> usize {
    // A fifth of the traffic on 3 hot posts, the rest Zipf over all of them.
    if rng.below(5) == 0 {
        return rng.below(3) as usize;
    }
    let u = rng.unit();
    let total: f64 = (1..=POSTS).map(|k| 1.0 / k as f64).sum();
    let mut acc = 0.0;
    for k in 1..=POSTS {
        acc += 1.0 / k as f64 / total;
        if u < acc {
            return k - 1;
        }
    }
    POSTS - 1
}

/// Adds a stack's counters (`GET /_local/stats`) by section and kind.
fn add_stats(into: &mut BTreeMap<String, u64>, stats: &Value) {
    let sections = [
        ("mapping", &stats["mapping"]),
        ("injected", &stats["injected"]),
        ("aggregator", &stats["aggregator"]),
        ("events.mapping", &stats["events"]["mapping"]),
        ("events.function", &stats["events"]["function"]),
    ];
    for (section, counters) in sections {
        for (k, v) in counters.as_object().into_iter().flatten() {
            *into.entry(format!("{section}.{k}")).or_default() += v.as_u64().unwrap_or(0);
        }
    }
}

/// The mapping's idle rounds so far (every shard read, nothing new), if the stack answers.
fn idle_rounds(stack: &Stack) -> Option<u64> {
    stack.stats()["mapping"]["idle_rounds"].as_u64()
}

/// Polls until every bucket matches its like items in three polls in a row, each after at
/// least two more idle rounds of the mapping (so after every record written so far was
/// delivered and answered), or the deadline passes; the last poll's mismatches.
fn settled_mismatches(
    rt: &tokio::runtime::Runtime,
    stack: &Stack,
    emulator: &Emulator,
    posts: &[String],
) -> Vec<String> {
    let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
    let counts = likes_aws::DynamoCounts::new(client.clone(), "counts");
    let deadline = Instant::now() + Duration::from_secs(180);
    let (mut seen, mut stable) = (idle_rounds(stack), 0);
    let mut mismatches = vec!["not compared yet".to_owned()];
    while stable < 3 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(250));
        let now = idle_rounds(stack);
        let drained = matches!((seen, now), (Some(a), Some(b)) if b >= a + 2);
        if seen.is_none() {
            seen = now;
        }
        if !drained {
            continue;
        }
        seen = now;
        mismatches = rt.block_on(oracle::mismatches(&client, &counts, posts, &KINDS));
        stable = if mismatches.is_empty() { stable + 1 } else { 0 };
    }
    mismatches
}

#[test]
fn counts_and_likes_survive_chaos() {
    let total: usize = std::env::var("LIKES_CHAOS_REQUESTS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(2_400);
    let seed: u64 = std::env::var("LIKES_CHAOS_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(20_261_201);
    let faults_on = std::env::var("LIKES_CHAOS_FAULTS").as_deref() != Ok("off");
    let events = std::env::var("LIKES_CHAOS_EVENTS").unwrap_or_else(|_| "notifications".into());
    let started = Instant::now();
    let emulator = Emulator::start();
    let proxy = common::Proxy::start(emulator.port());
    let state = std::env::temp_dir().join(format!("likes-chaos-{}", uuid::Uuid::new_v4().simple()));
    let opts = Options {
        endpoint: Some(proxy.endpoint()),
        chaos_seed: faults_on.then_some(seed),
        state_dir: Some(state),
        published_events: Some(events.clone()),
        env: vec![("LIKES_REACTION_KINDS", KINDS.join(","))],
        ..Options::default()
    };
    let port = common::free_port();
    let mut stack = Some(Stack::start_on(port, &opts));

    let users: Vec<String> = (0..USERS).map(|i| format!("auth0|chaos{i:03}")).collect();
    let tokens: Vec<String> = users.iter().map(|u| token(u)).collect();
    let posts: Vec<String> = (0..POSTS)
        .map(|i| format!("{}", 1_800_000_000_000_000_000u64 + i as u64))
        .collect();
    let sent = Arc::new(AtomicUsize::new(0));
    let retried = Arc::new(AtomicUsize::new(0));
    let refused = Arc::new(AtomicUsize::new(0));
    let timeline = Arc::new(moderation::Timeline::default());
    // The last acknowledged request of each (user, post, kind): the state it must end in
    // (`None`: unknown, a retry refused after an attempt whose outcome was not seen).
    let mut last: HashMap<(usize, usize, usize), Option<bool>> = HashMap::new();

    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (tokens, posts, sent, retried, refused, timeline) = (
                tokens.clone(),
                posts.clone(),
                sent.clone(),
                retried.clone(),
                refused.clone(),
                timeline.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = SplitMix(seed ^ ((c as u64 + 1) * 0x9e37_79b9));
                let mut acked = Vec::new();
                // What this client's users hold: each user belongs to one client, so one
                // user's requests never overlap and this is the state before each request
                // (absent: not held; `None`: unknown).
                let mut held: HashMap<(usize, usize, usize), Option<bool>> = HashMap::new();
                let mine: Vec<usize> = (0..USERS).filter(|u| u % CLIENTS == c).collect();
                while sent.fetch_add(1, Ordering::SeqCst) < total {
                    let u = mine[rng.below(mine.len() as u64) as usize];
                    let p = zipf_post(&mut rng);
                    let like = rng.below(100) < 60;
                    let k = usize::from(rng.below(4) == 0);
                    let key = format!("c{c}-{}", rng.next_u64());
                    let named = rng.below(20) == 0;
                    let method = if like { "PUT" } else { "DELETE" };
                    let path = match k {
                        0 => format!("/posts/{}/like", posts[p]),
                        _ => format!("/posts/{}/reactions/{}", posts[p], KINDS[k]),
                    };
                    let deadline = Instant::now() + Duration::from_secs(120);
                    let named_header = [("Idempotency-Key", key.as_str())];
                    let headers: &[(&str, &str)] = if named { &named_header } else { &[] };
                    // A moderated user's answers are not checked against `held` from the
                    // suspension until the restore is done: between the first sweep and the
                    // API's refusal their likes are out of sight, and a request sees them so.
                    let moderated = moderation::MODERATED.contains(&u);
                    let began = Instant::now();
                    let mut attempts = 0;
                    loop {
                        attempts += 1;
                        let answer = request(port, method, &path, Some(&tokens[u]), headers, b"");
                        if let (Ok((status @ (200 | 403), body)), true) = (&answer, moderated) {
                            if let Err(e) = timeline.check(*status, began) {
                                panic!("{method} {path} of a moderated user: {e}: {body}");
                            }
                        }
                        if let Ok((200, body)) = &answer {
                            let before = held.insert((u, p, k), Some(like)).unwrap_or(Some(false));
                            if let (Some(before), true) = (before, named || attempts == 1) {
                                assert!(
                                    (moderated && timeline.unsettled(began))
                                        || body["changed"] == Value::Bool(before != like),
                                    "{method} {path} (attempt {attempts}, named {named}): {body}"
                                );
                            }
                            acked.push((u, p, k, Some(like)));
                            break;
                        }
                        if let Ok((403, body)) = &answer {
                            assert!(
                                moderated && body["error"]["code"] == "suspended",
                                "{method} {path}: {body}"
                            );
                            refused.fetch_add(1, Ordering::Relaxed);
                            // Refused at once, nothing changed; refused on a retry, the first
                            // attempt may have landed.
                            let now = match attempts {
                                1 => held.get(&(u, p, k)).copied().unwrap_or(Some(false)),
                                _ => None,
                            };
                            held.insert((u, p, k), now);
                            acked.push((u, p, k, now));
                            break;
                        }
                        assert!(
                            Instant::now() < deadline,
                            "{method} {path} never acknowledged: {answer:?}"
                        );
                        retried.fetch_add(1, Ordering::Relaxed);
                        std::thread::sleep(Duration::from_millis(50));
                    }
                }
                acked
            })
        })
        .collect();

    // The emulator stopped for a while, once; the stack restarted, once.
    let mut faults: BTreeMap<String, u64> = BTreeMap::new();
    // Clients that stop early (a failed assertion) must fail the run, not hang it.
    let run_deadline = Instant::now() + Duration::from_secs(1200);
    let at = |share: usize| loop {
        if sent.load(Ordering::SeqCst) >= total * share / 100 {
            break;
        }
        assert!(
            Instant::now() < run_deadline,
            "the clients never reached {share} % of the requests"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
    if faults_on {
        at(30);
        proxy.stop();
        std::thread::sleep(Duration::from_secs(3));
        proxy.restart();
        *faults
            .entry("emulator stopped and started".into())
            .or_default() += 1;
        at(35);
        timeline.decided(true, false);
        rt.block_on(moderation::decide(&emulator.endpoint, &users, true));
        rt.block_on(moderation::wait_recorded(&client, &users, true));
        timeline.decided(true, true);
        let hidden = rt.block_on(moderation::wait_hidden(&client, &users));
        *faults
            .entry("suspended users' items hidden".into())
            .or_default() += hidden as u64;
        at(60);
        if let Some(s) = stack.take() {
            add_stats(&mut faults, &s.stats());
            drop(s);
        }
        stack = Some(Stack::start_on(port, &opts));
        *faults.entry("stack restarted".into()).or_default() += 1;
        at(75);
        timeline.decided(false, false);
        rt.block_on(moderation::decide(&emulator.endpoint, &users, false));
        rt.block_on(moderation::wait_recorded(&client, &users, false));
        timeline.decided(false, true);
        rt.block_on(moderation::wait_restored(&client, &users));
        timeline.settled();
    }

    let mut requests = 0;
    for client in clients {
        for (u, p, k, like) in client.join().expect("a client") {
            requests += 1;
            last.insert((u, p, k), like);
        }
    }
    let stack = stack.expect("the stack");
    let requests_done = started.elapsed();
    let client_retries = retried.load(Ordering::Relaxed);

    let mut mismatches = settled_mismatches(&rt, &stack, &emulator, &posts);
    // Settled: the three agreeing polls done (the first of them is the settle time's bound).
    let settled = started.elapsed() - requests_done;
    for ((u, p, k), like) in &last {
        let Some(like) = like else { continue };
        let held = match k {
            0 => {
                let path = format!("/posts/{}/like", posts[*p]);
                http(port, "GET", &path, Some(&tokens[*u])).unwrap().1["liked"].clone()
            }
            _ => {
                let path = format!("/posts/{}/reactions", posts[*p]);
                let (_, b) = http(port, "GET", &path, Some(&tokens[*u])).unwrap();
                let mine = b["mine"].as_array().cloned().unwrap_or_default();
                Value::Bool(mine.contains(&Value::from(KINDS[*k])))
            }
        };
        if held != Value::Bool(*like) {
            mismatches.push(format!(
                "{} on post {}: {} held {held} but the last acknowledged request said {like}",
                users[*u], posts[*p], KINDS[*k]
            ));
        }
    }
    add_stats(&mut faults, &stack.stats());
    *faults
        .entry("client retries (503, refused)".into())
        .or_default() += client_retries as u64;
    *faults
        .entry("suspended users' requests refused".into())
        .or_default() += refused.load(Ordering::Relaxed) as u64;
    println!(
        "chaos: {requests} requests in {:.0} s ({:.0}/s), counts settled {:.0} s after the last (faults {}, events {events}); faults and counters {faults:?}; posts checked {} (every bucket), (user, post) states checked {}; mismatches {}",
        requests_done.as_secs_f64(),
        requests as f64 / requests_done.as_secs_f64(),
        settled.as_secs_f64(),
        if faults_on { "on" } else { "off" },
        posts.len(),
        last.len(),
        mismatches.len()
    );
    for m in mismatches.iter().take(20) {
        eprintln!("mismatch: {m}");
    }
    if !mismatches.is_empty() {
        let log = stack.log.lock().unwrap().clone();
        for line in log
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .take(40)
        {
            eprintln!("stack: {line}");
        }
        rt.block_on(diagnose::diagnose(&emulator.endpoint, &mismatches));
    }
    assert_eq!(requests, total, "every request acknowledged once");
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
    // Each kind of fault happened (at the CI size and above; a tiny run may miss one)...
    let kind = |k: &str| faults.get(k).copied().unwrap_or(0);
    if faults_on && total >= 2_000 {
        for k in [
            "injected.duplicate_deliveries",
            "injected.function_errors",
            "injected.write_failures",
            "mapping.bisects",
            "client retries (503, refused)",
            "suspended users' items hidden",
            "suspended users' requests refused",
        ] {
            assert!(
                kind(k) > 0,
                "no {k} were injected: the run proved nothing about them"
            );
        }
    }
    // ...and none of them made the aggregator drift or give records up.
    for k in [
        "aggregator.anomalies",
        "aggregator.marks_ahead",
        "mapping.given_up",
    ] {
        assert_eq!(kind(k), 0, "{k}: {faults:?}");
    }
    assert!(
        kind("aggregator.records") > 0,
        "the aggregator reported no records: {faults:?}"
    );
}
