//! The end-to-end chaos run: many users like and unlike a Zipf-skewed choice of posts (some
//! hot) concurrently through HTTP on the local stack, while the local mapping delivers batches
//! twice, fails the function after it ran (bisect, retry) and fails Counts writes; the emulator
//! is stopped and started once (behind a loopback proxy that refuses and cuts its connections,
//! so that its in-memory data survives); the stack itself is restarted once mid-run (its mapping
//! resumes from its checkpoint file). When quiet, every post's count must equal the like items
//! in the table, and every user's like state the last request of theirs that was acknowledged.
//!
//! Clients retry a request until it is acknowledged (a 503 or a refused connection is retried);
//! one in twenty is named with an `Idempotency-Key`, retried with the same key.
//!
//! Size: `LIKES_CHAOS_REQUESTS` (default 2,400, the CI size; `make chaos` runs 20,000).

mod common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::{AttributeValue, Select};
use common::{http, request, token, Emulator, Options, Stack};
use likes_sim::rng::SplitMix;
use serde_json::Value;

const USERS: usize = 48;
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

/// Like items of `post` in the table: a consistent `Select=COUNT` over its 16 buckets,
/// control items (`~…` sort keys) excluded.
async fn table_count(client: &aws_sdk_dynamodb::Client, table: &str, post: &str) -> i64 {
    let mut n = 0;
    for b in 0..16 {
        let mut start = None;
        loop {
            let out = client
                .query()
                .table_name(table)
                .key_condition_expression("post_bucket = :pb AND user_id < :tilde")
                .expression_attribute_values(":pb", AttributeValue::S(format!("{post}#{b}")))
                .expression_attribute_values(":tilde", AttributeValue::S("~".into()))
                .select(Select::Count)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .expect("count query");
            n += i64::from(out.count);
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
    }
    n
}

fn add_stats(into: &mut BTreeMap<String, u64>, stats: &Value) {
    for section in ["mapping", "injected"] {
        for (k, v) in stats[section].as_object().into_iter().flatten() {
            *into.entry(format!("{section}.{k}")).or_default() += v.as_u64().unwrap_or(0);
        }
    }
}

/// For a post whose count is off: its stream records and its Counts item.
async fn diagnose(endpoint: &str, mismatches: &[String]) {
    let conf = likes_aws::sdk::emulator(endpoint).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&conf);
    let streams = aws_sdk_dynamodbstreams::Client::new(&conf);
    let arn = dynamo
        .describe_table()
        .table_name("likes")
        .send()
        .await
        .ok()
        .and_then(|t| t.table)
        .and_then(|t| t.latest_stream_arn)
        .unwrap_or_default();
    let desc = streams
        .describe_stream()
        .stream_arn(&arn)
        .send()
        .await
        .ok()
        .and_then(|d| d.stream_description);
    for m in mismatches.iter().filter(|m| m.starts_with("post ")).take(3) {
        let post = m
            .split_whitespace()
            .nth(1)
            .unwrap_or("")
            .trim_end_matches(':')
            .to_owned();
        let item = dynamo
            .get_item()
            .table_name("counts")
            .key("post_id", AttributeValue::S(post.clone()))
            .consistent_read(true)
            .send()
            .await
            .ok()
            .and_then(|o| o.item);
        eprintln!("counts item of {post}: {item:?}");
        for shard in desc.iter().flat_map(|d| d.shards()) {
            let Some(id) = shard.shard_id() else { continue };
            let it = streams
                .get_shard_iterator()
                .stream_arn(&arn)
                .shard_id(id)
                .shard_iterator_type(aws_sdk_dynamodbstreams::types::ShardIteratorType::TrimHorizon)
                .send()
                .await
                .ok()
                .and_then(|o| o.shard_iterator);
            let mut it = it;
            while let Some(i) = it.take() {
                let Ok(out) = streams
                    .get_records()
                    .shard_iterator(i)
                    .limit(1000)
                    .send()
                    .await
                else {
                    break;
                };
                for r in out.records() {
                    let d = r.dynamodb.as_ref();
                    let keys = d.and_then(|d| d.keys.as_ref());
                    let pb = keys
                        .and_then(|k| k.get("post_bucket"))
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default();
                    if pb.starts_with(&format!("{post}#")) {
                        let user = keys
                            .and_then(|k| k.get("user_id"))
                            .and_then(|v| v.as_s().ok())
                            .cloned()
                            .unwrap_or_default();
                        eprintln!(
                            "  {id} {:?} {pb} {user} {:?}",
                            r.event_name,
                            d.and_then(|d| d.sequence_number.clone())
                        );
                    }
                }
                if out.records().is_empty() {
                    break;
                }
                it = out.next_shard_iterator;
            }
        }
    }
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
    let started = Instant::now();
    let emulator = Emulator::start();
    let proxy = common::Proxy::start(emulator.port());
    let state = std::env::temp_dir().join(format!("likes-chaos-{}", uuid::Uuid::new_v4().simple()));
    let opts = Options {
        endpoint: Some(proxy.endpoint()),
        chaos_seed: Some(seed),
        state_dir: Some(state),
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
    // The last acknowledged request of each (user, post): the like state it must end in.
    let mut last: HashMap<(usize, usize), bool> = HashMap::new();

    let clients: Vec<_> = (0..CLIENTS)
        .map(|c| {
            let (tokens, posts, sent, retried) =
                (tokens.clone(), posts.clone(), sent.clone(), retried.clone());
            std::thread::spawn(move || {
                let mut rng = SplitMix(seed ^ ((c as u64 + 1) * 0x9e37_79b9));
                let mut acked = Vec::new();
                // Each user belongs to one client, so one user's requests never overlap.
                let mine: Vec<usize> = (0..USERS).filter(|u| u % CLIENTS == c).collect();
                while sent.fetch_add(1, Ordering::SeqCst) < total {
                    let u = mine[rng.below(mine.len() as u64) as usize];
                    let p = zipf_post(&mut rng);
                    let like = rng.below(100) < 60;
                    let key = format!("c{c}-{}", rng.next_u64());
                    let named = rng.below(20) == 0;
                    let method = if like { "PUT" } else { "DELETE" };
                    let path = format!("/posts/{}/like", posts[p]);
                    let deadline = Instant::now() + Duration::from_secs(120);
                    let named_header = [("Idempotency-Key", key.as_str())];
                    let headers: &[(&str, &str)] = if named { &named_header } else { &[] };
                    loop {
                        let answer = request(port, method, &path, Some(&tokens[u]), headers, b"");
                        if let Ok((200, _)) = answer {
                            acked.push((u, p, like));
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
    let at = |share: usize| loop {
        if sent.load(Ordering::SeqCst) >= total * share / 100 {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    at(30);
    proxy.stop();
    std::thread::sleep(Duration::from_secs(3));
    proxy.restart();
    *faults
        .entry("emulator stopped and started".into())
        .or_default() += 1;
    at(60);
    if let Some(s) = stack.take() {
        add_stats(&mut faults, &s.stats());
        drop(s);
    }
    stack = Some(Stack::start_on(port, &opts));
    *faults.entry("stack restarted".into()).or_default() += 1;

    for client in clients {
        for (u, p, like) in client.join().expect("a client") {
            last.insert((u, p), like);
        }
    }
    let stack = stack.expect("the stack");
    let requests = sent.load(Ordering::SeqCst).min(total);
    let client_retries = retried.load(Ordering::Relaxed);

    // Quiet: wait (with a deadline) for the counts to catch up with the table.
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
    let reader = &tokens[0];
    let quiet_deadline = Instant::now() + Duration::from_secs(120);
    let mut mismatches;
    loop {
        mismatches = Vec::new();
        for post in &posts {
            let want = rt.block_on(table_count(&client, "likes", post));
            let (_, b) = http(
                port,
                "GET",
                &format!("/posts/{post}/likes/count"),
                Some(reader),
            )
            .unwrap();
            if b["like_count"].as_i64() != Some(want) {
                mismatches.push(format!(
                    "post {post}: count {} but {want} like items",
                    b["like_count"]
                ));
            }
        }
        if mismatches.is_empty() || Instant::now() > quiet_deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    for ((u, p), like) in &last {
        let (_, b) = http(
            port,
            "GET",
            &format!("/posts/{}/like", posts[*p]),
            Some(&tokens[*u]),
        )
        .unwrap();
        if b["liked"] != Value::Bool(*like) {
            mismatches.push(format!(
                "{} on post {}: liked {} but the last acknowledged request said {like}",
                users[*u], posts[*p], b["liked"]
            ));
        }
    }
    add_stats(&mut faults, &stack.stats());
    *faults
        .entry("client retries (503, refused)".into())
        .or_default() += client_retries as u64;
    let injected: u64 = faults.values().sum();
    println!(
        "chaos: {requests} requests in {:.0} s; faults {injected} ({faults:?}); posts checked {}, (user, post) states checked {}; mismatches {}",
        started.elapsed().as_secs_f64(),
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
        rt.block_on(diagnose(&emulator.endpoint, &mismatches));
    }
    assert!(requests >= total);
    assert!(
        injected >= 200 || total < 2_000,
        "too few faults ({injected}) to mean anything"
    );
    assert!(mismatches.is_empty(), "{} mismatches", mismatches.len());
}
