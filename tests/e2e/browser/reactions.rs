//! The demo page's reaction picker, in a real browser: with `LIKES_REACTION_KINDS` set, each
//! post shows a button per kind beside the like button; a click writes the reaction (checked
//! through the API, not only on the page), a second click removes it, and in `single` mode
//! another kind replaces the one held, the like included.

use serde_json::{json, Value};

use super::webdriver::{poll, Browser};
use crate::common::{http, token, Options, Stack};

const KINDS: &str = "like,love,+1";

fn start(mode: &str) -> (Stack, Browser) {
    let stack = Stack::start(&Options {
        env: vec![
            ("LIKES_REACTION_KINDS", KINDS.to_owned()),
            ("LIKES_REACTION_MODE", mode.to_owned()),
        ],
        ..Options::default()
    });
    let browser = Browser::start();
    browser.goto(&format!("http://127.0.0.1:{}/", stack.demo_port));
    browser.wait_for("body[data-user='alice']", 30);
    (stack, browser)
}

/// `GET /posts/{post}/reactions` as `user`.
fn reactions(stack: &Stack, post: &str, tok: &str) -> Value {
    let (s, b) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/reactions"),
        Some(tok),
    )
    .expect("the reactions");
    assert_eq!(s, 200, "{b}");
    b
}

/// Waits until the API says `mine` is `want` and the counts are `counts` (eventually).
fn wait_for_api(stack: &Stack, post: &str, tok: &str, mine: Value, counts: Value) {
    let what = format!("{post}'s reactions to be {mine} with counts {counts}");
    poll(30, &what, || {
        let b = reactions(stack, post, tok);
        (b["mine"] == mine && b["counts"] == counts).then_some(())
    });
}

fn chip(post: &str, kind: &str) -> String {
    format!("li.post[data-post='{post}'] button.reaction[data-kind='{kind}']")
}

/// Waits until the page shows `kind` on `post` as held (or not) with `count`.
fn wait_for_chip(browser: &Browser, post: &str, kind: &str, held: bool, count: &str) {
    let sel = format!("{}[aria-pressed='{held}']", chip(post, kind));
    let what = format!("{sel} counting {count}");
    poll(30, &what, || {
        (browser.find(&sel).is_some() && browser.text(&format!("{sel} .n")) == count).then_some(())
    });
}

fn no_error(browser: &Browser) {
    let status = browser.run("return document.getElementById('status').className;", &[]);
    assert_ne!(status, "error", "{}", browser.text("#status"));
}

#[test]
fn the_demo_page_reacts_with_each_configured_kind() {
    let (stack, browser) = start("multi");
    let post = "demo-post-04";
    let tok = token("alice");
    // Someone else's +1 first: the page counts it before alice clicks anything.
    let (s, b) = http(
        stack.port,
        "PUT",
        &format!("/posts/{post}/reactions/%2B1"),
        Some(&token("bob")),
    )
    .expect("a seed reaction");
    assert_eq!(s, 200, "{b}");

    // Each configured kind but the like (the like button is the like) has its button.
    wait_for_chip(&browser, post, "love", false, "0");
    wait_for_chip(&browser, post, "+1", false, "1");
    assert!(browser.find(&chip(post, "like")).is_none());

    browser.click(&chip(post, "love"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["love"]),
        json!({"like": 0, "love": 1, "+1": 1}),
    );
    wait_for_chip(&browser, post, "love", true, "1");

    // Multi mode: a second kind (its `+` percent-encoded in the path) joins the first.
    browser.click(&chip(post, "+1"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["+1", "love"]),
        json!({"like": 0, "love": 1, "+1": 2}),
    );
    wait_for_chip(&browser, post, "+1", true, "2");
    wait_for_chip(&browser, post, "love", true, "1");

    // The like button still likes, beside the reactions.
    browser.click(&format!("li.post[data-post='{post}'] .like"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["+1", "like", "love"]),
        json!({"like": 1, "love": 1, "+1": 2}),
    );

    // A held kind, clicked, is removed.
    browser.click(&chip(post, "love"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["+1", "like"]),
        json!({"like": 1, "love": 0, "+1": 2}),
    );
    wait_for_chip(&browser, post, "love", false, "0");
    wait_for_chip(&browser, post, "+1", true, "2");
    no_error(&browser);
}

#[test]
fn the_demo_page_in_single_mode_replaces_one_reaction_with_another() {
    let (stack, browser) = start("single");
    let post = "demo-post-06";
    let tok = token("alice");
    let like = format!("li.post[data-post='{post}'] .like");

    browser.click(&chip(post, "love"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["love"]),
        json!({"like": 0, "love": 1, "+1": 0}),
    );
    wait_for_chip(&browser, post, "love", true, "1");

    // Another kind replaces it: the page shows the one held, and the count moves over.
    browser.click(&chip(post, "+1"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["+1"]),
        json!({"like": 0, "love": 0, "+1": 1}),
    );
    wait_for_chip(&browser, post, "+1", true, "1");
    wait_for_chip(&browser, post, "love", false, "0");

    // The like replaces a reaction too, and a reaction the like.
    browser.click(&like);
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["like"]),
        json!({"like": 1, "love": 0, "+1": 0}),
    );
    browser.wait_for(&format!("{like}[aria-pressed='true']"), 10);
    wait_for_chip(&browser, post, "+1", false, "0");
    browser.click(&chip(post, "love"));
    wait_for_api(
        &stack,
        post,
        &tok,
        json!(["love"]),
        json!({"like": 0, "love": 1, "+1": 0}),
    );
    browser.wait_for(&format!("{like}[aria-pressed='false']"), 10);
    wait_for_chip(&browser, post, "love", true, "1");
    poll(30, "the like count back at 0", || {
        (browser.text(&format!("li.post[data-post='{post}'] .count")) == "0").then_some(())
    });
    no_error(&browser);
}
