//! Every `CountAggregatorFunction` event in `events` (the DynamoDB stream batches
//! `sam local invoke -e` runs), played through the real `count-aggregator` binary against a
//! loopback Lambda Runtime API and the emulator, and checked against what
//! `functions/events/expected.json` says: the partial batch response, the resulting count of each
//! post, Counts rows where listed, and the invocation's embedded metrics.
//!
//! Each event is played against empty tables, after the files its entry lists in `after`.
//! Every mismatch is collected and reported at once.
//!
//! `LIKES_AGGREGATOR_BIN=target/release/count-aggregator` runs it against a release build.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use aws_lambda_events::dynamodb::Event;
use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_core::bucket::split_key;
use likes_core::{
    bucket_of, CountsAdmin, CountsLedger, CountsRead, PostBucket, PostId, SeqNo, UserId,
};
use likes_harness::calls::{assert_role_allows, Daemon, SAMPLED};
use likes_harness::events::{assert_no_problems, entries_for, file_of, manifest, read_json};
use likes_harness::Tables;
use serde_dynamo::AttributeValue;
use serde_json::Value;

const FUNCTION: &str = "CountAggregatorFunction";

fn binary() -> PathBuf {
    fake_runtime::binary_under_test(
        "LIKES_AGGREGATOR_BIN",
        env!("CARGO_BIN_EXE_count-aggregator"),
    )
}

/// The manifest's entries for this function, in order.
fn stream_entries(manifest: &Value) -> Vec<Value> {
    entries_for(manifest, FUNCTION)
        .into_iter()
        .cloned()
        .collect()
}

fn after_of(entry: &Value) -> Vec<String> {
    entry["after"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| f.as_str().expect("after: file names").to_owned())
                .collect()
        })
        .unwrap_or_default()
}

fn key_s<'a>(keys: &'a serde_dynamo::Item, name: &str) -> Option<&'a str> {
    match keys.get(name) {
        Some(AttributeValue::S(s)) => Some(s),
        _ => None,
    }
}

/// The files are Lambda's DynamoDB stream events for the KEYS_ONLY Likes stream, and say what
/// the manifest claims: right buckets for their users, increasing sequence numbers, and exactly
/// as many unparsable records as the entry expects to be skipped.
#[test]
fn the_stream_events_are_lambda_keys_only_batches_with_real_buckets() {
    let m = manifest();
    let entries = stream_entries(&m);
    assert!(!entries.is_empty(), "no {FUNCTION} events in the manifest");
    let files: BTreeSet<&str> = entries.iter().map(file_of).collect();
    for entry in &entries {
        let file = file_of(entry);
        for before in after_of(entry) {
            assert!(
                files.contains(before.as_str()),
                "{file}: `after` names {before}, which is no {FUNCTION} event"
            );
        }
        let raw = read_json(file);
        let event: Event = serde_json::from_value(raw.clone())
            .unwrap_or_else(|e| panic!("{file}: not a DynamoDB stream event: {e}"));
        assert!(!event.records.is_empty(), "{file}: no records");
        let mut unparsable = 0;
        let mut last_seq: Option<SeqNo> = None;
        let mut ids = BTreeSet::new();
        for (i, (r, raw_r)) in event
            .records
            .iter()
            .zip(raw["Records"].as_array().unwrap())
            .enumerate()
        {
            let at = format!("{file} record {i}");
            assert_eq!(r.event_source.as_deref(), Some("aws:dynamodb"), "{at}");
            assert!(
                ["INSERT", "REMOVE"].contains(&r.event_name.as_str()),
                "{at}"
            );
            assert_eq!(raw_r["dynamodb"]["StreamViewType"], "KEYS_ONLY", "{at}");
            assert!(
                raw_r["dynamodb"].get("NewImage").is_none()
                    && raw_r["dynamodb"].get("OldImage").is_none(),
                "{at}: KEYS_ONLY has no images"
            );
            let keys: BTreeSet<&str> = r.change.keys.keys().map(String::as_str).collect();
            assert_eq!(keys, BTreeSet::from(["post_bucket", "user_id"]), "{at}");
            assert!(ids.insert(r.event_id.clone()), "{at}: eventID repeated");
            let seq = r.change.sequence_number.as_deref().expect("SequenceNumber");
            assert!(
                seq.len() >= 21 && seq.bytes().all(|b| b.is_ascii_digit()),
                "{at}: sequence number {seq:?}"
            );
            let seq = SeqNo::parse(seq).expect("a sequence number");
            assert!(
                last_seq.as_ref().is_none_or(|l| *l < seq),
                "{at}: sequence numbers must increase"
            );
            last_seq = Some(seq);
            let user = key_s(&r.change.keys, "user_id").expect("user_id: S");
            if user.starts_with("~fence#") {
                // A recount's fence: the job picks the bucket, no user's hash does.
                continue;
            }
            let user = UserId::parse(user).unwrap_or_else(|_| panic!("{at}: user_id {user:?}"));
            match split_key(key_s(&r.change.keys, "post_bucket").expect("post_bucket: S")) {
                Ok((_, bucket)) => assert_eq!(
                    bucket,
                    bucket_of(&user),
                    "{at}: the bucket of {user} is {}",
                    bucket_of(&user)
                ),
                Err(_) => unparsable += 1,
            }
        }
        let skipped = entry["expect"]["metrics"]["SkippedRecords"]
            .as_u64()
            .unwrap_or(0);
        assert_eq!(
            unparsable, skipped,
            "{file}: unparsable records vs SkippedRecords expected"
        );
    }
}

/// Every stream event on disk is in the manifest, as this function's (or as the events
/// function's, the stream's other reader).
#[test]
fn every_stream_event_file_is_in_the_manifest() {
    let m = manifest();
    let listed: BTreeSet<String> = stream_entries(&m)
        .iter()
        .map(|e| file_of(e).to_owned())
        .collect();
    let others: BTreeSet<&str> = entries_for(&m, "LikeEventsFunction")
        .into_iter()
        .map(file_of)
        .collect();
    let on_disk: BTreeSet<String> = std::fs::read_dir(likes_harness::events::dir())
        .expect("events")
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "expected.json")
        .filter(|n| read_json(n)["Records"][0]["eventSource"] == "aws:dynamodb")
        .filter(|n| !others.contains(n.as_str()))
        .collect();
    assert_eq!(
        listed, on_disk,
        "stream events vs {FUNCTION} entries in expected.json"
    );
}

/// Plays one event; its partial batch response.
async fn deliver(rt: &FakeRuntime, f: &Function, file: &str) -> Result<Value, String> {
    let id = rt.push_traced(read_json(file), SAMPLED);
    match rt.outcome(&id, Duration::from_secs(30)).await {
        Some(Outcome::Response(v)) => Ok(v),
        other => Err(format!(
            "{file}: no response: {other:?}\n{}",
            f.lines().join("\n")
        )),
    }
}

/// The embedded-metrics lines the function printed, once there are `n` of them.
async fn emf_lines(f: &Function, n: usize) -> Vec<Value> {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let lines: Vec<Value> = f
            .lines()
            .iter()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .filter(|v| v.get("_aws").is_some())
            .collect();
        if lines.len() >= n || std::time::Instant::now() > deadline {
            return lines;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Plays one manifest entry against fresh tables; what did not come out as expected.
async fn play(entry: &Value, daemon: &Daemon) -> Vec<String> {
    let file = file_of(entry);
    let expect = &entry["expect"];
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let mut env = t.lambda_env(likes_harness::lab::roles::AGGREGATOR);
    env.extend(daemon.env());
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
    let mut problems = Vec::new();
    let mut delivered = 0;
    // A recount's fences: the job holds the post's lease.
    if let Some(lease) = entry.get("lease") {
        let post = PostId::parse(lease["post_id"].as_str().expect("lease.post_id")).expect("an id");
        let job = lease["job"].as_str().expect("lease.job");
        let taken = t.counts().take_lease(&post, job, 60, None).await;
        assert!(matches!(taken, Ok(true)), "{file}: the lease: {taken:?}");
    }
    for before in after_of(entry) {
        match deliver(&rt, &f, &before).await {
            Ok(v) if v["batchItemFailures"] == Value::Array(vec![]) => delivered += 1,
            Ok(v) => return vec![format!("{file}: playing {before} first failed: {v}")],
            Err(why) => return vec![why],
        }
    }
    let response = match deliver(&rt, &f, file).await {
        Ok(v) => v,
        Err(why) => return vec![why],
    };
    delivered += 1;
    if response["batchItemFailures"] != expect["batchItemFailures"] {
        problems.push(format!(
            "batchItemFailures: expected {}, got {}",
            expect["batchItemFailures"], response["batchItemFailures"]
        ));
    }
    let counts = t.counts();
    for (post, want) in expect["counts"].as_object().into_iter().flatten() {
        let id = PostId::parse(post).expect("a post id in counts");
        match counts.post_count(&id).await {
            Ok(got) if Some(got) == want.as_i64() => {}
            Ok(got) => problems.push(format!("count of {post}: expected {want}, got {got}")),
            Err(e) => problems.push(format!("count of {post}: {e}")),
        }
    }
    for row in expect["rows"].as_array().into_iter().flatten() {
        let key = row["post_bucket"].as_str().expect("rows: post_bucket");
        let pb = PostBucket::parse(key).expect("a post_bucket in rows");
        match counts.read_post(&pb.post).await {
            Ok(Some(item)) => {
                let got = &item.buckets[usize::from(pb.bucket)];
                let hwm = got.hwm.as_ref().map(|h| h.raw().to_owned());
                let ended = got.ended.as_ref().map(
                    |e| serde_json::json!({"job": e.job, "count": e.count, "entries": e.entries}),
                );
                if Some(got.count) != row["like_count"].as_i64()
                    || hwm.as_deref() != row["hwm"].as_str()
                    || ended.as_ref().unwrap_or(&Value::Null) != &row["ended"]
                {
                    problems.push(format!(
                        "row {key}: expected {row}, got like_count {} hwm {hwm:?} ended {ended:?}",
                        got.count
                    ));
                }
            }
            Ok(None) => problems.push(format!("row {key}: missing")),
            Err(e) => problems.push(format!("row {key}: {e}")),
        }
    }
    if let Some(metrics) = expect["metrics"].as_object() {
        let lines = emf_lines(&f, delivered).await;
        match lines.get(delivered - 1) {
            Some(line) => {
                for (name, want) in metrics {
                    if line[name] != *want {
                        problems.push(format!(
                            "metric {name}: expected {want}, got {}",
                            line[name]
                        ));
                    }
                }
            }
            None => problems.push(format!(
                "{} metrics lines for {delivered} invocations",
                lines.len()
            )),
        }
    }
    problems
        .into_iter()
        .map(|p| format!("{file}: {p}"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_stream_event_aggregates_as_the_manifest_says() {
    let entries = stream_entries(&manifest());
    let mut problems = Vec::new();
    let daemon = Daemon::start();
    for entry in &entries {
        problems.extend(play(entry, &daemon).await);
    }
    assert_no_problems(&problems, entries.len());
    assert_role_allows(
        FUNCTION,
        &daemon.operations(),
        &[
            "dynamodb:UpdateItem",
            "dynamodb:GetItem",
            "dynamodb:BatchWriteItem",
        ],
    );
    println!("{} {FUNCTION} events aggregated as expected", entries.len());
}
