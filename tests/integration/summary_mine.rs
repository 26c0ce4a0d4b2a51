//! What a summary's "mine" promises under each `SummaryMine` (docs/api.md), where DynamoDB's
//! eventual reads trail (the lab's lagging tables: index queries served from a copy that trails
//! by its lag, writes applied to it in order):
//! - `fast` with `since`: a write shows once the caller's index has it — not at once (the
//!   lab's lag is seen, which is what makes the rest mean something), and within the poll's
//!   deadline; an unlike alike; only what was made since `since` less the skew is read;
//! - `fast` without `since`, and `strong`: every write acknowledged before the request;
//! - past its cap, the index read gives way to the posts' keys.
//!
//! The API runs as its role: the lab enforces the template's policy, so a query of an index the
//! role may not read fails here as it would on AWS.

use chrono::{Duration, Utc};
use likes_aws::env::SummaryMine;
use likes_core::time::format_ts;
use likes_core::{Kinds, LikesStore, Mode, PostId, Reactions, ReactionsStore, UserId, WriteToken};
use likes_harness::{call, call_as, eventually, like_path, ApiEvent, Tables};
use serde_json::{json, Value};

fn reactions() -> Reactions {
    Reactions {
        kinds: Kinds::parse("like,love").expect("kinds"),
        mode: Mode::Multi,
    }
}

type Api = likes_api::App<likes_aws::DynamoLikes, likes_aws::DynamoCounts>;

async fn summary(app: &Api, me: &str, posts: &[&PostId], since: Option<&str>) -> Value {
    let ids: Vec<String> = posts.iter().map(|p| p.to_string()).collect();
    let mut query = format!("post_ids={}", ids.join(","));
    if let Some(since) = since {
        query.push_str(&format!("&since={since}"));
    }
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&query)
        .caller(me);
    let (s, b, _) = call(app, event).await;
    assert_eq!(s, 200, "{b}");
    b
}

/// Each post's (liked_by_me, my_reactions), in the order asked.
fn mine(summary: &Value) -> Vec<(Value, Value)> {
    let items = summary["items"].as_array().expect("items");
    items
        .iter()
        .map(|i| (i["liked_by_me"].clone(), i["my_reactions"].clone()))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fast_mine_shows_writes_once_the_index_has_them_strong_at_once() {
    let t = Tables::lagging().await;
    let fast = t
        .app()
        .with_reactions(reactions())
        .with_summary_mine(SummaryMine::Fast);
    let strong = t.app().with_reactions(reactions());
    let me = UserId::new_random().to_string();
    let (a, b, c) = (
        PostId::new_random(),
        PostId::new_random(),
        PostId::new_random(),
    );
    // The product's posts were made a minute ago.
    let since = format_ts(Utc::now() - Duration::minutes(1));
    let since = Some(since.as_str());

    for path in [
        like_path(&a),
        format!("/posts/{a}/reactions/love"),
        like_path(&b),
    ] {
        let (s, body, _) = call_as(&fast, "PUT", &path, &me).await;
        assert_eq!(s, 200, "{path}: {body}");
    }
    // b's like was the last write: the likeliest still to trail, however slow the machine.
    let at_once = summary(&fast, &me, &[&a, &b, &c], since).await;
    assert_eq!(
        mine(&at_once)[1],
        (json!(false), json!([])),
        "the lab's lag did not show, so this test proves nothing: {at_once}"
    );
    let both = vec![
        (json!(true), json!(["like", "love"])),
        (json!(true), json!(["like"])),
        (json!(false), json!([])),
    ];
    let strongly = summary(&strong, &me, &[&a, &b, &c], since).await;
    assert_eq!(
        mine(&strongly),
        both,
        "strong is read-your-writes: {strongly}"
    );
    let shown = eventually(
        "fast mine",
        || async { mine(&summary(&fast, &me, &[&a, &b, &c], since).await) },
        |m| *m == both,
    )
    .await;
    assert_eq!(shown, both);

    // Without `since`, fast reads the posts' keys: strongly, the new like at once.
    let (s, body, _) = call_as(&fast, "PUT", &like_path(&c), &me).await;
    assert_eq!(s, 200, "{body}");
    let keyed = summary(&fast, &me, &[&c], None).await;
    assert_eq!(
        mine(&keyed),
        vec![(json!(true), json!(["like"]))],
        "{keyed}"
    );

    // An unlike shows once the index has it.
    let (s, body, _) = call_as(&fast, "DELETE", &like_path(&a), &me).await;
    assert_eq!(s, 200, "{body}");
    eventually(
        "fast mine after the unlike",
        || async { mine(&summary(&fast, &me, &[&a], since).await) },
        |m| *m == vec![(json!(false), json!(["love"]))],
    )
    .await;

    // Only what was made since `since` (less the skew) is read: posts said to be made after
    // every like here cannot have been liked before they existed.
    let later = format_ts(Utc::now() + Duration::minutes(10));
    let none = summary(&fast, &me, &[&b, &c], Some(&later)).await;
    assert_eq!(mine(&none), vec![(json!(false), json!([])); 2], "{none}");

    // A bad `since` is the caller's error, and reads nothing.
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&format!("post_ids={b}&since=yesterday"))
        .caller(&me);
    let (s, body, _) = call(&fast, event).await;
    assert_eq!(
        (s, &body["error"]["code"]),
        (400, &json!("invalid_since")),
        "{body}"
    );
}

/// Past the cap the index read answers `None` (the summary then reads the posts' keys); at the
/// cap it answers every post. Both stores.
#[tokio::test]
async fn the_index_read_gives_way_past_its_cap() {
    let t = Tables::new().await;
    let likes = t.as_role(likes_harness::lab::roles::API).likes();
    let memory = likes_core::store::memory::MemoryLikes::default();
    let me = UserId::new_random();
    let posts: Vec<PostId> = (0..3).map(|_| PostId::new_random()).collect();
    let at = likes_core::time::now_ts();
    let since = format_ts(Utc::now() - Duration::minutes(1));
    let kinds = reactions().kinds;
    for post in &posts {
        likes
            .like(post, &me, &at, &WriteToken::random())
            .await
            .expect("like");
        memory
            .like(post, &me, &at, &WriteToken::random())
            .await
            .expect("like");
    }
    let dynamo_over = likes
        .held_since(&me, &since, &kinds, 2)
        .await
        .expect("read");
    let memory_over = memory
        .held_since(&me, &since, &kinds, 2)
        .await
        .expect("read");
    assert_eq!((dynamo_over, memory_over), (None, None));
    for held in [
        likes
            .held_since(&me, &since, &kinds, 3)
            .await
            .expect("read"),
        memory
            .held_since(&me, &since, &kinds, 3)
            .await
            .expect("read"),
    ] {
        let held = held.expect("within the cap");
        assert_eq!(held.len(), 3, "{held:?}");
        assert!(posts
            .iter()
            .all(|p| held.get(p).is_some_and(|k| k.len() == 1)));
    }
}
