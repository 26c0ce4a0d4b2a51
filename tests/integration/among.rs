//! "Which of these liked P" (`GET /posts/{id}/likes?among=…`, issue 35's friends who liked), on
//! both stores: exactly the named users who like the post, newest first (ties: higher user id
//! first) as the who-liked list, with their times; an unlike shows; duplicates folded; more than
//! 100 ids, an empty list, a bad id, or `among` with a cursor or limit are 400s. Against the
//! emulator the API runs as its role (the lab enforces the template's policy).

use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{CountsRead, ReactionsStore};
use likes_harness::{call, call_as, like_path, ApiEvent, Tables};
use serde_json::{json, Value};

async fn among<L: ReactionsStore, C: CountsRead>(
    app: &likes_api::App<L, C>,
    query: &str,
) -> (u16, Value) {
    let event = ApiEvent::new("GET", "/posts/p-among/likes")
        .query(query)
        .caller("auth0|viewer");
    let (s, b, _) = call(app, event).await;
    (s, b)
}

async fn scenario<L: ReactionsStore, C: CountsRead>(app: &likes_api::App<L, C>) {
    let users: Vec<String> = (0..6).map(|i| format!("auth0|friend-{i}")).collect();
    // Friends 0, 2, 3 and 5 like it, in that order; 1 and 4 do not.
    for i in [0, 2, 3, 5] {
        let (s, b, _) = call_as(app, "PUT", &like_path(&"p-among"), &users[i]).await;
        assert_eq!(s, 200, "{b}");
    }
    let (s, b, _) = call_as(app, "DELETE", &like_path(&"p-among"), &users[3]).await;
    assert_eq!(s, 200, "{b}");
    let named = format!(
        "{},{},{},{},{}",
        users[1], users[5], users[0], users[3], users[0]
    );
    let (s, body) = among(app, &format!("among={named}")).await;
    assert_eq!(s, 200, "{body}");
    let items = body["items"].as_array().expect("items");
    let ids: Vec<&str> = items.iter().filter_map(|i| i["user_id"].as_str()).collect();
    // Newest first: 5 liked after 0 (or in the same millisecond, when the higher id is first).
    assert_eq!(ids, [users[5].as_str(), users[0].as_str()], "{body}");
    let times: Vec<&str> = items
        .iter()
        .filter_map(|i| i["liked_at"].as_str())
        .collect();
    assert!(times[0] >= times[1], "{body}");
    assert_eq!(body["next_cursor"], Value::Null);
    // The same times as the who-liked list shows.
    let event = ApiEvent::new("GET", "/posts/p-among/likes").caller("auth0|viewer");
    let (_, listed, _) = call(app, event).await;
    for item in items {
        assert!(
            listed["items"].as_array().expect("items").contains(item),
            "{item} not as listed: {listed}"
        );
    }

    let many: Vec<String> = (0..101).map(|i| format!("u{i}")).collect();
    for (query, why) in [
        (format!("among={}", many.join(",")), "101 ids"),
        ("among=".to_owned(), "no id"),
        ("among=a%20b".to_owned(), "a bad id"),
        (format!("among={}&limit=5", users[0]), "with a limit"),
        (format!("among={}&cursor=x", users[0]), "with a cursor"),
    ] {
        let (s, body) = among(app, &query).await;
        assert_eq!(s, 400, "{why}: {body}");
        let code = body["error"]["code"].as_str().unwrap_or("");
        assert!(
            code == "invalid_among" || code == "invalid_id",
            "{why}: {body}"
        );
    }
    let hundred: Vec<String> = (0..100).map(|i| format!("u{i}")).collect();
    let (s, body) = among(app, &format!("among={}", hundred.join(","))).await;
    assert_eq!((s, &body["items"]), (200, &json!([])), "{body}");
}

#[tokio::test]
async fn among_names_exactly_those_of_the_named_who_like_the_post_in_memory() {
    let app = likes_api::App::new(MemoryLikes::default(), MemoryCounts::default());
    scenario(&app).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn among_names_exactly_those_of_the_named_who_like_the_post_on_dynamodb() {
    let t = Tables::new().await;
    scenario(&t.app()).await;
}
