//! The stream path on many shards — which the emulator's single shard cannot show — with the
//! real local mapping, the real aggregator and the Counts table on the emulator: an in-memory
//! stream (`MemoryStream`, DynamoDB Streams' rules) with a split and a rollover, a key whose
//! records cross the rollover, shards processed concurrently (one batch at a time each, parents
//! before children), a redelivered batch that spans the parent's end, and sequence numbers from
//! 21 to 40 digits.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use count_aggregator::Aggregator;
use likes_aws::dynamo::schema::{create_table, COUNTS};
use likes_aws::DynamoCounts;
use likes_core::{CountsRead, PostBucket, PostId, UserId};
use likes_local::esm::config::MappingConfig;
use likes_local::esm::function::{AggregatorFunction, Function, FunctionError};
use likes_local::esm::sinks::{Checkpoints, MemoryDestination};
use likes_local::esm::source::{MemoryStream, Record};
use likes_local::esm::{Mapping, Stats};
use serde_json::json;

/// The aggregator, except that the invocation holding `lose` has its answer lost once: Lambda
/// sees a function error after the work was done, and delivers the records again.
struct LoseOnce<F> {
    inner: F,
    lose: String,
    lost: AtomicBool,
}

impl<F: Function> Function for LoseOnce<F> {
    async fn invoke(&self, payload: String, timeout: Duration) -> Result<String, FunctionError> {
        let answer = self.inner.invoke(payload.clone(), timeout).await;
        if payload.contains(&self.lose) && !self.lost.swap(true, Ordering::SeqCst) {
            return Err(FunctionError::Failed("the answer was lost".into()));
        }
        answer
    }
}

fn record(name: &str, post: &PostId, user: &UserId, seq: &str) -> Record {
    let mut keys = serde_json::Map::new();
    let pb = PostBucket::for_like(post, user).to_string();
    keys.insert("post_bucket".into(), json!({ "S": pb }));
    keys.insert("user_id".into(), json!({ "S": user.as_str() }));
    Record {
        event_name: name.into(),
        keys,
        seq: seq.into(),
        created_secs: chrono::Utc::now().timestamp() as f64,
        size_bytes: 100,
        event_id: seq.into(),
    }
}

/// Likes and unlikes of `posts` by `users`, each a real state change from `liked` (the state
/// the history before left), as (post, user, like).
fn history(
    posts: &[PostId],
    users: &[UserId],
    n: usize,
    salt: usize,
    liked: &mut HashMap<(usize, usize), bool>,
) -> Vec<(PostId, UserId, bool)> {
    (0..n)
        .map(|i| {
            let (p, u) = (
                (i * 7 + salt) % posts.len(),
                (i * 13 + salt * 3) % users.len(),
            );
            let now = !liked.get(&(p, u)).copied().unwrap_or(false);
            liked.insert((p, u), now);
            (posts[p].clone(), users[u].clone(), now)
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counts_stay_exact_across_splits_rollovers_and_concurrent_shards() {
    let endpoint = std::env::var("LIKES_TEST_DYNAMODB_ENDPOINT")
        .expect("run with `make test`, which starts the emulator");
    let client = likes_aws::sdk::emulator_dynamo(&endpoint).await;
    let table = format!("counts-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &COUNTS, &table)
        .await
        .expect("Counts table");
    let counts = DynamoCounts::new(client, &table);

    let posts: Vec<PostId> = (0..4)
        .map(|i| PostId::parse(&format!("post-{i}")).unwrap())
        .collect();
    let users: Vec<UserId> = (0..24).map(|_| UserId::new_random()).collect();
    let stream = MemoryStream::default();
    // Shard r1 splits into c1a and c1b; r2 rolls over into c2. A key lives in one shard at a
    // time: keys go by bucket, and after the split the parent's keys move to its children.
    for (id, parent) in [("r1", None), ("r2", None)] {
        stream.open(id, parent);
    }
    let shard_of = |pb: &PostBucket, phase: usize| match (pb.bucket % 2, phase) {
        (0, 0) => "r1",
        (0, _) if pb.bucket.is_multiple_of(4) => "c1a",
        (0, _) => "c1b",
        (_, 0) => "r2",
        (_, _) => "c2",
    };
    // Sequence numbers grow with time across the stream: 21 digits, then 26 and 40.
    let spaces = [10u128.pow(20), 10u128.pow(25)];
    let mut expected: HashMap<PostId, i64> = HashMap::new();
    let mut crossing = None;
    let mut parent_end = String::new();
    // One history across both phases: a like made before the split is unliked after it, never
    // liked twice.
    let mut liked = HashMap::new();
    for (phase, base) in spaces.iter().enumerate() {
        if phase == 1 {
            stream.close("r1");
            stream.close("r2");
            stream.open("c1a", Some("r1"));
            stream.open("c1b", Some("r1"));
            stream.open("c2", Some("r2"));
        }
        for (i, (post, user, like)) in history(&posts, &users, 300, phase, &mut liked)
            .into_iter()
            .enumerate()
        {
            let pb = PostBucket::for_like(&post, &user);
            let shard = shard_of(&pb, phase);
            let seq = if shard == "c2" {
                format!("9{:039}", i)
            } else {
                (base + i as u128 * 3).to_string()
            };
            if phase == 0 && shard == "r1" {
                parent_end = seq.clone();
            }
            if phase == 1 && crossing.is_none() && shard.starts_with("c1") {
                crossing = Some(pb.clone());
            }
            *expected.entry(post.clone()).or_default() += if like { 1 } else { -1 };
            stream.append(
                shard,
                record(if like { "INSERT" } else { "REMOVE" }, &post, &user, &seq),
            );
        }
    }
    for id in ["c1a", "c1b", "c2"] {
        stream.close(id);
    }
    assert!(crossing.is_some(), "a key's records cross the split");

    let function = LoseOnce {
        inner: AggregatorFunction::new(Aggregator::new(counts.clone())),
        lose: parent_end.clone(),
        lost: AtomicBool::new(false),
    };
    let mut config = MappingConfig::from_template().expect("template");
    config.batch_size = 50;
    config.backoff = Duration::from_millis(5);
    let (stats, dest, cps) = (
        Stats::default(),
        MemoryDestination::default(),
        Checkpoints::load(None),
    );
    let mapping = Mapping {
        source: &stream,
        function: &function,
        destination: &dest,
        config,
        checkpoints: &cps,
        stats: &stats,
    };
    mapping.drain().await;

    for post in &posts {
        let got = counts.post_count(post).await.expect("count");
        assert_eq!(
            got, expected[post],
            "{post}: the count is the likes that exist"
        );
    }
    let log = stats.log.lock().unwrap().clone();
    let ended = |s: &str| {
        log.iter()
            .filter(|i| i.shard == s)
            .map(|i| i.ended)
            .max()
            .unwrap()
    };
    let started = |s: &str| {
        log.iter()
            .filter(|i| i.shard == s)
            .map(|i| i.started)
            .min()
            .unwrap()
    };
    assert!(started("c1a") >= ended("r1") && started("c1b") >= ended("r1"));
    assert!(started("c2") >= ended("r2"));
    let overlapping = log.iter().any(|a| {
        log.iter()
            .any(|b| a.shard != b.shard && a.started < b.ended && b.started < a.ended)
    });
    assert!(overlapping, "shards ran concurrently");
    let redelivered = log
        .iter()
        .filter(|i| i.shard == "r1" && i.last >= parent_end)
        .count();
    assert!(
        function.lost.load(Ordering::SeqCst) && redelivered >= 2,
        "the parent's end was redelivered"
    );
    assert!(dest.0.lock().unwrap().is_empty());
    println!(
        "{} invocations over 5 shards, {} records; a redelivery spanning r1's end; counts exact",
        log.len(),
        log.iter().map(|i| i.records).sum::<usize>()
    );
}
