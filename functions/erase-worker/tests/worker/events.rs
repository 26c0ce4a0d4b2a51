//! Every `EraseWorkerFunction` event in `events` (the SQS batches `sam local invoke -e`
//! runs), played through the real `erase-worker` binary against a loopback Lambda Runtime API
//! and the emulator, each against fresh tables holding the manifest's seed likes, and checked
//! against `functions/events/expected.json`: the partial batch response, the posts the job's user
//! still likes, and every other user's likes untouched.
//!
//! `LIKES_ERASE_BIN=target/release/erase-worker` runs it against a release build.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_core::erase_job::EraseJob;
use likes_harness::calls::{assert_role_allows, Daemon, SAMPLED};
use likes_harness::events::{
    assert_no_problems, check_match, entries_for, file_of, manifest, read_json, seed,
};
use likes_harness::Tables;
use likes_sim::sqs::message;
use serde_json::Value;

const FUNCTION: &str = "EraseWorkerFunction";

fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_ERASE_BIN", env!("CARGO_BIN_EXE_erase-worker"))
}

/// The events are Lambda's SQS events: they parse into the Lambda type, and a body the
/// worker can run is an erase job.
#[test]
fn the_events_are_sqs_events() {
    let m = manifest();
    let entries = entries_for(&m, FUNCTION);
    assert!(!entries.is_empty(), "no {FUNCTION} events");
    for e in entries {
        let file = file_of(e);
        let event: SqsEvent = serde_json::from_value(read_json(file))
            .unwrap_or_else(|err| panic!("{file}: not an SQS event: {err}"));
        for r in &event.records {
            assert_eq!(r.event_source.as_deref(), Some("aws:sqs"), "{file}");
            assert!(r.message_id.is_some(), "{file}: a message id");
            // The shape the worker's own poller hands it locally.
            let body = r.body.as_deref().unwrap_or("");
            let local = message("m", "r", body);
            assert_eq!(local.body, r.body, "{file}");
        }
        let runnable = e["expect"]["body"]["batchItemFailures"]
            .as_array()
            .is_some_and(|f| f.is_empty());
        for r in &event.records {
            let job = serde_json::from_str::<EraseJob>(r.body.as_deref().unwrap_or(""));
            assert_eq!(job.is_ok(), runnable, "{file}: {job:?}");
        }
    }
}

fn user_of(event: &Value) -> Option<String> {
    let body = event["Records"][0]["body"].as_str()?;
    let job: EraseJob = serde_json::from_str(body).ok()?;
    Some(job.user_id.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_erase_event_answers_as_the_manifest_says() {
    let m = manifest();
    // The seed's user whose likes the jobs are about (the unrunnable one names none).
    let user = entries_for(&m, FUNCTION)
        .iter()
        .find_map(|e| user_of(&read_json(file_of(e))))
        .expect("an event with a job");
    let mut problems = Vec::new();
    let daemon = Daemon::start();
    let entries = entries_for(&m, FUNCTION);
    for entry in &entries {
        let file = file_of(entry);
        let t = Tables::new().await;
        seed(&t, &m).await;
        let before = t.like_pairs().await;
        let rt = FakeRuntime::start().await.expect("runtime API");
        let mut env = t.lambda_env(likes_harness::lab::roles::WORKER);
        env.extend(daemon.env());
        let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
        let id = rt.push_traced(read_json(file), SAMPLED);
        let answer = match rt.outcome(&id, Duration::from_secs(60)).await {
            Some(Outcome::Response(v)) => v,
            other => {
                problems.push(format!(
                    "{file}: no response: {other:?}\n{}",
                    f.lines().join("\n")
                ));
                continue;
            }
        };
        let mut here = Vec::new();
        check_match(&entry["expect"]["body"], &answer, "answer", &mut here);
        let after = t.like_pairs().await;
        let left: BTreeSet<String> = after
            .iter()
            .filter(|(_, u)| *u == user)
            .map(|(p, _)| p.clone())
            .collect();
        let want: BTreeSet<String> = entry["expect"]["likes_left"]
            .as_array()
            .expect("likes_left")
            .iter()
            .filter_map(|p| p.as_str().map(str::to_owned))
            .collect();
        if left != want {
            here.push(format!("likes left: expected {want:?}, got {left:?}"));
        }
        let others = |pairs: &[(String, String)]| -> Vec<(String, String)> {
            pairs.iter().filter(|(_, u)| *u != user).cloned().collect()
        };
        if others(&after) != others(&before) {
            here.push("another user's likes changed".to_owned());
        }
        if !here.is_empty() {
            problems.push(format!("{file}: {} (answer: {answer})", here.join("; ")));
        }
    }
    assert_no_problems(&problems, entries.len());
    assert_role_allows(
        FUNCTION,
        &daemon.operations(),
        &["dynamodb:Query", "dynamodb:DeleteItem"],
    );
    println!("{} {FUNCTION} events answered as expected", entries.len());
}
