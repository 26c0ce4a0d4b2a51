//! The posts' policies (`likes_core::policy`) on both stores: the latest policy wins whatever
//! the order, a redelivery is the same one, only a post's first policy counts it. And the API
//! follows them within its cache time: likes off refuses likes and reactions (`403
//! likes_disabled`, nothing written) but not unlikes; counts kept by the author show `null` and
//! `count_hidden` to anyone else in every route that shows counts; private likers answer `403
//! likers_private` to anyone but the author; the defaults apply to a post without a policy; and
//! a deployment without policies reads nothing more. And blocks: the latest decision about a
//! pair wins on both stores; a blocked user cannot like or react to the blocker's posts (`403
//! blocked`) and is left out of the blocker's own lists of likers and reactors.

use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::Arc;

use likes_api::policies::POLICY_TTL;
use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::{DynamoBlocks, DynamoPolicies};
use likes_core::block::Blocks;
use likes_core::erase_job::Call;
use likes_core::moderation::Decided;
use likes_core::policy::{Audience, Defaults, Policies, Policy};
use likes_core::store::memory::{MemoryBlocks, MemoryCounts, MemoryLikes, MemoryPolicies};
use likes_core::{LikesStore, PostId, Reactions, UserId};
use likes_harness::{call, call_as, like_path};
use likes_sim::apigw::ApiEvent;
use serde_json::{json, Value};

const T1: &str = "2026-12-07T10:00:00.000Z";
const T2: &str = "2026-12-07T11:00:00.000Z";

fn policy(author: &str, likes_on: bool, counts: Audience, likers: Audience) -> Policy {
    Policy {
        author: UserId::parse(author).expect("an id"),
        likes_on,
        counts,
        likers,
    }
}

async fn follows_the_rules(store: &dyn Policies) {
    let (p, q) = (PostId::new_random(), PostId::new_random());
    let open = policy("auth0|a", true, Audience::Public, Audience::Public);
    let closed = policy("auth0|a", false, Audience::Author, Audience::Author);
    assert_eq!(store.policy_count().await.unwrap(), 0);
    assert_eq!(store.policy(&p).await.unwrap(), None);
    assert_eq!(
        store.decide(&p, &closed, T2).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert_eq!(store.decide(&p, &closed, T2).await.unwrap(), Decided::Same);
    // Older than the recorded one: nothing.
    assert_eq!(store.decide(&p, &open, T1).await.unwrap(), Decided::Older);
    assert_eq!(store.policy(&p).await.unwrap(), Some(closed.clone()));
    assert_eq!(
        store.decide(&q, &open, T1).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert_eq!(
        store.decide(&q, &closed, T2).await.unwrap(),
        Decided::Newer { flipped: false }
    );
    assert_eq!(store.policy(&q).await.unwrap(), Some(closed));
    assert_eq!(store.policy_count().await.unwrap(), 2);
}

#[tokio::test]
async fn the_latest_policy_wins_in_memory() {
    follows_the_rules(&MemoryPolicies::default()).await;
}

#[tokio::test]
async fn the_latest_policy_wins_on_dynamodb() {
    let client = likes_harness::client().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    follows_the_rules(&DynamoPolicies::new(client, table)).await;
}

/// Counts the gate's reads.
#[derive(Default)]
struct Counted {
    inner: MemoryPolicies,
    counts: AtomicUsize,
    posts: AtomicUsize,
}

impl Policies for Counted {
    fn decide<'a>(&'a self, post: &'a PostId, p: &'a Policy, at: &'a str) -> Call<'a, Decided> {
        self.inner.decide(post, p, at)
    }

    fn policy<'a>(&'a self, post: &'a PostId) -> Call<'a, Option<Policy>> {
        self.posts.fetch_add(1, SeqCst);
        self.inner.policy(post)
    }

    fn policy_count(&self) -> Call<'_, i64> {
        self.counts.fetch_add(1, SeqCst);
        self.inner.policy_count()
    }
}

fn app(store: &Arc<Counted>, defaults: Defaults) -> likes_api::App<MemoryLikes, MemoryCounts> {
    let kinds = likes_core::Kinds::parse("like,love").expect("kinds");
    likes_api::App::new(MemoryLikes::default(), MemoryCounts::default())
        .with_reactions(Reactions {
            kinds,
            mode: likes_core::Mode::Multi,
        })
        .with_policies(Some(store.clone() as Arc<dyn Policies>), defaults)
}

/// `GET /likes/summary?post_ids=…` as `me`.
async fn summary(
    app: &likes_api::App<MemoryLikes, MemoryCounts>,
    me: &str,
    posts: &[&PostId],
) -> (u16, Value) {
    let ids: Vec<String> = posts.iter().map(|p| p.to_string()).collect();
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&format!("post_ids={}", ids.join(",")))
        .caller(me);
    let (s, b, _) = call(app, event).await;
    (s, b)
}

fn code(body: &Value) -> &Value {
    &body["error"]["code"]
}

#[tokio::test(start_paused = true)]
async fn each_policy_is_followed_within_its_cache_time() {
    let store = Arc::new(Counted::default());
    let app = app(&store, Defaults::default());
    let (author, fan) = ("auth0|author", "auth0|fan");
    let post = PostId::new_random();
    let likers = format!("/posts/{post}/likes");
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), fan).await;
    assert_eq!(s, 200, "{b}");

    // Likes off: refused, nothing written; an unlike still works. Counts and likers the
    // author's alone.
    let closed = policy(author, false, Audience::Author, Audience::Author);
    store.decide(&post, &closed, T1).await.unwrap();
    tokio::time::advance(POLICY_TTL).await;
    let other = PostId::new_random();
    store
        .decide(
            &other,
            &policy(author, true, Audience::Public, Audience::Public),
            T1,
        )
        .await
        .unwrap();
    for path in [like_path(&post), format!("/posts/{post}/reactions/love")] {
        let (s, b, _) = call_as(&app, "PUT", &path, author).await;
        assert_eq!(
            (s, code(&b)),
            (403, &json!("likes_disabled")),
            "{path}: {b}"
        );
    }
    let me = UserId::parse(author).unwrap();
    assert_eq!(
        app.likes.liked_at(&post, &me).await.unwrap(),
        None,
        "nothing written"
    );
    let (s, b, _) = call_as(&app, "PUT", &like_path(&other), author).await;
    assert_eq!(s, 200, "another post takes likes: {b}");
    let (_, _, h) = call_as(&app, "GET", &format!("/posts/{other}/likes/count"), fan).await;
    let cache = h.get("cache-control").and_then(|v| v.to_str().ok());
    assert_eq!(cache, Some("max-age=1"), "a public count stays shareable");

    for (who, hidden) in [(fan, true), (author, false)] {
        let (s, b, h) = call_as(&app, "GET", &format!("/posts/{post}/likes/count"), who).await;
        assert_eq!(s, 200, "{b}");
        // Whoever asks, the answer is theirs alone: no shared cache hands the author's on.
        let cache = h.get("cache-control").and_then(|v| v.to_str().ok());
        assert!(
            cache.is_some_and(|c| c.contains("private")),
            "{who}: {cache:?}"
        );
        assert_eq!(b["like_count"].is_null(), hidden, "{who}: {b}");
        assert_eq!(b["count_hidden"] == json!(true), hidden, "{who}: {b}");
        let (s, b, _) = call_as(&app, "GET", &format!("/posts/{post}/reactions"), who).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            (b["counts"].is_null(), b["total"].is_null()),
            (hidden, hidden),
            "{b}"
        );
        let (s, b) = summary(&app, who, &[&post, &other]).await;
        assert_eq!(s, 200, "{b}");
        let items = b["items"].as_array().expect("items");
        assert_eq!(items[0]["like_count"].is_null(), hidden, "{who}: {b}");
        assert_eq!(items[0]["count_hidden"] == json!(true), hidden, "{b}");
        assert_eq!(
            items[0]["liked_by_me"],
            json!(who == fan),
            "their own still shown: {b}"
        );
        // The other post's count is public (no aggregator here: its number is 0).
        assert!(items[1]["like_count"].is_number(), "{b}");
        assert!(items[1].get("count_hidden").is_none(), "{b}");
        let (s, b, _) = call_as(&app, "GET", &likers, who).await;
        match hidden {
            true => assert_eq!((s, code(&b)), (403, &json!("likers_private")), "{b}"),
            false => assert_eq!(b["items"][0]["user_id"], json!(fan), "{b}"),
        }
        let reactors = format!("/posts/{post}/reactions/love/users");
        let (s, _, _) = call_as(&app, "GET", &reactors, who).await;
        assert_eq!(s, if hidden { 403 } else { 200 });
    }
    let (s, b, _) = call_as(&app, "DELETE", &like_path(&post), fan).await;
    assert_eq!(
        (s, &b["changed"]),
        (200, &json!(true)),
        "an unlike still works: {b}"
    );

    // Opened again, later: followed once the cache time has passed.
    let open = policy(author, true, Audience::Public, Audience::Public);
    store.decide(&post, &open, T2).await.unwrap();
    tokio::time::advance(POLICY_TTL).await;
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), fan).await;
    assert_eq!(s, 200, "{b}");
    let (s, b, _) = call_as(&app, "GET", &likers, author).await;
    assert_eq!(s, 200, "{b}");
}

/// Without any policy, an environment reads the count of posts with one once per cache time
/// and no post's policy: a like or a summary costs nothing more. Defaults apply to a post
/// without a policy, at no read.
#[tokio::test(start_paused = true)]
async fn no_policy_costs_one_read_per_cache_time_and_the_defaults_apply() {
    let store = Arc::new(Counted::default());
    let hidden = Defaults {
        counts: Audience::Author,
        likers: Audience::Author,
    };
    let app = app(&store, hidden);
    let post = PostId::new_random();
    for _ in 0..20 {
        let (s, b, _) = call_as(&app, "PUT", &like_path(&post), "auth0|fan").await;
        assert_eq!(s, 200, "{b}");
        let (s, b) = summary(&app, "auth0|fan", &[&post]).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            b["items"][0]["count_hidden"],
            json!(true),
            "the default: {b}"
        );
    }
    assert_eq!(
        (store.counts.load(SeqCst), store.posts.load(SeqCst)),
        (1, 0)
    );
    let (s, b, _) = call_as(&app, "GET", &format!("/posts/{post}/likes"), "auth0|fan").await;
    assert_eq!((s, code(&b)), (403, &json!("likers_private")), "{b}");
}

async fn blocks_follow_the_rules(store: &dyn Blocks) {
    let (a, b, c) = (
        UserId::new_random(),
        UserId::new_random(),
        UserId::new_random(),
    );
    assert_eq!(store.pair_count().await.unwrap(), 0);
    assert!(!store.blocks(&a, &b).await.unwrap());
    assert_eq!(
        store.decide(&a, &b, true, T2).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert_eq!(store.decide(&a, &b, true, T2).await.unwrap(), Decided::Same);
    // An unblock older than the block: nothing.
    assert_eq!(
        store.decide(&a, &b, false, T1).await.unwrap(),
        Decided::Older
    );
    assert!(store.blocks(&a, &b).await.unwrap());
    assert!(!store.blocks(&b, &a).await.unwrap(), "a block is one way");
    assert!(!store.blocks(&a, &c).await.unwrap());
    store.decide(&a, &c, false, T1).await.unwrap();
    assert_eq!(store.pair_count().await.unwrap(), 2);
}

#[tokio::test]
async fn the_latest_block_wins_on_both_stores() {
    blocks_follow_the_rules(&MemoryBlocks::default()).await;
    let client = likes_harness::client().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    blocks_follow_the_rules(&DynamoBlocks::new(client, table)).await;
}

/// A blocked user's like and reaction of the blocker's post (its author known from its
/// policy) are refused, nothing written, while others' are taken; the blocker's own lists of
/// likers and reactors leave the blocked user out (and page on past them); anyone else's lists
/// and every count are as before; an unblock is followed within the cache time.
#[tokio::test(start_paused = true)]
async fn a_blocked_user_cannot_like_the_blockers_posts_nor_shows_in_the_blockers_lists() {
    let policies = Arc::new(Counted::default());
    let blocks = Arc::new(MemoryBlocks::default());
    let app = app(&policies, Defaults::default()).with_blocks(blocks.clone());
    let (author, troll, fan) = ("auth0|author", "auth0|troll", "auth0|fan");
    let post = PostId::new_random();
    for who in [troll, fan] {
        let (s, b, _) = call_as(&app, "PUT", &like_path(&post), who).await;
        assert_eq!(s, 200, "{b}");
        let (s, b, _) = call_as(&app, "PUT", &format!("/posts/{post}/reactions/love"), who).await;
        assert_eq!(s, 200, "{b}");
    }
    let open = policy(author, true, Audience::Public, Audience::Public);
    policies.decide(&post, &open, T1).await.unwrap();
    let (a, t) = (
        UserId::parse(author).unwrap(),
        UserId::parse(troll).unwrap(),
    );
    blocks.decide(&a, &t, true, T1).await.unwrap();
    tokio::time::advance(POLICY_TTL).await;

    let (s, b, _) = call_as(&app, "DELETE", &like_path(&post), troll).await;
    assert_eq!(s, 200, "an unlike is not refused: {b}");
    for path in [like_path(&post), format!("/posts/{post}/reactions/love")] {
        let (s, b, _) = call_as(&app, "PUT", &path, troll).await;
        assert_eq!((s, code(&b)), (403, &json!("blocked")), "{path}: {b}");
    }
    assert_eq!(
        app.likes.liked_at(&post, &t).await.unwrap(),
        None,
        "nothing written"
    );
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), fan).await;
    assert_eq!(s, 200, "{b}");
    // Their reaction stays (a block changes no count); the blocker does not see them.
    let listed = |b: &Value| -> Vec<Value> {
        let items = b["items"].as_array().cloned().unwrap_or_default();
        items.iter().map(|i| i["user_id"].clone()).collect()
    };
    let reactors = format!("/posts/{post}/reactions/love/users");
    let (_, b, _) = call_as(&app, "GET", &reactors, author).await;
    assert_eq!(listed(&b), [json!(fan)], "{b}");
    let (_, b, _) = call_as(&app, "GET", &reactors, fan).await;
    assert_eq!(listed(&b).len(), 2, "anyone else sees both: {b}");
    // A page of one: the blocked user's page is empty, and the listing goes on past it.
    let (s, b, _) = call(
        &app,
        ApiEvent::new("GET", &reactors)
            .query("limit=1")
            .caller(author),
    )
    .await;
    assert_eq!(s, 200, "{b}");
    let mut seen = listed(&b);
    if let Some(cursor) = b["next_cursor"].as_str() {
        let query = format!("limit=1&cursor={cursor}");
        let (_, b, _) = call(
            &app,
            ApiEvent::new("GET", &reactors).query(&query).caller(author),
        )
        .await;
        seen.extend(listed(&b));
    }
    assert_eq!(seen, [json!(fan)]);

    blocks.decide(&a, &t, false, T2).await.unwrap();
    tokio::time::advance(POLICY_TTL).await;
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), troll).await;
    assert_eq!(s, 200, "unblocked: {b}");
    let (_, b, _) = call_as(&app, "GET", &format!("/posts/{post}/likes"), author).await;
    assert_eq!(listed(&b).len(), 2, "{b}");
}
