//! Reactions end to end through `make dev` (the `likes-local` binary, real HTTP and tokens,
//! the stream feeding the aggregator), in both modes: the routes, `invalid_kind`, counts per
//! kind reaching the Counts table, who reacted, the summary's new fields, and `single` mode's
//! replacement.

use crate::common;

use std::time::{Duration, Instant};

use common::{http, token, Options, Stack};
use serde_json::{json, Value};

fn start(mode: &str) -> Stack {
    Stack::start(&Options {
        env: vec![
            ("LIKES_REACTION_KINDS", "like,love,laugh,+1".to_owned()),
            ("LIKES_REACTION_MODE", mode.to_owned()),
        ],
        ..Options::default()
    })
}

/// Polls `GET /posts/{post}/reactions` until its counts are `want` (the stream and the
/// aggregator are asynchronous), within 30 s.
fn wait_for_counts(stack: &Stack, post: &str, tok: &str, want: &Value) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (s, b) = http(
            stack.port,
            "GET",
            &format!("/posts/{post}/reactions"),
            Some(tok),
        )
        .unwrap();
        assert_eq!(s, 200, "{b}");
        if b["counts"] == *want {
            return b;
        }
        assert!(
            Instant::now() < deadline,
            "counts never reached {want}: {b}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn put(stack: &Stack, path: &str, tok: &str) -> Value {
    let (s, b) = http(stack.port, "PUT", path, Some(tok)).unwrap();
    assert_eq!(s, 200, "{path}: {b}");
    b
}

#[test]
fn multi_mode_end_to_end() {
    let stack = start("multi");
    let post = uuid::Uuid::new_v4().to_string();
    let (a, b) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    let (ta, tb) = (token(&a), token(&b));
    let r = |kind: &str| format!("/posts/{post}/reactions/{kind}");

    let first = put(&stack, &r("love"), &ta);
    assert_eq!(first["changed"], true);
    assert_eq!(first["kind"], "love");
    assert!(
        first.get("replaced").is_none(),
        "multi mode replaces nothing: {first}"
    );
    assert_eq!(put(&stack, &r("love"), &ta)["changed"], false);
    put(&stack, &format!("/posts/{post}/like"), &ta);
    put(&stack, &r("love"), &tb);
    put(&stack, &r("%2B1"), &tb);

    // A kind outside the deployment's: 400 naming it, and nothing written.
    let (s, e) = http(stack.port, "PUT", &r("angry"), Some(&ta)).unwrap();
    assert_eq!(s, 400, "{e}");
    assert_eq!(e["error"]["code"], "invalid_kind");
    assert!(e["error"]["message"].as_str().unwrap().contains("angry"));
    let (s, _) = http(
        stack.port,
        "GET",
        &format!("{}/users", r("angry")),
        Some(&ta),
    )
    .unwrap();
    assert_eq!(s, 400);

    let want = json!({"like": 1, "love": 2, "laugh": 0, "+1": 1});
    let got = wait_for_counts(&stack, &post, &ta, &want);
    assert_eq!(got["total"], 4);
    assert_eq!(got["mine"], json!(["like", "love"]));

    // Who reacted with love: both, newest first, paged.
    let (s, page) = http(
        stack.port,
        "GET",
        &format!("{}/users?limit=1", r("love")),
        Some(&ta),
    )
    .unwrap();
    assert_eq!(s, 200, "{page}");
    assert_eq!(page["items"][0]["user_id"], b.as_str());
    let cursor = page["next_cursor"].as_str().expect("a second page");
    let (_, rest) = http(
        stack.port,
        "GET",
        &format!("{}/users?limit=1&cursor={cursor}", r("love")),
        Some(&ta),
    )
    .unwrap();
    assert_eq!(rest["items"][0]["user_id"], a.as_str());
    assert_eq!(rest["next_cursor"], Value::Null);

    // The summary keeps its fields and gains the kinds.
    let (s, sum) = http(
        stack.port,
        "GET",
        &format!("/likes/summary?post_ids={post}"),
        Some(&tb),
    )
    .unwrap();
    assert_eq!(s, 200, "{sum}");
    let item = &sum["items"][0];
    assert_eq!(item["like_count"], 1);
    assert_eq!(item["liked_by_me"], false);
    assert_eq!(item["reactions"], want);
    assert_eq!(item["my_reactions"], json!(["+1", "love"]));

    // Removing one kind leaves the others.
    let (s, gone) = http(stack.port, "DELETE", &r("love"), Some(&ta)).unwrap();
    assert_eq!((s, &gone["changed"]), (200, &json!(true)));
    let want = json!({"like": 1, "love": 1, "laugh": 0, "+1": 1});
    let got = wait_for_counts(&stack, &post, &ta, &want);
    assert_eq!(got["mine"], json!(["like"]));
    let (_, count) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/likes/count"),
        Some(&ta),
    )
    .unwrap();
    assert_eq!(
        count["like_count"], 1,
        "the like's count never sees other kinds"
    );
}

#[test]
fn single_mode_end_to_end() {
    let stack = start("single");
    let post = uuid::Uuid::new_v4().to_string();
    let a = uuid::Uuid::new_v4().to_string();
    let ta = token(&a);
    let r = |kind: &str| format!("/posts/{post}/reactions/{kind}");

    let first = put(&stack, &r("love"), &ta);
    assert_eq!(
        (&first["changed"], &first["replaced"]),
        (&json!(true), &Value::Null)
    );
    let swap = put(&stack, &r("laugh"), &ta);
    assert_eq!(
        (&swap["changed"], &swap["replaced"]),
        (&json!(true), &json!("love"))
    );
    let want = json!({"like": 0, "love": 0, "laugh": 1, "+1": 0});
    let got = wait_for_counts(&stack, &post, &ta, &want);
    assert_eq!(got["mine"], json!(["laugh"]));
    // The like's route replaces too, and its answer is the like's as ever.
    let like = put(&stack, &format!("/posts/{post}/like"), &ta);
    assert_eq!(
        (&like["liked"], &like["changed"]),
        (&json!(true), &json!(true))
    );
    let want = json!({"like": 1, "love": 0, "laugh": 0, "+1": 0});
    let got = wait_for_counts(&stack, &post, &ta, &want);
    assert_eq!(got["mine"], json!(["like"]));
    assert_eq!(got["total"], 1);
}
