//! Lost answers of every kind, and late writes, from the network (the lab in front of the
//! emulator), not from an interceptor: the write reached DynamoDB and was applied, and the
//! client saw a reset connection, a closed one, its attempt timing out, or a 5xx. The API must
//! answer as the module docs of `likes_aws::dynamo::likes::write` promise: a like settles by
//! its own token (200, `changed: true`), an unlike says its outcome is unknown (503), a named
//! request settles by its marker; never a 500, never a second effect. A call reset before it
//! was applied is a 503 that a retry makes good.
//!
//! Late writes: the promise rests on a bound, stated in the README — a write whose answer was
//! lost is applied within its attempt's timeout (3 s) or never. Within it, a write held and
//! applied before the settle read is found. Beyond it the promise breaks, and the test shows
//! how: a like applied after its own 503 and after the user's later unlike undoes that unlike.

use std::time::Duration;

use likes_core::{PostId, UserId};
use likes_harness::lab::{lab, roles};
use likes_harness::{call, call_as, like_path, ApiEvent, Reply, Tables};
use likes_lab::{Fault, FaultRule};
use serde_json::Value;

fn strike(
    t: &Tables,
    operation: &str,
    fault: Fault,
) -> std::sync::Arc<std::sync::atomic::AtomicUsize> {
    let mut rule = FaultRule::once(operation, &t.likes_table, fault);
    rule.identity = Some(roles::API.to_owned());
    lab().add_fault(rule)
}

fn struck(n: &std::sync::atomic::AtomicUsize) -> usize {
    n.load(std::sync::atomic::Ordering::SeqCst)
}

async fn liked(t: &Tables, post: &PostId, sub: &str) -> bool {
    let (s, b, _) = call_as(&t.app(), "GET", &like_path(post), sub).await;
    assert_eq!(s, 200, "{b}");
    b["liked"] == Value::Bool(true)
}

fn is_outcome_unknown(r: &Reply) -> bool {
    r.0 == 503 && r.1["error"]["code"] == "outcome_unknown"
}

const APPLIED_THEN_LOST: [Fault; 4] = [
    Fault::Reset,
    Fault::Close,
    Fault::Timeout,
    Fault::ServerError,
];

/// A like applied and its answer lost, each way: found by its token, 200 `changed: true`.
/// Its unlike applied and its answer lost: 503 `outcome_unknown`, and it did apply, once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_kind_of_lost_answer_is_settled_or_said_unknown_never_a_500() {
    let t = Tables::lagging().await;
    for fault in APPLIED_THEN_LOST {
        let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
        let hit = strike(&t, "PutItem", fault.clone());
        let (s, b, _) = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
        assert_eq!(struck(&hit), 1, "{fault:?} struck the like");
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{fault:?}: {b}"
        );
        assert!(liked(&t, &post, &sub).await);
        let hit = strike(&t, "DeleteItem", fault.clone());
        let unlike = call_as(&t.app(), "DELETE", &like_path(&post), &sub).await;
        assert_eq!(struck(&hit), 1, "{fault:?} struck the unlike");
        assert!(is_outcome_unknown(&unlike), "{fault:?}: {:?}", unlike.1);
        assert!(
            !liked(&t, &post, &sub).await,
            "{fault:?}: the unlike applied"
        );
    }
    assert!(t.like_pairs().await.is_empty());
}

/// A named like (`Idempotency-Key`) applied and its answer lost, each way: settled by its
/// marker; its retry with the same key is answered as the first and changes nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_request_whose_answer_was_lost_settles_by_its_marker() {
    let t = Tables::lagging().await;
    for fault in APPLIED_THEN_LOST {
        let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
        let key = format!("k-{}", UserId::new_random());
        let named = || {
            ApiEvent::new("PUT", &like_path(&post))
                .caller(&sub)
                .header("Idempotency-Key", &key)
        };
        let hit = strike(&t, "TransactWriteItems", fault.clone());
        let (s, b, _) = call(&t.app(), named()).await;
        assert_eq!(struck(&hit), 1, "{fault:?}");
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{fault:?}: {b}"
        );
        let (s, b, _) = call(&t.app(), named()).await;
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{fault:?} retried: {b}"
        );
        assert!(liked(&t, &post, &sub).await);
    }
    assert_eq!(t.like_pairs().await.len(), APPLIED_THEN_LOST.len());
}

/// A call reset before it reached DynamoDB: nothing applied, the like says its outcome is
/// unknown (its token is not there), and the client's retry applies it once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_reset_before_it_applied_is_a_503_that_a_retry_makes_good() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let hit = strike(&t, "PutItem", Fault::Refuse);
    let first = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!(struck(&hit), 1);
    assert!(is_outcome_unknown(&first), "{:?}", first.1);
    assert!(!liked(&t, &post, &sub).await);
    let (s, b, _) = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
}

/// Within the bound: the write is held past the point its client would have had an answer,
/// and applied before the attempt's timeout; the settle read (after the timeout) finds it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_applied_late_within_the_bound_is_found() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let hit = strike(
        &t,
        "PutItem",
        Fault::Hold {
            after: Duration::from_millis(1500),
        },
    );
    let (s, b, _) = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!(struck(&hit), 1);
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    assert!(liked(&t, &post, &sub).await);
}

/// Beyond the bound the promise breaks, and this is how: the like is applied after its own 503
/// and after the user's later unlike (told `changed: false`), and undoes it. Nothing in a
/// condition can see a clock; the bound is assumed, as the README says.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_applied_beyond_the_bound_undoes_a_later_request() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let hit = strike(
        &t,
        "PutItem",
        Fault::Hold {
            after: Duration::from_secs(5),
        },
    );
    let like = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!(struck(&hit), 1);
    assert!(is_outcome_unknown(&like), "past the timeout: {:?}", like.1);
    let (s, b, _) = call_as(&t.app(), "DELETE", &like_path(&post), &sub).await;
    assert_eq!(
        (s, &b["changed"]),
        (200, &Value::Bool(false)),
        "not liked yet: {b}"
    );
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while !liked(&t, &post, &sub).await {
        assert!(
            tokio::time::Instant::now() < deadline,
            "the held like never landed: the lab did not apply it"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// In `single` mode a named reaction is a transaction with its marker: applied and its answer
/// lost, it settles by reading that marker (strongly: an eventual read would not find it yet),
/// and its retry with the same key is answered as the first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_single_mode_reaction_whose_answer_was_lost_settles_by_its_marker() {
    use likes_core::{Kinds, Mode, Reactions};
    let t = Tables::lagging().await;
    let app = || {
        t.app().with_reactions(Reactions {
            kinds: Kinds::parse("like,love").expect("kinds"),
            mode: Mode::Single,
        })
    };
    for fault in APPLIED_THEN_LOST {
        let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
        let key = format!("k-{}", UserId::new_random());
        let named = || {
            ApiEvent::new("PUT", &format!("/posts/{post}/reactions/love"))
                .caller(&sub)
                .header("Idempotency-Key", &key)
        };
        let hit = strike(&t, "TransactWriteItems", fault.clone());
        let (s, b, _) = call(&app(), named()).await;
        assert_eq!(struck(&hit), 1, "{fault:?}");
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{fault:?}: {b}"
        );
        let (s, b, _) = call(&app(), named()).await;
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{fault:?} retried: {b}"
        );
    }
}
