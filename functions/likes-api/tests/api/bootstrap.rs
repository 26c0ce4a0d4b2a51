//! The real `likes-api` binary — its `main`, configuration from the environment, the Lambda
//! runtime loop and response serialisation — run against a loopback Lambda Runtime API and the
//! emulator. Prints the cold start (process spawn → first poll for work).
//!
//! `LIKES_LAMBDA_BIN=target/release/likes-api` runs the same test against a release build.

use std::path::PathBuf;
use std::time::Duration;

use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_harness::Tables;
use serde_json::Value;

fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_LAMBDA_BIN", env!("CARGO_BIN_EXE_likes-api"))
}

fn sample_event(method: &str, raw_path: &str, raw_query: &str) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events/like.json");
    let mut event: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample event")).expect("JSON");
    event["rawPath"] = raw_path.into();
    event["rawQueryString"] = raw_query.into();
    event["requestContext"]["http"]["path"] = raw_path.into();
    event["requestContext"]["http"]["method"] = method.into();
    event
}

async fn invoke(rt: &FakeRuntime, f: &Function, event: Value) -> (i64, Value) {
    let id = rt.push(event);
    let outcome = rt.outcome(&id, Duration::from_secs(30)).await;
    match outcome {
        Some(Outcome::Response(v)) => {
            let status = v["statusCode"].as_i64().expect("statusCode");
            let body: Value = serde_json::from_str(v["body"].as_str().expect("a text body"))
                .expect("a JSON body");
            assert_eq!(v["headers"]["content-type"], "application/json");
            (status, body)
        }
        other => panic!("no response: {other:?}\n{}", f.lines().join("\n")),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_bootstrap_binary_serves_api_gateway_events() {
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, t.lambda_env(likes_harness::lab::roles::API))
        .expect("the binary starts");

    let post = uuid::Uuid::new_v4();
    let (status, body) = invoke(
        &rt,
        &f,
        sample_event("PUT", &format!("/posts/{post}/like"), ""),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["changed"], true);
    assert_eq!(body["user_id"], "7c9e6679-7425-40de-944b-e07fc1f90ae7");
    assert!(rt.first_poll().is_some(), "the function polled for work");
    f.report(&rt, &binary());

    // The same environment, warm: the like is there.
    let (status, body) = invoke(
        &rt,
        &f,
        sample_event("GET", &format!("/posts/{post}/like"), ""),
    )
    .await;
    assert_eq!(
        (status, &body["liked"]),
        (200, &Value::Bool(true)),
        "{body}"
    );
    assert_eq!(t.like_pairs().await.len(), 1);

    // A query string no URI may hold: a JSON 400 from the binary, not a failed invocation.
    let (status, body) = invoke(
        &rt,
        &f,
        sample_event("GET", &format!("/posts/{post}/likes"), "cursor={| }"),
    )
    .await;
    assert_eq!(status, 400, "{body}");
    assert_eq!(body["error"]["code"], "invalid_request");

    let (status, _) = invoke(&rt, &f, sample_event("GET", "/nope", "")).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn without_its_configuration_the_binary_reports_an_init_error() {
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, [("AWS_REGION", "us-east-1")]).expect("starts");
    let id = rt.push(sample_event("GET", "/nope", ""));
    // LIKES_TABLE_NAME is missing: main fails before polling, and says which variable.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let lines = f.lines().join("\n");
        if lines.contains("LIKES_TABLE_NAME") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no error naming the variable:\n{lines}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        rt.first_poll().is_none(),
        "it must not take work it cannot do"
    );
    assert!(rt.outcome(&id, Duration::from_millis(200)).await.is_none());
}

/// The lines the binary writes, as JSON (the runtime's own output is not JSON).
fn json_lines(f: &Function) -> Vec<Value> {
    f.lines()
        .iter()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .collect()
}

/// One line per request: its access log entry (route, method, status, outcome, latency, request
/// id) and its metrics (`Requests`, `Latency` by function, route and outcome, in CloudWatch's
/// embedded metric format); other log lines carry Powertools' keys.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_request_writes_its_access_and_metrics_line() {
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    // The function's name is Lambda's (the stack's physical name), not the binary's.
    const NAME: &str = "likes-LikesApiFunction-AbC123";
    let mut env = t.lambda_env(likes_harness::lab::roles::API);
    env.push(("AWS_LAMBDA_FUNCTION_NAME", NAME.to_owned()));
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
    let post = uuid::Uuid::new_v4();
    let like = sample_event("PUT", &format!("/posts/{post}/like"), "");
    assert_eq!(invoke(&rt, &f, like.clone()).await.0, 200);
    assert_eq!(invoke(&rt, &f, like).await.0, 200);
    let bad = sample_event("PUT", "/posts/a%20b/like", "");
    assert_eq!(invoke(&rt, &f, bad).await.0, 400);
    let hostile = sample_event("GET", "/users/me/likes", "cursor={| }");
    assert_eq!(invoke(&rt, &f, hostile).await.0, 400);

    // The lines are written before the answer: they are all there once the answers are.
    let requests: Vec<Value> = json_lines(&f)
        .into_iter()
        .filter(|l| l["message"] == "request")
        .collect();
    let seen: Vec<(&str, &str, u64)> = requests
        .iter()
        .map(|l| {
            (
                l["Route"].as_str().unwrap_or(""),
                l["Outcome"].as_str().unwrap_or(""),
                l["status"].as_u64().unwrap_or(0),
            )
        })
        .collect();
    assert_eq!(
        seen,
        vec![
            ("like", "changed", 200),
            ("like", "unchanged", 200),
            ("bad_id", "4xx", 400),
            ("invalid", "4xx", 400)
        ],
        "{requests:#?}"
    );
    for l in &requests {
        let emf = &l["_aws"]["CloudWatchMetrics"][0];
        assert_eq!(emf["Namespace"], "likes");
        assert_eq!(
            emf["Dimensions"][0],
            serde_json::json!(["FunctionName", "Route", "Outcome"])
        );
        assert_eq!(l["Requests"], 1);
        assert!(l["Latency"].as_f64().is_some_and(|ms| ms >= 0.0), "{l}");
        assert!(
            l["function_request_id"]
                .as_str()
                .is_some_and(|id| !id.is_empty()),
            "{l}"
        );
        assert_eq!(l["FunctionName"], NAME);
    }
    // The log line the hostile query gave, with Powertools' keys, warm by then.
    let lines = json_lines(&f);
    let warn = lines
        .iter()
        .find(|l| l["level"] == "WARN")
        .unwrap_or_else(|| panic!("no WARN line: {lines:#?}"));
    assert_eq!(warn["service"], "likes-api", "{warn}");
    assert_eq!(warn["cold_start"], false, "{warn}");
    assert_eq!(warn["function_name"], NAME, "{warn}");
    assert!(
        warn["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
        "{warn}"
    );
    assert!(
        warn["function_request_id"]
            .as_str()
            .is_some_and(|id| !id.is_empty()),
        "{warn}"
    );
}
