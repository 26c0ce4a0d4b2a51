//! Every `LikeEventsFunction` event in `events` (the stream batches `sam local invoke -e`
//! runs), played through the real `like-events` binary against a loopback Lambda Runtime API
//! and the emulator — DynamoDB for the tables, EventBridge for the bus, a rule on it delivering
//! every event to an SQS queue the test reads — and checked against `functions/events/expected.json`:
//! the partial batch response, the events that reached the queue by detail-type, their distinct
//! ids, the milestones, the events by kind, and each detail against its JSON Schema. Also: the
//! function's role in
//! `template.yaml` allows every call it made.
//!
//! `LIKES_EVENTS_BIN=target/release/like-events` runs it against a release build.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_aws::dynamo::schema::{create_table, EVENT_STATE};
use likes_aws::eventbridge::bus_to_queue;
use likes_core::bucket::split_key;
use likes_core::reaction::{is_kind, Held};
use likes_core::{bucket_of, BucketWrite, CountsLedger, PostId, Seq, UserId};
use likes_harness::calls::{assert_role_allows, Daemon, SAMPLED};
use likes_harness::events::{assert_no_problems, entries_for, file_of, manifest, read_json};
use likes_harness::Tables;
use serde_json::Value;

const FUNCTION: &str = "LikeEventsFunction";

fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_EVENTS_BIN", env!("CARGO_BIN_EXE_like-events"))
}

fn after_of(entry: &Value) -> Vec<String> {
    entry["after"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|f| f.as_str().map(str::to_owned))
        .collect()
}

/// The files' records: records of likes and reactions in real buckets, sequence numbers
/// growing.
#[test]
fn the_events_are_keys_only_batches_with_real_buckets() {
    let m = manifest();
    let entries = entries_for(&m, FUNCTION);
    assert!(!entries.is_empty(), "no {FUNCTION} events in the manifest");
    for entry in entries {
        let file = file_of(entry);
        let event = read_json(file);
        let records = event["Records"].as_array().expect("Records");
        let mut last: Option<String> = None;
        for (i, r) in records.iter().enumerate() {
            let keys = &r["dynamodb"]["Keys"];
            let held = Held::of(keys["user_id"]["S"].as_str().expect("user_id"));
            let kind = held.kind().expect("a like's or a reaction's key");
            assert!(is_kind(kind), "{file} record {i}: kind {kind:?}");
            let user = UserId::parse(held.user().unwrap_or_default()).expect("a user id");
            let (_, bucket) = split_key(keys["post_bucket"]["S"].as_str().expect("post_bucket"))
                .expect("<post>#<bucket>");
            assert_eq!(bucket, bucket_of(&user), "{file} record {i}: bucket");
            let seq = r["dynamodb"]["SequenceNumber"]
                .as_str()
                .expect("seq")
                .to_owned();
            let later = last
                .as_ref()
                .is_none_or(|l| Seq::parse(l).expect("seq") < Seq::parse(&seq).expect("seq"));
            assert!(later, "{file} record {i}: sequence numbers must grow");
            last = Some(seq);
        }
    }
}

/// Counts every record of `file` as the aggregator would have before the events function
/// reads them: the aggregator ahead (a reaction in its kind's count, not in the like count).
async fn count_ahead(t: &Tables, file: &str) {
    for r in read_json(file)["Records"].as_array().into_iter().flatten() {
        let keys = &r["dynamodb"]["Keys"];
        let (post, bucket) = split_key(keys["post_bucket"]["S"].as_str().unwrap()).unwrap();
        let seq = r["dynamodb"]["SequenceNumber"].as_str().unwrap();
        let delta = if r["eventName"] == "INSERT" { 1 } else { -1 };
        let (delta, kinds) = match Held::of(keys["user_id"]["S"].as_str().unwrap()) {
            Held::Reaction(_, kind) => (0, vec![(kind, delta)]),
            _ => (delta, Vec::new()),
        };
        let write = BucketWrite {
            kinds,
            bucket,
            delta,
            first: Seq::parse(seq).unwrap(),
            last: Seq::parse(seq).unwrap(),
            last_created: 0,
            window: None,
            records: 1,
        };
        let post = PostId::parse(post).unwrap();
        t.counts().apply(&post, &[write]).await.expect("counted");
    }
}

/// Reads the queue until `n` messages came or a few seconds passed; their bodies.
async fn drain(sqs: &aws_sdk_sqs::Client, url: &str, n: usize) -> Vec<Value> {
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut out = Vec::new();
    while out.len() < n && Instant::now() < deadline {
        let got = sqs
            .receive_message()
            .queue_url(url)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        for m in got.messages() {
            out.push(serde_json::from_str(m.body().unwrap_or("")).expect("an event"));
            sqs.delete_message()
                .queue_url(url)
                .receipt_handle(m.receipt_handle().unwrap_or(""))
                .send()
                .await
                .expect("delete");
        }
        if got.messages().is_empty() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    out
}

async fn play(entry: &Value, daemon: &Daemon) -> Vec<String> {
    let file = file_of(entry);
    let expect = &entry["expect"];
    let t = Tables::new().await;
    let endpoint = likes_harness::endpoint();
    let conf = likes_aws::sdk::emulator(&endpoint).await;
    let suffix = uuid_suffix(&t.likes_table);
    let (state, bus, queue) = (
        format!("event-state-{suffix}"),
        format!("likes-{suffix}"),
        format!("likes-events-{suffix}"),
    );
    create_table(&t.client, &EVENT_STATE, &state)
        .await
        .expect("the state table");
    let sqs = aws_sdk_sqs::Client::new(&conf);
    let url = bus_to_queue(&aws_sdk_eventbridge::Client::new(&conf), &sqs, &bus, &queue)
        .await
        .expect("the bus and its queue");
    let rt = FakeRuntime::start().await.expect("runtime API");
    let mut env = t.lambda_env(likes_harness::lab::roles::EVENTS);
    env.extend(daemon.env());
    env.extend([
        ("AWS_ENDPOINT_URL_EVENTBRIDGE", endpoint),
        ("EVENT_BUS_NAME", bus),
        ("EVENT_STATE_TABLE_NAME", state),
        (
            "LIKES_PUBLISHED_EVENTS",
            entry["published"]
                .as_str()
                .unwrap_or("notifications")
                .to_owned(),
        ),
    ]);
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
    let mut problems = Vec::new();
    for delivered in after_of(entry).iter().map(String::as_str).chain([file]) {
        count_ahead(&t, delivered).await;
        let id = rt.push_traced(read_json(delivered), SAMPLED);
        match rt.outcome(&id, Duration::from_secs(30)).await {
            Some(Outcome::Response(v)) if v["batchItemFailures"] == expect["batchItemFailures"] => {
            }
            other => problems.push(format!(
                "{delivered}: {other:?}, expected {}\n{}",
                expect["batchItemFailures"],
                f.lines().join("\n")
            )),
        }
    }
    let want: BTreeMap<String, u64> = expect["events"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    let total = want.values().sum::<u64>() as usize;
    let events = drain(&sqs, &url, total).await;
    let mut got: BTreeMap<String, u64> = BTreeMap::new();
    let mut ids = BTreeSet::new();
    let mut milestones = BTreeSet::new();
    let mut kinds: BTreeMap<String, u64> = BTreeMap::new();
    for e in &events {
        let t = e["detail-type"].as_str().unwrap_or("?").to_owned();
        if e["source"] != "likes" {
            problems.push(format!("source {}", e["source"]));
        }
        if let Err(why) = common::check(&t, &e["detail"]) {
            problems.push(why);
        }
        ids.insert(e["detail"]["event_id"].as_str().unwrap_or("").to_owned());
        if let Some(m) = e["detail"]["milestone"].as_u64() {
            milestones.insert(m);
        }
        *got.entry(t).or_default() += 1;
        let kind = e["detail"]["kind"].as_str().unwrap_or("<none>").to_owned();
        *kinds.entry(kind).or_default() += 1;
    }
    if got != want {
        problems.push(format!("events: expected {want:?}, got {got:?}"));
    }
    let want_kinds: BTreeMap<String, u64> = expect["kinds"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| (k.clone(), v.as_u64().unwrap_or(0)))
        .collect();
    if kinds != want_kinds {
        problems.push(format!("kinds: expected {want_kinds:?}, got {kinds:?}"));
    }
    if Some(ids.len() as u64) != expect["distinct_ids"].as_u64() {
        problems.push(format!(
            "{} distinct ids, expected {}",
            ids.len(),
            expect["distinct_ids"]
        ));
    }
    let want_m: BTreeSet<u64> = expect["milestones"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_u64)
        .collect();
    if milestones != want_m {
        problems.push(format!(
            "milestones: expected {want_m:?}, got {milestones:?}"
        ));
    }
    problems
        .into_iter()
        .map(|p| format!("{file}: {p}"))
        .collect()
}

fn uuid_suffix(table: &str) -> String {
    table.trim_start_matches("likes-").to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_events_sample_publishes_as_the_manifest_says() {
    let m = manifest();
    let entries = entries_for(&m, FUNCTION);
    let daemon = Daemon::start();
    let mut problems = Vec::new();
    for entry in &entries {
        problems.extend(play(entry, &daemon).await);
    }
    assert_no_problems(&problems, entries.len());
    assert_role_allows(
        FUNCTION,
        &daemon.operations(),
        &[
            "dynamodb:BatchGetItem",
            "dynamodb:PutItem",
            "dynamodb:UpdateItem",
            "dynamodb:GetItem",
            "eventbridge:PutEvents",
        ],
    );
    println!("{} {FUNCTION} events published as expected", entries.len());
}
