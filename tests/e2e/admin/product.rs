//! The product's decisions through `make dev`'s bus: `PutEvents` of `PostDeleted` and
//! `UserDeleted` on `likes-product` erase the post's and the account's likes (counts follow
//! through the stream), while the others' likes stay; a malformed event changes nothing and
//! lands, unchanged, on the erase queue's dead-letter queue.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Local;
use crate::common::{http, token, wait_for_count};

pub(super) fn like(local: &Local, post: &str, tok: &str) {
    let (s, body) = http(
        local.stack.port,
        "PUT",
        &format!("/posts/{post}/like"),
        Some(tok),
    )
    .expect("an answer");
    assert_eq!(s, 200, "{body}");
}

/// Who likes `post`, as the likers route lists it (eventually consistent: polled).
pub(super) fn likers(local: &Local, post: &str, tok: &str) -> Vec<String> {
    let (s, body) = http(
        local.stack.port,
        "GET",
        &format!("/posts/{post}/likes"),
        Some(tok),
    )
    .expect("an answer");
    assert_eq!(s, 200, "{body}");
    let items = body["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .filter_map(|i| i["user_id"].as_str().map(str::to_owned))
        .collect()
}

pub(super) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(40);
    while !done() {
        assert!(Instant::now() < deadline, "{what}: not within 40 s");
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn the_products_deletions_on_its_bus_erase_and_a_malformed_one_changes_nothing() {
    let local = Local::start(None);
    let (leaver, stayer) = (token("auth0|product-leaver"), token("auth0|product-stayer"));
    for post in ["doomed", "kept"] {
        like(&local, post, &leaver);
        like(&local, post, &stayer);
    }
    wait_for_count(&local.stack, "kept", &stayer, 2);
    wait_for_count(&local.stack, "doomed", &stayer, 2);

    let malformed = json!({"user_id": "auth0|product-stayer", "at": "not a time"});
    local.put_product_event("UserDeleted", &malformed);
    local.put_product_event(
        "PostDeleted",
        &json!({"post_id": "doomed", "at": "2026-12-07T10:00:00Z"}),
    );
    let now = likes_core::time::now_ts();
    local.put_product_event(
        "UserDeleted",
        &json!({"user_id": "auth0|product-leaver", "at": now}),
    );

    wait_for_count(&local.stack, "doomed", &stayer, 0);
    // The account's likes go in its erase's first sweep (a last one follows the settle).
    wait_for_count(&local.stack, "kept", &stayer, 1);
    wait_until("the leaver gone from kept's likers", || {
        likers(&local, "kept", &stayer) == ["auth0|product-stayer"]
    });
    assert!(likers(&local, "doomed", &stayer).is_empty());

    let mut set_aside: Vec<Value> = Vec::new();
    wait_until("the malformed event on the dead-letter queue", || {
        set_aside.extend(
            local
                .dead_letters()
                .iter()
                .filter_map(|b| serde_json::from_str::<Value>(b).ok()),
        );
        !set_aside.is_empty()
    });
    assert_eq!(set_aside.len(), 1, "{set_aside:?}");
    assert_eq!(set_aside[0]["detail"], malformed, "set aside unchanged");
    assert_eq!(set_aside[0]["detail-type"], "UserDeleted");
    // Nothing changed for the stayer, whom the malformed event named.
    assert_eq!(likers(&local, "kept", &stayer), ["auth0|product-stayer"]);
    assert!(
        local.stack.denied().is_empty(),
        "{:#?}",
        local.stack.denied()
    );
}

/// `UserSuspended` on the bus: the user's likes stop counting and leave the lists, and their
/// writes are refused (403 `suspended`) while their reads answer; a `UserRestored` older than
/// the suspension changes nothing; a later one brings every like back at its own time.
#[test]
fn a_suspension_on_the_bus_hides_and_refuses_and_a_later_restore_brings_back() {
    let local = Local::start(None);
    let (sub, other) = ("auth0|product-suspended", "auth0|product-watcher");
    let (tok, watcher) = (token(sub), token(other));
    let posts = ["s1", "s2", "s3"];
    for post in posts {
        like(&local, post, &tok);
        like(&local, post, &watcher);
    }
    for post in posts {
        wait_for_count(&local.stack, post, &watcher, 2);
    }
    let mine = |t: &str| {
        let (s, body) =
            http(local.stack.port, "GET", "/users/me/likes", Some(t)).expect("an answer");
        assert_eq!(s, 200, "{body}");
        body["items"].clone()
    };
    let before = mine(&tok);

    let suspended_at = likes_core::time::now_ts();
    local.put_product_event(
        "UserSuspended",
        &json!({"user_id": sub, "at": suspended_at}),
    );
    // Older than the suspension: changes nothing, whenever it is read.
    local.put_product_event(
        "UserRestored",
        &json!({"user_id": sub, "at": "2026-01-01T00:00:00Z"}),
    );
    for post in posts {
        wait_for_count(&local.stack, post, &watcher, 1);
    }
    assert_eq!(likers(&local, "s1", &watcher), [other]);
    wait_until("the suspended user's writes refused", || {
        let (s, body) =
            http(local.stack.port, "PUT", "/posts/s4/like", Some(&tok)).expect("an answer");
        assert!(
            s == 200 || (s == 403 && body["error"]["code"] == "suspended"),
            "{s} {body}"
        );
        if s == 200 {
            // Admitted before every environment knew: the suspension's last sweep takes it.
            return false;
        }
        true
    });
    let (s, body) = http(local.stack.port, "GET", "/posts/s1/like", Some(&tok)).expect("an answer");
    assert_eq!(s, 200, "their reads answer: {body}");

    local.put_product_event(
        "UserRestored",
        &json!({"user_id": sub, "at": likes_core::time::now_ts()}),
    );
    for post in posts {
        wait_for_count(&local.stack, post, &watcher, 2);
    }
    wait_until("every like back", || {
        mine(&tok).as_array().is_some_and(|a| a.len() >= 3)
    });
    let after = mine(&tok);
    let without_s4: Vec<&Value> = after
        .as_array()
        .expect("items")
        .iter()
        .filter(|i| i["post_id"] != "s4")
        .collect();
    let want: Vec<&Value> = before.as_array().expect("items").iter().collect();
    assert_eq!(without_s4, want, "each back at its own time");
    assert!(
        local.stack.denied().is_empty(),
        "{:#?}",
        local.stack.denied()
    );
}
