//! One request, one effect: like and unlike when an answer is lost, a write is throttled, and
//! the same user acts from a second device in between — against the emulator, with faults
//! injected by SDK interceptors. Each like scenario once broke the guarantee (see the README);
//! the last stages the path once suspected behind a `single`-mode history with no legal order.

use std::sync::{Arc, Mutex};

use likes_core::{Kinds, Mode, PostId, Reactions, UserId};
use likes_harness::sdk_faults::{Fault, Faults};
use likes_harness::{call, call_as, like_path, ApiEvent, Reply, Tables};
use serde_json::Value;

type Replies = Arc<Mutex<Vec<Reply>>>;

/// Faults `op`'s first call with `fault`; from inside that attempt, before the caller sees its
/// failure, the same user sends `method` on the post from a second device. Its answer is kept.
fn fault_with_second_device(
    t: &Tables,
    op: &'static str,
    fault: Fault,
    method: &'static str,
    post: &PostId,
    sub: &str,
) -> (Faults, Replies) {
    let seen: Replies = Arc::default();
    let (t, path, sub, out) = (t.clone(), like_path(post), sub.to_owned(), seen.clone());
    let hook = Box::new(move |_: &str, _: Fault| {
        let reply = t.second_device(method, &path, &sub);
        out.lock().unwrap().push(reply);
    });
    (Faults::first(op, fault).with_hook(hook), seen)
}

async fn liked(t: &Tables, post: &PostId, sub: &str) -> bool {
    let (s, b, _) = call_as(&t.app(), "GET", &like_path(post), sub).await;
    assert_eq!(s, 200, "{b}");
    b["liked"] == Value::Bool(true)
}

fn is_outcome_unknown(r: &Reply) -> bool {
    r.0 == 503 && r.1["error"]["code"] == "outcome_unknown" && r.2.contains_key("retry-after")
}

/// Scenario 1: the unlike is applied and its answer lost; the user likes again from a second
/// device and is told `changed: true`. That like must survive: the unlike is not retried
/// blindly, and says honestly that its outcome is unknown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unlike_whose_answer_was_lost_never_removes_a_later_like() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    assert_eq!(
        call_as(&t.app(), "PUT", &like_path(&post), &sub).await.1["changed"],
        true
    );
    let (faults, other) =
        fault_with_second_device(&t, "DeleteItem", Fault::LoseAnswer, "PUT", &post, &sub);
    let unlike = call_as(
        &t.app_with(faults.clone()),
        "DELETE",
        &like_path(&post),
        &sub,
    )
    .await;

    second_device_changed(&other);
    assert!(is_outcome_unknown(&unlike), "{unlike:?}");
    assert!(
        liked(&t, &post, &sub).await,
        "the like the user was told about is gone"
    );
    assert_eq!(faults.injected().len(), 1);
}

/// The second device's request ran, and changed the like.
fn second_device_changed(other: &Replies) {
    let other = other.lock().unwrap().pop().expect("the second device ran");
    assert_eq!(
        (other.0, &other.1["changed"]),
        (200, &Value::Bool(true)),
        "{}",
        other.1
    );
}

/// Scenario 2: the like is applied and its answer lost; the user unlikes from a second device
/// (`changed: true`). The like must not come back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_like_whose_answer_was_lost_never_undoes_a_later_unlike() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let (faults, other) =
        fault_with_second_device(&t, "PutItem", Fault::LoseAnswer, "DELETE", &post, &sub);
    let like = call_as(&t.app_with(faults), "PUT", &like_path(&post), &sub).await;

    second_device_changed(&other);
    assert!(is_outcome_unknown(&like), "{like:?}");
    assert!(!liked(&t, &post, &sub).await, "the unliked like came back");
}

/// Scenario 3: the like is throttled (nothing written) and retried; meanwhile a duplicate
/// request of the same user writes the like, possibly in the same millisecond. Exactly one of
/// the two is told `changed: true`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_throttled_like_and_a_duplicate_report_one_change() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let (faults, other) =
        fault_with_second_device(&t, "PutItem", Fault::Throttle, "PUT", &post, &sub);
    let like = call_as(&t.app_with(faults.clone()), "PUT", &like_path(&post), &sub).await;

    let other = other.lock().unwrap().pop().expect("the second device ran");
    assert_eq!((like.0, other.0), (200, 200), "{like:?} {other:?}");
    assert_eq!(
        (&like.1["changed"], &other.1["changed"]),
        (&Value::Bool(false), &Value::Bool(true))
    );
    assert_eq!(t.like_pairs().await.len(), 1);
    assert_eq!(faults.injected().get("PutItem Throttle"), Some(&1));
}

/// Scenario 4: the user already likes the post (another device was told `changed: true`); a
/// second like finds it liked, and its answer is lost. The like on the item is not this
/// request's (another token is on it): the request must not claim the change.
#[tokio::test]
async fn a_like_that_found_the_post_liked_and_lost_its_answer_claims_nothing() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let first = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!((first.0, &first.1["changed"]), (200, &Value::Bool(true)));
    let faults = Faults::first("PutItem", Fault::LoseAnswer);
    let again = call_as(&t.app_with(faults.clone()), "PUT", &like_path(&post), &sub).await;

    assert_eq!(faults.injected().get("PutItem LoseAnswer"), Some(&1));
    assert!(
        is_outcome_unknown(&again),
        "two requests told they made one like: {again:?}"
    );
    assert!(liked(&t, &post, &sub).await);
}

fn keyed(method: &str, post: &PostId, sub: &str, key: &str) -> ApiEvent {
    ApiEvent::new(method, &like_path(post))
        .caller(sub)
        .header("Idempotency-Key", key)
}

/// A like named with an Idempotency-Key whose answer was lost learns `changed: true`; its
/// retries are told the same and never like again, even after a later unlike.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_like_is_answered_once_and_never_applied_twice() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let (faults, other) = fault_with_second_device(
        &t,
        "TransactWriteItems",
        Fault::LoseAnswer,
        "DELETE",
        &post,
        &sub,
    );
    let first = call(&t.app_with(faults), keyed("PUT", &post, &sub, "k1")).await;
    assert_eq!(
        (first.0, &first.1["changed"]),
        (200, &Value::Bool(true)),
        "{:?}",
        first.1
    );
    let other = other.lock().unwrap().pop().expect("the second device ran");
    assert_eq!(
        other.1["changed"], true,
        "the unlike removed the named like"
    );

    for _ in 0..2 {
        let retry = call(&t.app(), keyed("PUT", &post, &sub, "k1")).await;
        assert_eq!(
            (retry.0, &retry.1["changed"]),
            (200, &Value::Bool(true)),
            "{:?}",
            retry.1
        );
    }
    assert!(
        !liked(&t, &post, &sub).await,
        "a retry of the named like applied it again"
    );
    let fresh = call(&t.app(), keyed("PUT", &post, &sub, "k2")).await;
    assert_eq!(fresh.1["changed"], true);
    assert!(liked(&t, &post, &sub).await);
    let reused = call(&t.app(), keyed("DELETE", &post, &sub, "k2")).await;
    assert_eq!(
        (reused.0, reused.1["error"]["code"].as_str()),
        (422, Some("idempotency_key_reused"))
    );
    let bad = call(&t.app(), keyed("PUT", &post, &sub, "not a key")).await;
    assert_eq!(
        (bad.0, bad.1["error"]["code"].as_str()),
        (400, Some("invalid_idempotency_key"))
    );
    // Markers are control items: no listing, count or index sees them. Listings trail (the
    // lab's lag, and earlier states of the like in between), so each is read until it shows
    // the one like; a marker listed would show as a second item.
    for path in ["/users/me/likes".to_owned(), format!("/posts/{post}/likes")] {
        let listed = likes_harness::eventually(
            &path,
            || async { call_as(&t.app(), "GET", &path, &sub).await.1 },
            |m| m["items"].as_array().is_some_and(|i| i.len() == 1),
        )
        .await;
        assert_eq!(
            listed["items"].as_array().map(Vec::len),
            Some(1),
            "{listed}"
        );
    }
}

/// A named request that changed nothing is remembered like one that did: an unlike named K of a
/// post the user did not like answers `changed: false`; the user then likes from another device;
/// a retry of K (its answer was lost, say) must answer `changed: false` again and leave the new
/// like alone. The mirror case holds for a named like of a post already liked.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_named_request_that_changed_nothing_never_takes_effect_later() {
    let t = Tables::lagging().await;
    let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
    let unlike = call(&t.app(), keyed("DELETE", &post, &sub, "u1")).await;
    assert_eq!((unlike.0, &unlike.1["changed"]), (200, &Value::Bool(false)));
    let like = call_as(&t.app(), "PUT", &like_path(&post), &sub).await;
    assert_eq!(like.1["changed"], true, "{:?}", like.1);
    for _ in 0..2 {
        let retry = call(&t.app(), keyed("DELETE", &post, &sub, "u1")).await;
        assert_eq!(
            (retry.0, &retry.1["changed"]),
            (200, &Value::Bool(false)),
            "{:?}",
            retry.1
        );
        assert!(
            liked(&t, &post, &sub).await,
            "the retried unlike took effect"
        );
    }

    // The mirror: a named like of a post already liked, retried after an unlike.
    let again = call(&t.app(), keyed("PUT", &post, &sub, "l1")).await;
    assert_eq!((again.0, &again.1["changed"]), (200, &Value::Bool(false)));
    let unlike = call_as(&t.app(), "DELETE", &like_path(&post), &sub).await;
    assert_eq!(unlike.1["changed"], true, "{:?}", unlike.1);
    let retry = call(&t.app(), keyed("PUT", &post, &sub, "l1")).await;
    assert_eq!((retry.0, &retry.1["changed"]), (200, &Value::Bool(false)));
    assert!(
        !liked(&t, &post, &sub).await,
        "the retried like took effect"
    );
    // A no-op's key is taken too: naming another request with it is a 422.
    let reused = call(&t.app(), keyed("DELETE", &post, &sub, "l1")).await;
    assert_eq!(
        (reused.0, reused.1["error"]["code"].as_str()),
        (422, Some("idempotency_key_reused"))
    );
}

/// Named requests' markers live in their own table, keyed by the user (issue 25): 200 named
/// flips of one post leave no marker in the post's partition (whose item collection the LSI
/// caps at 10 GB, for everyone who likes the post), and each marker still answers its retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn named_flips_leave_no_marker_in_the_posts_partition() {
    let t = Tables::lagging().await;
    let app = t.app();
    let post = PostId::parse("flipped-post").unwrap();
    let sub = "auth0|flipper";
    for i in 0..200 {
        let method = if i % 2 == 0 { "PUT" } else { "DELETE" };
        let (status, body, _) = call(&app, keyed(method, &post, sub, &format!("flip-{i}"))).await;
        assert_eq!(
            (status, body["changed"].as_bool()),
            (200, Some(true)),
            "{i}: {body}"
        );
    }
    let in_partitions: Vec<String> = t
        .scan(&t.likes_table)
        .await
        .iter()
        .filter_map(|item| item.get("user_id")?.as_s().ok().cloned())
        .filter(|sort_key| sort_key.starts_with('~'))
        .collect();
    assert!(
        in_partitions.is_empty(),
        "markers in the post's partition: {in_partitions:?}"
    );
    assert_eq!(t.scan(&t.markers_table).await.len(), 200);
    // The first flip's retry is answered as it was, from its marker, and changes nothing.
    let (status, body, _) = call(&app, keyed("PUT", &post, sub, "flip-0")).await;
    assert_eq!(
        (status, body["changed"].as_bool()),
        (200, Some(true)),
        "{body}"
    );
    assert!(!liked(&t, &post, sub).await, "the retry liked again");
}

/// Faults the first `TransactWriteItems` with `fault` (applied, its answer lost), and, when
/// `blind`, every consistent read after it (throttled, the SDK's retries included): the
/// request cannot learn what its transaction did.
fn lost_then_blind(fault: Fault, blind: bool) -> Faults {
    let mut lost = false;
    Faults::new(Box::new(move |op, _| match op {
        "TransactWriteItems" if !lost => {
            lost = true;
            Some(fault)
        }
        "GetItem" | "Query" if lost && blind => Some(Fault::Throttle),
        _ => None,
    }))
}

/// `single` mode: a replacement (`like` to `love`) whose transaction is applied and its answer
/// lost (a lost connection, a bare 500). With the consistent reads failing after it, the
/// request cannot settle, and must say so (`outcome_unknown`), never `unavailable` ("nothing
/// changed"); with them working it learns `changed: true` and what it replaced. Named or not;
/// a named one's retry is answered as the transaction was. Either way it took effect once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_single_mode_replacement_whose_answer_was_lost_never_claims_it_changed_nothing() {
    let t = Tables::lagging().await;
    let single = || Reactions {
        kinds: Kinds::parse("like,love").expect("kinds"),
        mode: Mode::Single,
    };
    for fault in [Fault::LoseAnswer, Fault::BareServerError] {
        for (named, blind) in [(false, true), (true, true), (false, false), (true, false)] {
            let case = format!("{fault:?}, named {named}, reads failing {blind}");
            let (post, sub) = (PostId::new_random(), UserId::new_random().to_string());
            let (path, key) = (format!("/posts/{post}/reactions"), format!("k-{post}"));
            let event = || {
                let event = ApiEvent::new("PUT", &format!("{path}/love")).caller(&sub);
                match named {
                    true => event.header("Idempotency-Key", &key),
                    false => event,
                }
            };
            let held = call_as(
                &t.app().with_reactions(single()),
                "PUT",
                &format!("{path}/like"),
                &sub,
            )
            .await;
            assert_eq!(held.1["changed"], true, "{case}: {:?}", held.1);
            let faults = lost_then_blind(fault, blind);
            let reply = call(
                &t.app_with(faults.clone()).with_reactions(single()),
                event(),
            )
            .await;

            let lost = faults
                .injected()
                .get(&format!("TransactWriteItems {fault:?}"))
                .copied();
            assert_eq!(lost, Some(1), "{case}: {:?}", faults.injected());
            if blind {
                assert!(
                    is_outcome_unknown(&reply),
                    "{case}: {} {}",
                    reply.0,
                    reply.1
                );
            } else {
                let said = (reply.0, &reply.1["changed"], &reply.1["replaced"]);
                assert_eq!(
                    said,
                    (200, &Value::Bool(true), &Value::from("like")),
                    "{case}: {}",
                    reply.1
                );
            }
            let mine = call_as(&t.app().with_reactions(single()), "GET", &path, &sub).await;
            assert_eq!(
                mine.1["mine"],
                serde_json::json!(["love"]),
                "{case}: {:?}",
                mine.1
            );
            if named {
                let again = call(&t.app().with_reactions(single()), event()).await;
                let said = (again.0, &again.1["changed"], &again.1["replaced"]);
                assert_eq!(
                    said,
                    (200, &Value::Bool(true), &Value::from("like")),
                    "{case}: {}",
                    again.1
                );
            }
        }
    }
}
