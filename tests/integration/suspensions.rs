//! The users' moderation state (`likes_core::moderation`) on both stores: the latest decision
//! wins whatever the order (a restore older than the suspension changes nothing), a redelivery
//! is the same decision, the count of suspended users follows the flips; and the API refuses a
//! suspended caller's writes (`403 suspended`, nothing changed) while their reads answer, and
//! reads no moderation state at all while nobody is suspended.

use std::sync::Arc;

use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::DynamoSuspensions;
use likes_core::moderation::{Decided, Suspensions, GATE_TTL};
use likes_core::store::memory::{MemoryCounts, MemoryLikes, MemorySuspensions};
use likes_core::{LikesStore, PostId, UserId};
use likes_harness::{call_as, like_path};
use serde_json::json;

const T1: &str = "2026-12-07T10:00:00.000Z";
const T2: &str = "2026-12-07T11:00:00.000Z";
const T3: &str = "2026-12-07T12:00:00.000Z";

async fn follows_the_rules(store: &dyn Suspensions) {
    let (u, v) = (UserId::new_random(), UserId::new_random());
    assert_eq!(store.suspended_count().await.unwrap(), 0);
    assert_eq!(
        store.decide(&u, true, T2).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert_eq!(store.decide(&u, true, T2).await.unwrap(), Decided::Same);
    // A restore older than the suspension: nothing.
    assert_eq!(store.decide(&u, false, T1).await.unwrap(), Decided::Older);
    assert!(store.is_suspended(&u).await.unwrap());
    assert_eq!(
        store.decide(&v, true, T1).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert_eq!(store.suspended_count().await.unwrap(), 2);
    assert_eq!(
        store.decide(&u, false, T3).await.unwrap(),
        Decided::Newer { flipped: true }
    );
    assert!(!store.is_suspended(&u).await.unwrap());
    assert_eq!(store.suspended_count().await.unwrap(), 1);
    // A later suspension of one already suspended: recorded, the count unchanged.
    assert_eq!(
        store.decide(&v, true, T2).await.unwrap(),
        Decided::Newer { flipped: false }
    );
    assert_eq!(store.suspended_count().await.unwrap(), 1);
}

#[tokio::test]
async fn the_latest_decision_wins_in_memory() {
    follows_the_rules(&MemorySuspensions::default()).await;
}

#[tokio::test]
async fn the_latest_decision_wins_on_dynamodb() {
    let client = likes_harness::client().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    follows_the_rules(&DynamoSuspensions::new(client, table)).await;
}

/// A suspended caller's like, unlike and reaction are 403 `suspended` and change nothing; their
/// reads answer; another caller is not refused. The refusal follows the recorded state within
/// the gate's TTL.
#[tokio::test(start_paused = true)]
async fn a_suspended_callers_writes_are_refused_and_change_nothing() {
    let store = Arc::new(MemorySuspensions::default());
    let app = likes_api::App::new(MemoryLikes::default(), MemoryCounts::default())
        .with_suspensions(store.clone());
    let (me, other) = ("auth0|suspended-caller", "auth0|bystander");
    let post = PostId::new_random();
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), me).await;
    assert_eq!(s, 200, "{b}");

    let user = UserId::parse(me).unwrap();
    store.decide(&user, true, T1).await.unwrap();
    tokio::time::advance(GATE_TTL).await;
    for (method, path) in [
        ("DELETE", like_path(&post)),
        ("PUT", like_path(&PostId::new_random())),
    ] {
        let (s, b, _) = call_as(&app, method, &path, me).await;
        assert_eq!((s, &b["error"]["code"]), (403, &json!("suspended")), "{b}");
    }
    assert!(
        app.likes.liked_at(&post, &user).await.unwrap().is_some(),
        "nothing changed"
    );
    let (s, b, _) = call_as(&app, "GET", &like_path(&post), me).await;
    assert_eq!(s, 200, "their reads answer: {b}");
    let (s, b, _) = call_as(&app, "PUT", &like_path(&post), other).await;
    assert_eq!(s, 200, "{b}");

    store.decide(&user, false, T2).await.unwrap();
    tokio::time::advance(GATE_TTL).await;
    let (s, b, _) = call_as(&app, "DELETE", &like_path(&post), me).await;
    assert_eq!(s, 200, "restored: {b}");
}

/// Counts the gate's reads.
#[derive(Default)]
struct Counted {
    inner: MemorySuspensions,
    counts: std::sync::atomic::AtomicUsize,
    users: std::sync::atomic::AtomicUsize,
}

impl Suspensions for Counted {
    fn decide<'a>(
        &'a self,
        user: &'a UserId,
        suspended: bool,
        at: &'a str,
    ) -> likes_core::erase_job::Call<'a, Decided> {
        self.inner.decide(user, suspended, at)
    }

    fn is_suspended<'a>(&'a self, user: &'a UserId) -> likes_core::erase_job::Call<'a, bool> {
        self.users.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.is_suspended(user)
    }

    fn suspended_count(&self) -> likes_core::erase_job::Call<'_, i64> {
        self.counts
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        self.inner.suspended_count()
    }
}

/// While nobody is suspended, an environment reads the count once per TTL and no user's state:
/// a like costs nothing more. Once someone is, each writer's state once per TTL.
#[tokio::test(start_paused = true)]
async fn nobody_suspended_costs_one_read_per_ttl_per_environment() {
    use std::sync::atomic::Ordering::SeqCst;
    let store = Arc::new(Counted::default());
    let app = likes_api::App::new(MemoryLikes::default(), MemoryCounts::default())
        .with_suspensions(store.clone());
    for i in 0..50 {
        let (s, b, _) = call_as(
            &app,
            "PUT",
            &like_path(&PostId::new_random()),
            &format!("u{i}"),
        )
        .await;
        assert_eq!(s, 200, "{b}");
    }
    assert_eq!(
        (store.counts.load(SeqCst), store.users.load(SeqCst)),
        (1, 0)
    );
    store
        .decide(&UserId::parse("someone-else").unwrap(), true, T1)
        .await
        .unwrap();
    tokio::time::advance(GATE_TTL).await;
    for _ in 0..10 {
        let (s, b, _) = call_as(&app, "PUT", &like_path(&PostId::new_random()), "u1").await;
        assert_eq!(s, 200, "{b}");
    }
    assert_eq!(
        (store.counts.load(SeqCst), store.users.load(SeqCst)),
        (2, 1)
    );
}
