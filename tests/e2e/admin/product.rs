//! The product's decisions through `make dev`'s bus: `PutEvents` of `PostDeleted` and
//! `UserDeleted` on `likes-product` erase the post's and the account's likes (counts follow
//! through the stream), while the others' likes stay; a malformed event changes nothing and
//! lands, unchanged, on the erase queue's dead-letter queue.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Local;
use crate::common::{http, token, wait_for_count};

fn like(local: &Local, post: &str, tok: &str) {
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
fn likers(local: &Local, post: &str, tok: &str) -> Vec<String> {
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

fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
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
