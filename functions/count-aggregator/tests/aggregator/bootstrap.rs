//! The real `count-aggregator` binary against a loopback Lambda Runtime API and the emulator:
//! a stream batch in, a partial batch response out, the count written, and one embedded-metrics
//! log line per invocation. Prints the cold start (process spawn → first poll for work).
//!
//! `LIKES_AGGREGATOR_BIN=target/release/count-aggregator` runs it against a release build.

use std::path::PathBuf;
use std::time::Duration;

use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_core::{CountsRead, PostId};
use likes_harness::Tables;
use serde_json::Value;

fn binary() -> PathBuf {
    fake_runtime::binary_under_test(
        "LIKES_AGGREGATOR_BIN",
        env!("CARGO_BIN_EXE_count-aggregator"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_binary_aggregates_a_stream_batch() {
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(
        &binary(),
        &rt,
        t.lambda_env(likes_harness::lab::roles::AGGREGATOR),
    )
    .expect("the binary starts");
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events/stream-batch.json");
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample")).expect("JSON");

    for round in 0..2 {
        let id = rt.push(event.clone());
        match rt.outcome(&id, Duration::from_secs(30)).await {
            Some(Outcome::Response(v)) => {
                assert_eq!(
                    v["batchItemFailures"],
                    Value::Array(vec![]),
                    "round {round}: {v}"
                )
            }
            other => panic!("no response: {other:?}\n{}", f.lines().join("\n")),
        }
    }
    assert!(rt.first_poll().is_some(), "the function polled for work");
    f.report(&rt, &binary());

    // Delivered twice, counted once: like, like, unlike over two buckets = 1.
    let post = PostId::parse("0f8fad5b-d9cb-469f-a165-70867728950e").unwrap();
    assert_eq!(t.counts().post_count(&post).await.unwrap(), 1);

    // One EMF line per invocation; the second delivery was all duplicates.
    let emf: Vec<Value> = f
        .lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|v| v.get("_aws").is_some())
        .collect();
    assert_eq!(emf.len(), 2, "{:?}", f.lines());
    assert_eq!(emf[0]["_aws"]["CloudWatchMetrics"][0]["Namespace"], "likes");
    assert_eq!(emf[1]["DuplicateRecords"], 3);
    assert_eq!(emf[1]["CountAnomalies"], 0);
}
