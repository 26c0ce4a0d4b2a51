//! The local mapping's rules, each against a scripted function on an in-memory stream (paused
//! clock: exact and fast).

use std::sync::Mutex;
use std::time::Duration;

use serde_json::{json, Value};

use super::config::MappingConfig;
use super::function::{Function, FunctionError};
use super::sinks::{Checkpoints, MemoryDestination};
use super::source::{MemoryStream, Record};
use super::{Mapping, Stats};

type Script = Box<dyn Fn(usize, &[String]) -> Result<String, FunctionError>>;

/// A function whose answer to the n-th invocation of a batch (its sequence numbers) is scripted.
struct Scripted {
    script: Script,
    delay: Duration,
    seen: Mutex<Vec<Vec<String>>>,
}

impl Scripted {
    fn new(delay_ms: u64, script: Script) -> Self {
        Self {
            script,
            delay: Duration::from_millis(delay_ms),
            seen: Mutex::default(),
        }
    }

    fn ok() -> Result<String, FunctionError> {
        Ok(r#"{"batchItemFailures":[]}"#.into())
    }
}

impl Function for Scripted {
    async fn invoke(&self, payload: String, _timeout: Duration) -> Result<String, FunctionError> {
        let v: Value = serde_json::from_str(&payload).expect("a batch");
        let seqs: Vec<String> = v["Records"]
            .as_array()
            .expect("records")
            .iter()
            .map(|r| r["dynamodb"]["SequenceNumber"].as_str().unwrap().to_owned())
            .collect();
        let n = {
            let mut seen = self.seen.lock().unwrap();
            seen.push(seqs.clone());
            seen.len() - 1
        };
        tokio::time::sleep(self.delay).await;
        (self.script)(n, &seqs)
    }
}

fn record(seq: u128, name: &str, created: f64) -> Record {
    let mut keys = serde_json::Map::new();
    keys.insert("post_bucket".into(), json!({"S": "p#1"}));
    keys.insert("user_id".into(), json!({"S": format!("u{seq}")}));
    Record {
        event_name: name.into(),
        keys,
        seq: (100_000_000_000_000_000_000u128 + seq).to_string(),
        created_secs: created,
        size_bytes: 10,
        event_id: format!("e{seq}"),
    }
}

fn now() -> f64 {
    chrono::Utc::now().timestamp() as f64
}

fn config(batch_size: usize, max_retries: u32) -> MappingConfig {
    let mut c = MappingConfig::from_template().expect("template");
    c.batch_size = batch_size;
    c.max_retries = max_retries;
    c.backoff = Duration::from_millis(1);
    c.max_backoff = Duration::from_millis(4);
    c
}

async fn drain(
    stream: &MemoryStream,
    f: &Scripted,
    c: MappingConfig,
) -> (Stats, MemoryDestination) {
    let (stats, dest, cps) = (
        Stats::default(),
        MemoryDestination::default(),
        Checkpoints::load(None),
    );
    let m = Mapping {
        source: stream,
        function: f,
        destination: &dest,
        config: c,
        checkpoints: &cps,
        stats: &stats,
    };
    m.drain().await;
    (stats, dest)
}

fn one_shard(n: u128) -> MemoryStream {
    let s = MemoryStream::default();
    s.open("s1", None);
    for i in 0..n {
        s.append("s1", record(i, "INSERT", now()));
    }
    s.close("s1");
    s
}

#[tokio::test(start_paused = true)]
async fn children_wait_for_parents_and_shards_run_concurrently_one_batch_each() {
    let s = MemoryStream::default();
    s.open("a", None);
    s.open("b", None);
    for i in 0..6 {
        s.append("a", record(i, "INSERT", now()));
        s.append("b", record(100 + i, "INSERT", now()));
    }
    s.close("a");
    s.open("c", Some("a"));
    for i in 6..9 {
        s.append("c", record(i, "INSERT", now()));
    }
    s.close("c");
    s.close("b");
    let f = Scripted::new(50, Box::new(|_, _| Scripted::ok()));
    let (stats, _) = drain(&s, &f, config(2, 3)).await;
    let log = stats.log.lock().unwrap().clone();
    let of = |shard: &str| {
        log.iter()
            .filter(|i| i.shard == shard)
            .cloned()
            .collect::<Vec<_>>()
    };
    let (a, b, c) = (of("a"), of("b"), of("c"));
    assert_eq!((a.len(), b.len(), c.len()), (3, 3, 2));
    let a_done = a.iter().map(|i| i.ended).max().unwrap();
    assert!(
        c.iter().all(|i| i.started >= a_done),
        "a child ran before its parent ended"
    );
    assert!(
        a.iter()
            .any(|x| b.iter().any(|y| x.started < y.ended && y.started < x.ended)),
        "shards a and b never ran at the same time"
    );
    for shard in [&a, &b, &c] {
        for w in shard.windows(2) {
            assert!(
                w[1].started >= w[0].ended,
                "two batches of one shard at once"
            );
        }
    }
}

#[tokio::test(start_paused = true)]
async fn a_bad_identifier_fails_the_whole_batch_and_a_valid_one_retries_from_it() {
    let s = one_shard(4);
    let f = Scripted::new(
        1,
        Box::new(|n, seqs| match n {
            0 => Ok(r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#.into()),
            1 => Ok(format!(
                r#"{{"batchItemFailures":[{{"itemIdentifier":"{}"}}]}}"#,
                seqs[2]
            )),
            _ => Scripted::ok(),
        }),
    );
    let (stats, dest) = drain(&s, &f, config(10, 5)).await;
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen[0], seen[1], "the whole batch again");
    assert_eq!(seen[2], seen[1][2..].to_vec(), "from the reported record");
    assert_eq!(seen.len(), 3);
    assert_eq!(stats.snapshot()["retries"], 2);
    assert!(dest.0.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_function_error_bisects_the_batch() {
    let s = one_shard(8);
    // Fails any batch of more than 2 records: only bisecting gets anything through.
    let f = Scripted::new(
        1,
        Box::new(|_, seqs| {
            if seqs.len() > 2 {
                Err(FunctionError::Panicked)
            } else {
                Scripted::ok()
            }
        }),
    );
    let (stats, dest) = drain(&s, &f, config(8, 10)).await;
    let seen = f.seen.lock().unwrap().clone();
    let sizes: Vec<usize> = seen.iter().map(Vec::len).collect();
    assert_eq!(&sizes[..3], &[8, 4, 2], "halved on each function error");
    let delivered: usize = seen.iter().filter(|b| b.len() <= 2).map(Vec::len).sum();
    assert_eq!(
        delivered, 8,
        "every record got through once the batches were small"
    );
    assert!(stats.snapshot()["bisects"] >= 2);
    assert!(dest.0.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_batch_that_keeps_failing_is_given_up_to_the_destination() {
    let s = one_shard(5);
    let f = Scripted::new(
        1,
        Box::new(|_, seqs| {
            if seqs[0].ends_with('0') {
                Ok(r#"{"batchItemFailures":[{"itemIdentifier":"nope"}]}"#.into())
            } else {
                Scripted::ok()
            }
        }),
    );
    let (_, dest) = drain(&s, &f, config(3, 2)).await;
    let seen = f.seen.lock().unwrap().clone();
    assert_eq!(seen.len(), 3 + 1, "one try, 2 retries, then the next batch");
    let failures = dest.0.lock().unwrap().clone();
    assert_eq!(failures.len(), 1);
    let info = &failures[0]["DDBStreamBatchInfo"];
    assert_eq!(info["shardId"], "s1");
    assert_eq!(info["startSequenceNumber"], seen[0][0].as_str());
    assert_eq!(info["endSequenceNumber"], seen[0][2].as_str());
    assert_eq!(info["batchSize"], 3);
    assert_eq!(
        failures[0]["requestContext"]["condition"],
        "RetryAttemptsExhausted"
    );
    let arn = failures[0]["requestContext"]["functionArn"]
        .as_str()
        .unwrap_or("");
    assert!(arn.ends_with(":function:CountAggregatorFunction"), "{arn}");
    assert_eq!(
        seen[3][0],
        record(3, "", 0.0).seq,
        "then the shard moved on"
    );
}

#[tokio::test(start_paused = true)]
async fn records_past_the_maximum_age_are_given_up_without_invoking() {
    let s = MemoryStream::default();
    s.open("s1", None);
    s.append("s1", record(0, "INSERT", now() - 90_000.0));
    s.append("s1", record(1, "REMOVE", now()));
    s.close("s1");
    let f = Scripted::new(1, Box::new(|_, _| Scripted::ok()));
    let (_, dest) = drain(&s, &f, config(10, 3)).await;
    let failures = dest.0.lock().unwrap().clone();
    assert_eq!(failures.len(), 1);
    assert_eq!(
        failures[0]["requestContext"]["condition"],
        "RecordAgeExceeded"
    );
    assert_eq!(
        f.seen.lock().unwrap().clone(),
        vec![vec![record(1, "", 0.0).seq]]
    );
}

#[tokio::test(start_paused = true)]
async fn the_filter_drops_other_events_and_a_restart_resumes_from_the_checkpoint() {
    let s = MemoryStream::default();
    s.open("s1", None);
    s.append("s1", record(0, "INSERT", now()));
    s.append("s1", record(1, "MODIFY", now()));
    s.append("s1", record(2, "REMOVE", now()));
    let file = std::env::temp_dir().join(format!("likes-cp-{}.json", std::process::id()));
    let _ = std::fs::remove_file(&file);
    let f = Scripted::new(1, Box::new(|_, _| Scripted::ok()));
    let (s, f) = (&s, &f);
    let run = |cps: Checkpoints| async move {
        let (stats, dest) = (Stats::default(), MemoryDestination::default());
        let m = Mapping {
            source: s,
            function: f,
            destination: &dest,
            config: config(10, 3),
            checkpoints: &cps,
            stats: &stats,
        };
        // Runs until quiet: the shard is open, so stop after a while.
        m.run(tokio::time::sleep(Duration::from_secs(2))).await;
    };
    run(Checkpoints::load(Some(file.clone()))).await;
    s.append("s1", record(3, "INSERT", now()));
    run(Checkpoints::load(Some(file.clone()))).await;
    let seen = f.seen.lock().unwrap().clone();
    let r = |i| record(i, "", 0.0).seq;
    assert_eq!(
        seen,
        vec![vec![r(0), r(2)], vec![r(3)]],
        "no MODIFY, nothing twice"
    );
    let _ = std::fs::remove_file(&file);
}

use likes_core::{
    ApplyOutcome, BucketWrite, FenceRecord, PostBucket, PostCounts, PostId, StoreError, WindowEntry,
};

/// A Counts store that panics, or takes a minute: the function's failures, as Lambda sees them.
struct Broken {
    panics: bool,
}

impl likes_core::CountsLedger for Broken {
    async fn apply(&self, _: &PostId, _: &[BucketWrite<'_>]) -> Result<ApplyOutcome, StoreError> {
        if self.panics {
            panic!("a bug in the handler");
        }
        tokio::time::sleep(Duration::from_secs(60)).await;
        Ok(ApplyOutcome::AlreadyApplied)
    }
    async fn read_post(&self, _: &PostId) -> Result<Option<PostCounts>, StoreError> {
        Ok(None)
    }
    async fn fence(&self, _: &PostId, _: &FenceRecord<'_>) -> Result<ApplyOutcome, StoreError> {
        Ok(ApplyOutcome::AlreadyApplied)
    }
    async fn record_window(&self, _: &PostBucket, _: &[WindowEntry<'_>]) -> Result<(), StoreError> {
        Ok(())
    }
    async fn close_window(&self, _: &PostId, _: u8, _: &str) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn note_unapplied(&self, _: &PostId, _: &str) -> Result<(), StoreError> {
        Ok(())
    }
}

#[tokio::test(start_paused = true)]
async fn a_panic_or_a_timeout_is_a_function_error_not_the_end_of_the_stack() {
    use super::function::AggregatorFunction;
    let payload = likes_sim::stream::batch(vec![likes_sim::stream::StreamRecord::likes(
        "INSERT",
        "p#1",
        "u",
        "100000000000000000001",
    )
    .to_json()])
    .to_string();
    let panics =
        AggregatorFunction::new(count_aggregator::Aggregator::new(Broken { panics: true }));
    assert_eq!(
        panics
            .invoke(payload.clone(), Duration::from_secs(30))
            .await,
        Err(FunctionError::Panicked)
    );
    let slow = AggregatorFunction::new(count_aggregator::Aggregator::new(Broken { panics: false }));
    let started = tokio::time::Instant::now();
    assert_eq!(
        slow.invoke(payload, Duration::from_secs(30)).await,
        Err(FunctionError::TimedOut)
    );
    assert_eq!(
        started.elapsed(),
        Duration::from_secs(30),
        "stopped at the function's timeout"
    );
}

#[tokio::test]
async fn every_page_of_the_shard_list_is_read_before_any_shard() {
    use super::source::{all_pages, Shard, SourceError};
    // 250 shards in pages of 100, each child listed on a later page than its parent.
    let shards: Vec<Shard> = (0..250)
        .map(|i| Shard {
            id: format!("s{i:03}"),
            parent: (i >= 100).then(|| format!("s{:03}", i - 100)),
        })
        .collect();
    let pages = std::cell::Cell::new(0);
    let all = all_pages(|start: Option<String>| {
        pages.set(pages.get() + 1);
        let from = start.map_or(0, |s| s[1..].parse::<usize>().unwrap() + 1);
        let page: Vec<Shard> = shards.iter().skip(from).take(100).cloned().collect();
        let next = (from + 100 < shards.len()).then(|| page.last().unwrap().id.clone());
        async move { Ok::<_, SourceError>((page, next)) }
    })
    .await
    .unwrap();
    assert_eq!(pages.get(), 3);
    assert_eq!(all, shards);
}
