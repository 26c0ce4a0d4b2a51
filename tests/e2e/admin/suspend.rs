//! A suspension's moves through `make dev`'s stream and aggregator, while others keep liking
//! and unliking the same posts: hidden, the user's likes stop counting (each post's count is
//! exactly its visible likes, and `audit --all` finds no drift) and leave every list; restored,
//! each is back at its own time and the counts are exact again. (The moves are run as
//! `likes_core::suspend` runs them; the product's events and the API's refusal are not wired
//! yet: docs/product-events.md.)

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use likes_core::erase::Sweep;
use likes_core::suspend::{hide_user, unhide_user};
use likes_core::UserId;

use super::erase::{background, posts};
use super::product::likers;
use super::Local;
use crate::common::{http, token};

/// (post, liked_at) of each like `tok`'s user holds, as `GET /users/me/likes` lists them.
fn mine(local: &Local, tok: &str) -> BTreeMap<String, String> {
    let (s, body) = http(
        local.stack.port,
        "GET",
        "/users/me/likes?limit=100",
        Some(tok),
    )
    .expect("an answer");
    assert_eq!(s, 200, "{body}");
    let items = body["items"].as_array().cloned().unwrap_or_default();
    items
        .iter()
        .map(|i| {
            let s = |k: &str| i[k].as_str().unwrap_or_default().to_owned();
            (s("post_id"), s("liked_at"))
        })
        .collect()
}

/// Runs `moves` while the others like and unlike the posts, then waits for every post's count
/// to equal its table and audits them all.
fn under_load(
    local: &Local,
    posts: &[String],
    others: &[String],
    moves: impl FnOnce() -> usize,
) -> usize {
    let stop = Arc::new(AtomicBool::new(false));
    let load = background(local, posts, others, &stop);
    std::thread::sleep(Duration::from_millis(300));
    let moved = moves();
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::SeqCst);
    assert!(load.join().expect("the load") > 0, "nobody liked meanwhile");
    for p in posts {
        local.wait_exact(p, Duration::from_secs(60));
    }
    let audit = local.admin(&["audit", "--all"]).expect("audit --all");
    assert_eq!(audit.exit_code(), 0, "drift: {}", audit.doc);
    moved
}

#[test]
fn a_suspended_users_likes_stop_counting_and_come_back_exactly_while_others_like() {
    let local = Local::start(None);
    let posts = posts(12);
    let sub = "auth0|suspended";
    let (user, tok) = (UserId::parse(sub).expect("an id"), token(sub));
    let others: Vec<String> = (0..4)
        .map(|i| token(&format!("auth0|bystander{i}")))
        .collect();
    for p in &posts {
        let (s, b) = http(
            local.stack.port,
            "PUT",
            &format!("/posts/{p}/like"),
            Some(&tok),
        )
        .expect("an answer");
        assert_eq!(s, 200, "{b}");
    }
    let before = mine(&local, &tok);
    assert_eq!(before.len(), posts.len());
    let sweep = Sweep {
        progress: &|_| {},
        empty_sweeps: 2,
        pause: Duration::from_millis(500),
        before: None,
    };

    let hidden = under_load(&local, &posts, &others, || {
        local
            .rt
            .block_on(hide_user(&local.stores.likes, &user, &sweep))
            .expect("hidden")
    });
    assert_eq!(hidden, posts.len());
    assert!(mine(&local, &tok).is_empty());
    for p in &posts {
        let listed = likers(&local, p, &others[0]);
        assert!(listed.iter().all(|u| u != sub), "{p}: {listed:?}");
    }

    let back = under_load(&local, &posts, &others, || {
        local
            .rt
            .block_on(unhide_user(&local.stores.likes, &user, &sweep))
            .expect("restored")
    });
    assert_eq!(back, posts.len());
    assert_eq!(mine(&local, &tok), before, "each back at its own time");
}
