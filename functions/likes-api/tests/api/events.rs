//! Every `LikesApiFunction` event in `events` (the ones `sam local invoke -e` runs), played
//! through the real `likes-api` binary — its `main`, configuration from the environment, the
//! Lambda runtime loop and response serialisation — against a loopback Lambda Runtime API and the
//! emulator, and checked against the answer `functions/events/expected.json` gives for it.
//!
//! The events are played in manifest order against one pair of tables holding the manifest's
//! `seed` (likes with fixed times, so that the cursor stored in an event file resumes where it
//! says). Every mismatch is collected and reported at once.
//!
//! `LIKES_LAMBDA_BIN=target/release/likes-api` runs the same test against a release build.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::time::Duration;

use aws_lambda_events::apigw::ApiGatewayV2httpRequest;
use fake_runtime::{FakeRuntime, Function, Outcome};
use likes_harness::calls::{assert_role_allows, Daemon, SAMPLED};
use likes_harness::events::{
    assert_no_problems, check_match, dir, entries, entries_for, file_of, manifest, read_json, seed,
    FUNCTIONS,
};
use likes_harness::Tables;
use serde_json::Value;

const FUNCTION: &str = "LikesApiFunction";

fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_LAMBDA_BIN", env!("CARGO_BIN_EXE_likes-api"))
}

/// One raw query parameter, as the client sent it.
fn raw_query_param<'a>(event: &'a Value, name: &str) -> Option<&'a str> {
    event["rawQueryString"]
        .as_str()?
        .split('&')
        .find_map(|pair| pair.strip_prefix(name)?.strip_prefix('='))
}

#[test]
fn the_manifest_lists_every_event_file_once() {
    let m = manifest();
    let mut listed = BTreeSet::new();
    for e in entries(&m) {
        let file = file_of(e);
        assert!(listed.insert(file.to_owned()), "{file} is listed twice");
        let function = e["function"].as_str().unwrap_or_default();
        assert!(
            FUNCTIONS.contains(&function),
            "{file}: function {function:?}"
        );
        assert!(e["expect"].is_object(), "{file}: no expect");
    }
    let on_disk: BTreeSet<String> = std::fs::read_dir(dir())
        .expect("events")
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && n != "expected.json")
        .collect();
    assert_eq!(listed, on_disk, "expected.json must list every event file");
    // API Gateway events are this function's, and only they are.
    for e in entries(&m) {
        let file = file_of(e);
        let is_http_api = read_json(file)["version"] == "2.0";
        assert_eq!(is_http_api, e["function"] == FUNCTION, "{file}: function");
    }
}

/// The events are what API Gateway sends behind `ANY /{proxy+}` with a JWT authorizer: they
/// parse into the Lambda type, and their redundant fields agree with each other.
#[test]
fn the_api_events_are_http_api_v2_events() {
    let m = manifest();
    for e in entries_for(&m, FUNCTION) {
        let file = file_of(e);
        let event = read_json(file);
        let parsed: ApiGatewayV2httpRequest = serde_json::from_value(event.clone())
            .unwrap_or_else(|err| panic!("{file}: not an HTTP API v2 event: {err}"));
        assert_eq!(parsed.version.as_deref(), Some("2.0"), "{file}");
        assert_eq!(event["routeKey"], "ANY /{proxy+}", "{file}");
        assert_eq!(
            event["requestContext"]["routeKey"], "ANY /{proxy+}",
            "{file}"
        );
        assert_eq!(event["requestContext"]["stage"], "$default", "{file}");
        let raw_path = event["rawPath"].as_str().expect("rawPath");
        assert_eq!(event["requestContext"]["http"]["path"], raw_path, "{file}");
        assert_eq!(
            event["pathParameters"]["proxy"].as_str(),
            raw_path.strip_prefix('/'),
            "{file}"
        );
        // A client's path: percent-encoded, so nothing a URI may not hold.
        assert!(
            raw_path
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"/-._~%:@!$&'()*+,;=".contains(&b)),
            "{file}: rawPath {raw_path:?} is not percent-encoded"
        );
        let has_query = !event["rawQueryString"].as_str().unwrap_or("").is_empty();
        assert_eq!(
            has_query,
            event.get("queryStringParameters").is_some(),
            "{file}: queryStringParameters go with a query"
        );
        // The authorizer passes every claim as a string.
        if let Some(claims) = event["requestContext"]["authorizer"]["jwt"]["claims"].as_object() {
            for (k, v) in claims {
                assert!(v.is_string(), "{file}: claim {k} is {v}, not a string");
            }
            assert!(claims.contains_key("sub"), "{file}: no sub claim");
        }
        assert!(
            event.get("body").is_none(),
            "{file}: these routes take no body"
        );
    }
}

/// Status, headers and JSON body of one invocation, or why there are none.
async fn invoke(
    rt: &FakeRuntime,
    f: &Function,
    event: Value,
) -> Result<(i64, Value, Value), String> {
    let id = rt.push_traced(event, SAMPLED);
    match rt.outcome(&id, Duration::from_secs(30)).await {
        Some(Outcome::Response(v)) => {
            let status = v["statusCode"]
                .as_i64()
                .ok_or(format!("no statusCode: {v}"))?;
            let text = v["body"].as_str().ok_or(format!("no text body: {v}"))?;
            let body = serde_json::from_str(text).map_err(|e| format!("body {text:?}: {e}"))?;
            Ok((status, v["headers"].clone(), body))
        }
        other => Err(format!("no response: {other:?}\n{}", f.lines().join("\n"))),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_api_event_answers_as_the_manifest_says() {
    let m = manifest();
    let t = Tables::new().await;
    let seeded = seed(&t, &m).await;
    assert_eq!(t.like_pairs().await.len(), seeded);
    // The erase queue the template gives the function, on the emulator.
    let endpoint = likes_harness::endpoint();
    let sqs = aws_sdk_sqs::Client::new(&likes_aws::sdk::emulator(&endpoint).await);
    let queue = sqs
        .create_queue()
        .queue_name(format!("erase-jobs-{}", uuid::Uuid::new_v4().simple()))
        .send()
        .await
        .expect("a queue")
        .queue_url
        .expect("its url");
    let mut env = t.lambda_env(likes_harness::lab::roles::API);
    env.push(("AWS_ENDPOINT_URL_SQS", endpoint));
    env.push(("ERASE_QUEUE_URL", queue.clone()));
    let daemon = Daemon::start();
    env.extend(daemon.env());
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");

    let mut problems = Vec::new();
    let mut answers: BTreeMap<String, Value> = BTreeMap::new();
    let entries = entries_for(&m, FUNCTION);
    for entry in &entries {
        let file = file_of(entry);
        let expect = &entry["expect"];
        let event = read_json(file);
        let before = t.like_pairs().await;
        let (status, headers, body) = match invoke(&rt, &f, event).await {
            Ok(answer) => answer,
            Err(why) => {
                problems.push(format!("{file}: {why}"));
                continue;
            }
        };
        let mut here = Vec::new();
        if expect["status"] != status {
            here.push(format!(
                "status: expected {}, got {status}",
                expect["status"]
            ));
        }
        if headers["content-type"] != "application/json" {
            here.push(format!("content-type: {}", headers["content-type"]));
        }
        check_match(&expect["body"], &body, "body", &mut here);
        if let Some(want) = expect.get("headers") {
            check_match(want, &headers, "headers", &mut here);
        }
        // An error never changes anything.
        if status != 200 && t.like_pairs().await != before {
            here.push("an error answer changed the Likes table".to_owned());
        }
        if !here.is_empty() {
            problems.push(format!(
                "{file}: {} (answer: {status} {body})",
                here.join("; ")
            ));
        }
        answers.insert(file.to_owned(), body);
    }

    // The stored cursor is the one the API hands out for the first page, not a hand-made one;
    // the tampered one differs from it in exactly one character.
    let cursor_of = |file: &str| raw_query_param(&read_json(file), "cursor").map(str::to_owned);
    for entry in &entries {
        let file = file_of(entry);
        if let Some(from) = entry["cursor_from"].as_str() {
            let issued = answers.get(from).map(|b| b["next_cursor"].clone());
            if issued.as_ref().and_then(Value::as_str) != cursor_of(file).as_deref() {
                problems.push(format!(
                    "{file}: its cursor is not the one {from} answers ({issued:?}); put that one in"
                ));
            }
        }
        if let Some(from) = entry["tampered_from"].as_str() {
            let (a, b) = (
                cursor_of(file).unwrap_or_default(),
                cursor_of(from).unwrap_or_default(),
            );
            let differing = a.chars().zip(b.chars()).filter(|(x, y)| x != y).count();
            if a.len() != b.len() || differing != 1 {
                problems.push(format!(
                    "{file}: its cursor should be {from}'s with one character changed"
                ));
            }
        }
    }

    // An accepted erase is a job on the queue, for the caller, under the id it was answered.
    let mut queued = Vec::new();
    loop {
        let out = sqs
            .receive_message()
            .queue_url(&queue)
            .max_number_of_messages(10)
            .send()
            .await
            .expect("receive");
        if out.messages().is_empty() {
            break;
        }
        for msg in out.messages() {
            let body: Value = serde_json::from_str(msg.body().unwrap_or("")).expect("a job");
            queued.push((body["job_id"].clone(), body["user_id"].clone()));
        }
    }
    let accepted: Vec<(Value, Value)> = answers
        .values()
        .filter(|b| b["status"] == "accepted")
        .map(|b| (b["job_id"].clone(), b["user_id"].clone()))
        .collect();
    if queued != accepted {
        problems.push(format!(
            "the erase queue holds {queued:?}, the answers accepted {accepted:?}"
        ));
    }

    assert_no_problems(&problems, entries.len());
    assert_role_allows(
        FUNCTION,
        &daemon.operations(),
        &[
            "dynamodb:PutItem",
            "dynamodb:DeleteItem",
            "dynamodb:GetItem",
            "dynamodb:Query",
            "dynamodb:BatchGetItem",
            "dynamodb:TransactWriteItems",
            "sqs:SendMessage",
        ],
    );
    println!(
        "{} LikesApiFunction events answered as expected",
        entries.len()
    );
}
