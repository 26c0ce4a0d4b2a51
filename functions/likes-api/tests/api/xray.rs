//! X-Ray, as the template's `Tracing: Active` runs it: the real `likes-api` binary under a
//! loopback Lambda Runtime API that sends each invocation's trace header, with a UDP socket on
//! loopback standing in for the X-Ray daemon. A sampled invocation reports one subsegment per
//! DynamoDB call, under the invocation's trace and parent; an unsampled one, or any invocation
//! with tracing off (the default), reports nothing.
//!
//! "Nothing" is shown without waiting: a function writes its datagrams before it answers, and
//! loopback delivers them at once and in order, so when a later, traced invocation's
//! subsegment is the first datagram the socket holds, the earlier invocation sent none.

use std::path::PathBuf;
use std::time::Duration;

use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_harness::calls::Daemon;
use likes_harness::Tables;
use serde_json::Value;

fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_LAMBDA_BIN", env!("CARGO_BIN_EXE_likes-api"))
}

fn like_event() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events/like.json");
    serde_json::from_str(&std::fs::read_to_string(path).expect("like.json")).expect("json")
}

fn trace(root: &str, sampled: bool) -> String {
    format!(
        "Root={root};Parent=53995c3f42cd8ad8;Sampled={}",
        u8::from(sampled)
    )
}

async fn answer(rt: &FakeRuntime, id: &str) {
    match rt.outcome(id, Duration::from_secs(30)).await {
        Some(Outcome::Response(v)) => assert_eq!(v["statusCode"], 200, "{v}"),
        other => panic!("no answer: {other:?}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sampled_invocation_reports_each_dynamodb_call_and_nothing_else_does() {
    let t = Tables::new().await;
    let daemon = Daemon::start();
    let env = |on: bool| {
        let mut env = t.lambda_env(likes_harness::lab::roles::API);
        // The daemon's address either way: only the switch differs.
        env.extend(
            daemon
                .env()
                .into_iter()
                .filter(|(k, _)| on || *k != "LIKES_XRAY"),
        );
        env
    };

    // Tracing off (no LIKES_XRAY), though Lambda sampled the invocation.
    let off_rt = FakeRuntime::start().await.expect("runtime API");
    let off = Function::spawn(&binary(), &off_rt, env(false)).expect("the binary starts");
    let id = off_rt.push_traced(
        like_event(),
        &trace("1-6750a1b2-aaaaaaaaaaaaaaaaaaaaaaaa", true),
    );
    answer(&off_rt, &id).await;
    drop(off);

    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env(true)).expect("the binary starts");
    // On, but this invocation was not sampled.
    let id = rt.push_traced(
        like_event(),
        &trace("1-6750a1b2-bbbbbbbbbbbbbbbbbbbbbbbb", false),
    );
    answer(&rt, &id).await;
    // On and sampled.
    let root = "1-6750a1b2-cccccccccccccccccccccccc";
    let id = rt.push_traced(like_event(), &trace(root, true));
    answer(&rt, &id).await;

    let first = daemon
        .next(Duration::from_secs(5))
        .unwrap_or_else(|| panic!("no segment arrived\n{}", f.lines().join("\n")));
    assert_eq!(
        first["trace_id"], root,
        "only the sampled, traced invocation reports: {first}"
    );
    let done = daemon
        .next_completed(Duration::from_secs(5))
        .expect("the call's completed subsegment");
    assert_eq!(done["trace_id"], root, "{done}");
    assert_eq!(done["parent_id"], "53995c3f42cd8ad8", "{done}");
    assert_eq!(done["type"], "subsegment", "{done}");
    assert_eq!(done["namespace"], "aws", "{done}");
    assert_eq!(done["name"], "DynamoDB", "{done}");
    let op = done["aws"]["operation"].as_str().unwrap_or_default();
    assert!(
        ["PutItem", "UpdateItem", "TransactWriteItems", "GetItem"].contains(&op),
        "{done}"
    );
    // The post was liked by the first invocation, so this like's conditional put is refused
    // (400, ConditionalCheckFailed): a client error, flagged as such, not a fault.
    let status = done["http"]["response"]["status"].as_u64().unwrap_or(0);
    assert!([200, 400].contains(&status), "{done}");
    assert_eq!(done.get("error").is_some(), status == 400, "{done}");
    assert!(done.get("fault").is_none(), "{done}");
    assert!(
        done["end_time"].as_f64() >= done["start_time"].as_f64(),
        "{done}"
    );
}
