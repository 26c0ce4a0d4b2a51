//! The like/unlike/did-I-like routes against the emulator, through the real handler.

use std::time::{Duration, Instant};

use likes_core::{PostId, UserId};
use likes_harness::sdk_faults::{Fault, Faults};
use likes_harness::{call, call_as, client_for, like_path, ApiEvent, Tables};
use serde_json::Value;

#[tokio::test]
async fn like_twice_stores_one_item_and_reports_the_change_once() {
    let t = Tables::new().await;
    let app = t.app();
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let sub = user.to_string();

    let (s1, b1, _) = call_as(&app, "PUT", &like_path(&post), &sub).await;
    let (s2, b2, _) = call_as(&app, "PUT", &like_path(&post), &sub).await;
    assert_eq!((s1, s2), (200, 200));
    assert_eq!(b1["changed"], true);
    assert_eq!(b2["changed"], false);
    for b in [&b1, &b2] {
        assert_eq!(b["liked"], true);
        assert_eq!(b["post_id"], post.to_string());
        assert_eq!(b["user_id"], sub);
    }
    assert_eq!(t.like_pairs().await, vec![(post.to_string(), sub.clone())]);

    let (s, got, _) = call_as(&app, "GET", &like_path(&post), &sub).await;
    assert_eq!(s, 200);
    assert_eq!(got["liked"], true);
    let liked_at = got["liked_at"].as_str().expect("liked_at is a string");
    assert!(likes_core::time::parse_ts(liked_at).is_some(), "{liked_at}");
    // The stored item carries the post id and the same timestamp.
    let items = t.scan(&t.likes_table).await;
    assert_eq!(items[0]["liked_at"].as_s().unwrap(), liked_at);
    assert_eq!(
        items[0]["post_bucket"].as_s().unwrap(),
        &likes_core::PostBucket::for_like(&post, &user).to_string()
    );
}

#[tokio::test]
async fn unlike_twice_and_unlike_of_never_liked() {
    let t = Tables::new().await;
    let app = t.app();
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let sub = user.to_string();

    let (s, b, _) = call_as(&app, "DELETE", &like_path(&post), &sub).await;
    assert_eq!(s, 200);
    assert_eq!(
        b["changed"], false,
        "unlike of a never-liked post changes nothing"
    );
    assert_eq!(b["liked"], false);

    call_as(&app, "PUT", &like_path(&post), &sub).await;
    let (_, b1, _) = call_as(&app, "DELETE", &like_path(&post), &sub).await;
    let (_, b2, _) = call_as(&app, "DELETE", &like_path(&post), &sub).await;
    assert_eq!(b1["changed"], true);
    assert_eq!(b2["changed"], false);
    assert!(t.like_pairs().await.is_empty());

    let (_, got, _) = call_as(&app, "GET", &like_path(&post), &sub).await;
    assert_eq!(got["liked"], false);
    assert_eq!(got["liked_at"], Value::Null);
}

async fn concurrent(t: &Tables, method: &str, post: &PostId, sub: &str, n: usize) -> usize {
    let app = std::sync::Arc::new(t.app());
    let mut tasks = Vec::new();
    for _ in 0..n {
        let app = app.clone();
        let (path, sub, method) = (like_path(&post), sub.to_owned(), method.to_owned());
        tasks.push(tokio::spawn(async move {
            call_as(&app, &method, &path, &sub).await
        }));
    }
    let mut changed = 0;
    for task in tasks {
        let (status, body, _) = task.await.expect("task");
        assert_eq!(status, 200, "{body}");
        if body["changed"] == true {
            changed += 1;
        }
    }
    changed
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_concurrent_likes_then_unlikes_change_exactly_once() {
    let t = Tables::new().await;
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let sub = user.to_string();

    assert_eq!(concurrent(&t, "PUT", &post, &sub, 50).await, 1);
    assert_eq!(t.like_pairs().await, vec![(post.to_string(), sub.clone())]);

    assert_eq!(concurrent(&t, "DELETE", &post, &sub, 50).await, 1);
    assert!(t.like_pairs().await.is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn interleaved_likes_and_unlikes_leave_each_users_last_action() {
    let t = Tables::new().await;
    let app = std::sync::Arc::new(t.app());
    let post = PostId::new_random();
    let users: Vec<UserId> = (0..24).map(|_| UserId::new_random()).collect();

    // Each user runs its own sequence; users run concurrently with each other.
    let mut tasks = Vec::new();
    for (i, user) in users.iter().enumerate() {
        let app = app.clone();
        let sub = user.to_string();
        let path = like_path(&post);
        // A per-user action pattern derived from its index: lengths 1..=6, mixed verbs.
        let actions: Vec<&'static str> = (0..(i % 6 + 1))
            .map(|k| if (i + k) % 3 == 0 { "DELETE" } else { "PUT" })
            .collect();
        tasks.push(tokio::spawn(async move {
            for a in &actions {
                let (s, _, _) = call_as(&app, a, &path, &sub).await;
                assert_eq!(s, 200);
            }
            (sub, *actions.last().expect("at least one action") == "PUT")
        }));
    }
    let mut expected = Vec::new();
    for task in tasks {
        let (sub, liked) = task.await.expect("task");
        if liked {
            expected.push((post.to_string(), sub));
        }
    }
    expected.sort();
    assert!(!expected.is_empty() && expected.len() < users.len());
    assert_eq!(t.like_pairs().await, expected);
}

#[tokio::test]
async fn bad_input_gets_a_json_4xx_and_writes_nothing() {
    let t = Tables::new().await;
    let app = t.app();
    let post = PostId::new_random().to_string();
    let sub = UserId::new_random().to_string();
    let huge = "a".repeat(10_000);
    let good = format!("/posts/{post}/like");

    // (method, path, sub claim, body, expected status, expected error code)
    type Case<'a> = (
        &'a str,
        String,
        Option<&'a str>,
        Option<&'a str>,
        u16,
        &'a str,
    );
    let mut cases: Vec<Case> = Vec::new();
    let id_paths = [
        "/posts/not~an~id/like".to_owned(),
        "/posts/a%23b/like".into(),
        "/posts/a%252Fb/like".into(),
        "/posts/has spaces/like".into(),
        "/posts/has%20spaces/like".into(),
        "/posts/ünï¢ødé/like".into(),
        format!("/posts/{huge}/like"),
    ];
    for path in id_paths {
        cases.push(("PUT", path, Some(&sub), None, 400, "invalid_id"));
    }
    let not_an_id = "/posts/not~an~id/like".to_owned();
    cases.push((
        "DELETE",
        not_an_id.clone(),
        Some(&sub),
        None,
        400,
        "invalid_id",
    ));
    for method in ["PUT", "DELETE", "GET"] {
        cases.push((method, good.clone(), None, None, 401, "unauthorized"));
    }
    for bad_sub in ["not a user id", "", "a#1", "~fence"] {
        cases.push((
            "PUT",
            good.clone(),
            Some(bad_sub),
            None,
            401,
            "unauthorized",
        ));
    }
    // A bad id is not even validated for an unauthenticated caller.
    cases.push(("PUT", not_an_id, None, None, 401, "unauthorized"));
    for method in ["POST", "PATCH"] {
        cases.push((
            method,
            good.clone(),
            Some(&sub),
            None,
            405,
            "method_not_allowed",
        ));
    }
    for path in [
        format!("/posts/{post}/likee"),
        "/".into(),
        format!("{good}/"),
    ] {
        cases.push(("PUT", path, Some(&sub), None, 404, "not_found"));
    }
    for body in [r#"{"user_id":"someone-else"}"#, "not json"] {
        cases.push((
            "PUT",
            good.clone(),
            Some(&sub),
            Some(body),
            400,
            "unexpected_body",
        ));
    }
    for (method, path, sub, body, status, code) in cases {
        let mut event = ApiEvent::new(method, &path);
        if let Some(sub) = sub {
            event = event.caller(sub);
        }
        if let Some(body) = body {
            event = event.body(body);
        }
        let (s, b, headers) = call(&app, event).await;
        let shown: String = path.chars().take(60).collect();
        assert_eq!(s, status, "{method} {shown}: {b}");
        assert_eq!(b["error"]["code"], code, "{method} {shown}: {b}");
        let msg = b["error"]["message"].as_str().expect("message is a string");
        assert!(!msg.is_empty() && msg.len() < 400, "{msg}");
        if status == 400 && code == "invalid_id" {
            assert!(msg.contains("post_id"), "{msg}");
        }
        if status == 405 {
            assert_eq!(headers["allow"], "GET, PUT, DELETE");
        }
        assert_eq!(headers["content-type"], "application/json");
    }
    assert!(
        t.scan(&t.likes_table).await.is_empty(),
        "bad input wrote something"
    );
}

#[tokio::test]
async fn unreachable_dynamodb_is_503_with_retry_after_in_bounded_time() {
    // A port that was just free: nothing listens there.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port();
    let client = client_for(&format!("http://127.0.0.1:{port}")).await;
    let app = likes_api::App::new(
        likes_aws::DynamoLikes::new(client.clone(), "likes"),
        likes_aws::DynamoCounts::new(client, "counts"),
    );
    let post = PostId::new_random();
    let sub = UserId::new_random().to_string();
    for method in ["PUT", "DELETE", "GET"] {
        let started = Instant::now();
        let (s, b, headers) = call_as(&app, method, &like_path(&post), &sub).await;
        let took = started.elapsed();
        assert_eq!(s, 503, "{method}: {b}");
        assert_eq!(b["error"]["code"], "unavailable");
        assert_eq!(headers["retry-after"], "1");
        assert!(took < Duration::from_secs(10), "{method} took {took:?}");
    }
}

#[tokio::test]
async fn a_store_bug_is_a_500_with_the_request_id_and_no_detail() {
    // A table that does not exist: a misconfiguration, not a transient failure.
    let client = likes_harness::client().await;
    let app = likes_api::App::new(
        likes_aws::DynamoLikes::new(client.clone(), "no-such-table"),
        likes_aws::DynamoCounts::new(client, "no-such-table-either"),
    );
    let sub = UserId::new_random().to_string();
    let event = ApiEvent::new("PUT", &like_path(&PostId::new_random())).caller(&sub);
    let request_id = event.request_id_value().to_owned();
    let (s, b, _) = call(&app, event).await;
    assert_eq!(s, 500, "{b}");
    assert_eq!(b["error"]["code"], "internal");
    let msg = b["error"]["message"].as_str().unwrap();
    assert!(msg.contains(&request_id), "{msg}");
    assert!(
        !msg.contains("no-such-table"),
        "internals stay in the logs: {msg}"
    );
}

#[tokio::test]
async fn a_like_whose_response_was_lost_still_reports_the_change() {
    let t = Tables::new().await;
    let lose = Faults::first("PutItem", Fault::BareServerError);
    let app = t.app_with(lose.clone());
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let sub = user.to_string();
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), &sub).await;
    assert_eq!(lose.injected().len(), 1, "the first response was replaced");
    assert_eq!(s, 200, "{b}");
    // The retry collided with this request's own write: that is a change, not "already liked".
    assert_eq!(b["changed"], true);
    assert_eq!(t.like_pairs().await, vec![(post.to_string(), sub.clone())]);
    // A genuine repeat is still "no change".
    let (_, again, _) = call_as(&app, "PUT", &like_path(&post), &sub).await;
    assert_eq!(again["changed"], false);
}
