//! The product's decisions, as the erase queue delivers them (EventBridge's envelope, whole),
//! run by the worker as its role against the emulator: a deleted post loses every like and no
//! other post does, again on redelivery; a deleted account's likes made up to the deletion go
//! at once and its last sweep is queued for when every old token has expired; a malformed
//! event changes nothing and is set aside, unchanged, on the failure queue.

use std::sync::Arc;
use std::time::Duration;

use erase_worker::{Outcome, Worker};
use likes_aws::DynamoLikes;
use likes_core::erase_job::{EraseJob, EraseQueue};
use likes_core::product_event::{
    POST_DELETED, POST_POLICY_CHANGED, USER_BLOCKED, USER_DELETED, USER_UNBLOCKED,
};
use likes_core::{PostId, UserId};
use likes_harness::{lab, RecordedQueue, Tables};
use serde_json::{json, Value};

fn worker(
    t: &Tables,
    queue: &Arc<RecordedQueue>,
    rejects: &Arc<RecordedQueue>,
) -> Worker<DynamoLikes> {
    Worker {
        likes: t.as_role(lab::roles::WORKER).likes(),
        empty_sweeps: 1,
        pause: Duration::from_millis(50),
        settle: Duration::ZERO,
        requeue: Some(Arc::clone(queue) as Arc<dyn EraseQueue>),
        erasures: None,
        token_lifetime: Duration::from_secs(3600),
        rejects: Some(Arc::clone(rejects) as Arc<dyn EraseQueue>),
        suspensions: None,
        policies: None,
        blocks: None,
    }
}

/// An event as EventBridge puts it on an SQS queue.
fn event(id: &str, detail_type: &str, detail: Value) -> String {
    json!({
        "version": "0", "id": id, "detail-type": detail_type, "source": "product",
        "account": "123456789012", "time": "2026-12-07T10:00:00Z", "region": "us-east-1",
        "resources": [], "detail": detail
    })
    .to_string()
}

fn likes_of(pairs: &[(String, String)], post: &PostId) -> usize {
    pairs.iter().filter(|(p, _)| p == post.as_str()).count()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_post_loses_every_like_and_no_other_post_does() {
    let t = Tables::new().await;
    let (gone, kept) = (PostId::new_random(), PostId::new_random());
    for i in 0..30 {
        let user = UserId::parse(&format!("u-{i}")).expect("an id");
        t.put_like(&gone, &user, "2026-12-07T09:00:00.000Z").await;
        t.put_like(&kept, &user, "2026-12-07T09:00:00.000Z").await;
    }
    let (queue, rejects) = (Arc::default(), Arc::default());
    let w = worker(&t, &queue, &rejects);
    let body = event(
        "e-post",
        POST_DELETED,
        json!({"post_id": gone.as_str(), "at": "2026-12-07T10:00:00Z"}),
    );
    assert_eq!(w.run_job(&body, None).await, Outcome::Erased(30));
    let pairs = t.like_pairs().await;
    assert_eq!((likes_of(&pairs, &gone), likes_of(&pairs, &kept)), (0, 30));
    // Delivered again: nothing left to do, and nothing else touched.
    assert_eq!(w.run_job(&body, None).await, Outcome::Erased(0));
    assert_eq!(likes_of(&t.like_pairs().await, &kept), 30);
    assert!(rejects.forwarded().is_empty() && queue.jobs().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_account_is_erased_up_to_its_deletion_and_its_last_sweep_queued() {
    let t = Tables::new().await;
    let (user, other) = (UserId::new_random(), UserId::new_random());
    let posts: Vec<PostId> = (0..5).map(|_| PostId::new_random()).collect();
    for post in &posts {
        t.put_like(post, &user, "2026-12-07T09:00:00.000Z").await;
        t.put_like(post, &other, "2026-12-07T09:00:00.000Z").await;
    }
    // Made after the deletion (with a token issued before it): the last sweep's.
    t.put_like(&posts[0], &user, "2026-12-07T10:30:00.000Z")
        .await;
    let (queue, rejects) = (Arc::default(), Arc::default());
    let w = worker(&t, &queue, &rejects);
    let body = event(
        "e-user",
        USER_DELETED,
        json!({"user_id": user.as_str(), "at": "2026-12-07T11:00:00+01:00"}),
    );
    assert_eq!(w.run_job(&body, None).await, Outcome::Erased(4));
    let pairs = t.like_pairs().await;
    let of = |u: &UserId| pairs.iter().filter(|(_, x)| x == u.as_str()).count();
    assert_eq!((of(&user), of(&other)), (1, 5), "{pairs:?}");
    assert_eq!(
        queue.jobs(),
        vec![EraseJob {
            job_id: "deleted-e-user".into(),
            user_id: user.clone(),
            requested_at: "2026-12-07T10:00:00.000Z".into(),
            account_deleted: true,
        }],
        "the last sweep, for when every token issued before the deletion has expired"
    );
}

/// A post deleted just now: erased at once, and the event comes back once the settle past the
/// deletion has passed, for a like stamped before it that was still being written; then done.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_post_deleted_just_now_is_erased_again_after_the_settle() {
    let t = Tables::new().await;
    let post = PostId::new_random();
    t.put_like(&post, &UserId::new_random(), "2026-12-07T09:00:00.000Z")
        .await;
    let (queue, rejects) = (Arc::default(), Arc::default());
    let w = worker(&t, &queue, &rejects);
    let now = likes_core::time::now_ts();
    let body = event(
        "e-now",
        POST_DELETED,
        json!({"post_id": post.as_str(), "at": now}),
    );
    let first = w.run_job(&body, None).await;
    let Outcome::Deferred(wait) = first else {
        panic!("expected the event deferred past the settle, got {first:?}");
    };
    assert!(
        wait > Duration::ZERO && wait <= likes_core::erase_job::SETTLE,
        "{wait:?}"
    );
    assert_eq!(queue.forwarded_with_delays(), vec![(body.clone(), wait)]);
    assert_eq!(likes_of(&t.like_pairs().await, &post), 0);
    // A like stamped before the deletion lands late; the event's return erases it.
    t.put_like(&post, &UserId::new_random(), &now).await;
    let later = event(
        "e-now",
        POST_DELETED,
        json!({"post_id": post.as_str(), "at": "2026-12-07T10:00:00Z"}),
    );
    assert_eq!(w.run_job(&later, None).await, Outcome::Erased(1));
}

/// A deletion dated ahead (a skewed clock, a scheduled deletion) does not hold the worker until
/// then: likes up to now go at once, and the last sweep, queued, covers the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_deleted_ahead_of_now_is_erased_up_to_now_without_waiting() {
    let t = Tables::new().await;
    let user = UserId::new_random();
    t.put_like(&PostId::new_random(), &user, "2026-12-07T09:00:00.000Z")
        .await;
    let (queue, rejects) = (Arc::default(), Arc::default());
    let mut w = worker(&t, &queue, &rejects);
    w.settle = Duration::from_secs(1);
    let ahead = likes_core::time::format_ts(chrono::Utc::now() + chrono::Duration::hours(1));
    let body = event(
        "e-ahead",
        USER_DELETED,
        json!({"user_id": user.as_str(), "at": ahead}),
    );
    let outcome = tokio::time::timeout(Duration::from_secs(30), w.run_job(&body, None))
        .await
        .expect("no wait for the deletion's time");
    assert_eq!(outcome, Outcome::Erased(1));
    let last = queue.jobs();
    assert_eq!(last.len(), 1);
    assert_eq!(
        (last[0].requested_at.as_str(), last[0].account_deleted),
        (ahead.as_str(), true)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_malformed_event_changes_nothing_and_is_set_aside_unchanged() {
    let t = Tables::new().await;
    let user = UserId::new_random();
    let post = PostId::new_random();
    t.put_like(&post, &user, "2026-12-07T09:00:00.000Z").await;
    let (queue, rejects) = (Arc::default(), Arc::default());
    let w = worker(&t, &queue, &rejects);
    let bodies = [
        event("e-1", USER_DELETED, json!({"user_id": user.as_str()})),
        event(
            "e-2",
            POST_DELETED,
            json!({"post_id": post.as_str(), "at": "soon"}),
        ),
        event(
            "e-3",
            "UserDeletedd",
            json!({"user_id": user.as_str(), "at": "2026-12-07T10:00:00Z"}),
        ),
    ];
    for body in &bodies {
        let outcome = w.run_job(body, None).await;
        assert!(matches!(outcome, Outcome::Rejected(_)), "{outcome:?}");
    }
    assert_eq!(rejects.forwarded(), bodies.to_vec());
    assert_eq!(t.like_pairs().await.len(), 1);
    assert!(queue.jobs().is_empty());
    // With nowhere to set it aside, it is retried (the queue's redrive moves it in time).
    let plain = Worker {
        rejects: None,
        ..worker(&t, &queue, &rejects)
    };
    assert!(matches!(
        plain.run_job(&bodies[0], None).await,
        Outcome::Retry(_)
    ));
}

/// The schemas in `schemas/` and the worker agree: what the worker acts on validates, and the
/// malformed details above (a missing field, a time that is not one, an id outside the grammar)
/// do not.
#[test]
fn the_schemas_accept_what_the_worker_acts_on_and_refuse_the_malformed() {
    let schema = |file: &str| {
        let path = format!("{}/schemas/{file}", env!("CARGO_MANIFEST_DIR"));
        let text = std::fs::read_to_string(&path).expect("a schema");
        let schema: Value = serde_json::from_str(&text).expect("JSON");
        jsonschema::options()
            .should_validate_formats(true)
            .build(&schema)
            .expect("a valid schema")
    };
    let (user, post) = (schema("user-deleted.json"), schema("post-deleted.json"));
    let moderated = schema("user-suspended.json");
    let policy = schema("post-policy-changed.json");
    let block = schema("user-blocked.json");
    for detail_type in [
        likes_core::product_event::USER_SUSPENDED,
        likes_core::product_event::USER_RESTORED,
    ] {
        let detail = json!({"user_id": "auth0|u-1", "at": "2026-12-07T11:00:00Z"});
        assert!(moderated.is_valid(&detail));
        let body = event("e", detail_type, detail);
        assert!(matches!(
            likes_core::product_event::read(&body),
            Some(Ok(_))
        ));
        let bad = json!({"user_id": "auth0|u-1", "at": "later"});
        assert!(!moderated.is_valid(&bad));
        let body = event("e", detail_type, bad);
        assert!(matches!(
            likes_core::product_event::read(&body),
            Some(Err(_))
        ));
    }
    let at = "2026-12-07T11:00:00+01:00";
    for (schema, detail_type, detail) in [
        (
            &user,
            USER_DELETED,
            json!({"user_id": "auth0|u-1", "at": at}),
        ),
        (
            &post,
            POST_DELETED,
            json!({"post_id": "p.1", "at": at, "by": "moderator"}),
        ),
        (
            &policy,
            POST_POLICY_CHANGED,
            json!({"post_id": "p.1", "author_id": "auth0|a", "likes": "off", "counts": "author", "likers": "public", "at": at}),
        ),
        (
            &policy,
            POST_POLICY_CHANGED,
            json!({"post_id": "p.1", "author_id": "auth0|a", "at": at}),
        ),
        (
            &block,
            USER_BLOCKED,
            json!({"blocker_id": "auth0|a", "blocked_id": "auth0|b", "at": at}),
        ),
        (
            &block,
            USER_UNBLOCKED,
            json!({"blocker_id": "auth0|a", "blocked_id": "auth0|b", "at": at}),
        ),
    ] {
        assert!(schema.is_valid(&detail), "{detail}");
        let body = event("e", detail_type, detail.clone());
        assert!(
            matches!(likes_core::product_event::read(&body), Some(Ok(_))),
            "{detail}"
        );
    }
    for (schema, detail_type, detail) in [
        (&user, USER_DELETED, json!({"user_id": "u"})),
        (&user, USER_DELETED, json!({"user_id": "a b", "at": at})),
        (&post, POST_DELETED, json!({"post_id": "p", "at": "soon"})),
        (
            &policy,
            POST_POLICY_CHANGED,
            json!({"post_id": "p", "author_id": "a", "likes": "maybe", "at": at}),
        ),
        (
            &policy,
            POST_POLICY_CHANGED,
            json!({"post_id": "p", "counts": "author", "at": at}),
        ),
        (
            &block,
            USER_BLOCKED,
            json!({"blocker_id": "a", "blocked_id": "b c", "at": at}),
        ),
    ] {
        assert!(!schema.is_valid(&detail), "{detail}");
        let body = event("e", detail_type, detail.clone());
        assert!(
            matches!(likes_core::product_event::read(&body), Some(Err(_))),
            "{detail}"
        );
    }
}
