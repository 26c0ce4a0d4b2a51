//! The API from a web page, in a real browser (headless Chromium over WebDriver, see
//! `webdriver`): a page on an allowed origin uses the whole API through `fetch`; a page on
//! another origin is refused by the browser itself; the demo page works as a person uses it,
//! the authors' policies included.
//! And, over plain HTTP, the gateway's CORS answers the browser relies on, errors included.
//!
//! Without chromium and chromedriver these tests fail, naming what to install.

use crate::common;
mod cors;
mod policies;
mod reactions;
mod webdriver;

use common::{http, token, Options, Stack};
use serde_json::{json, Value};
use webdriver::{poll, Browser, PageServer};

/// One `fetch` from the page: status, the headers a page may read, and the body as JSON; or
/// `ok: false` with the error the browser raised.
const FETCH: &str = r#"
const [url, init, done] = arguments;
fetch(url, init).then(async (r) => {
  const text = await r.text();
  let body = null;
  try { body = JSON.parse(text); } catch (_) {}
  done({ ok: true, status: r.status, body, etag: r.headers.get("etag"),
         content_type: r.headers.get("content-type"), date: r.headers.get("date") });
}).catch((e) => done({ ok: false, error: `${e.name}: ${e.message}` }));
"#;

fn fetch(browser: &Browser, url: &str, init: Value) -> Value {
    browser.run_async(FETCH, &[json!(url), init])
}

fn auth(token: &str) -> Value {
    json!({ "Authorization": format!("Bearer {token}") })
}

fn with_key(token: &str, key: &str) -> Value {
    json!({ "Authorization": format!("Bearer {token}"), "Idempotency-Key": key })
}

fn log(stack: &Stack) -> String {
    stack.log.lock().map(|l| l.clone()).unwrap_or_default()
}

#[test]
fn a_page_on_an_allowed_origin_likes_reads_counts_lists_summarises_and_unlikes() {
    let page = PageServer::start();
    let stack = Stack::start(&Options {
        allowed_origins: Some(page.origin.clone()),
        ..Options::default()
    });
    let api = format!("http://127.0.0.1:{}", stack.port);
    let (user, post) = ("auth0|browser-1", "browser-post-1");
    let tok = token(user);
    let browser = Browser::start();
    browser.goto(&format!("{}/", page.origin));
    let like = format!("{api}/posts/{post}/like");

    // A like named by an Idempotency-Key, and its retry, answered as the first attempt was.
    let key = uuid::Uuid::new_v4().to_string();
    for attempt in ["first", "retry"] {
        let r = fetch(
            &browser,
            &like,
            json!({"method": "PUT", "headers": with_key(&tok, &key)}),
        );
        assert_eq!(r["status"], 200, "{attempt}: {r}");
        assert_eq!(r["body"]["changed"], true, "{attempt}: {r}");
        assert_eq!(r["body"]["user_id"], user);
    }
    let r = fetch(&browser, &like, json!({"headers": auth(&tok)}));
    assert_eq!(
        (&r["status"], &r["body"]["liked"]),
        (&json!(200), &json!(true)),
        "{r}"
    );

    // The count converges; its ETag is readable (exposed), an unexposed header is not.
    let count_url = format!("{api}/posts/{post}/likes/count");
    let counted = poll(30, "the count to reach 1", || {
        let r = fetch(&browser, &count_url, json!({"headers": auth(&tok)}));
        assert_eq!(r["status"], 200, "{r}");
        (r["body"]["like_count"] == 1).then_some(r)
    });
    let etag = counted["etag"]
        .as_str()
        .expect("the page reads ETag")
        .to_owned();
    assert!(etag.starts_with("W/\""), "{etag}");
    assert_eq!(counted["content_type"], "application/json");
    assert_eq!(
        counted["date"],
        Value::Null,
        "only exposed headers are readable"
    );
    let headers = json!({"Authorization": format!("Bearer {tok}"), "If-None-Match": etag});
    let r = fetch(&browser, &count_url, json!({ "headers": headers }));
    assert_eq!(r["status"], 304, "{r}");

    // Both listings, and the feed's summary.
    let likers = format!("{api}/posts/{post}/likes?limit=10");
    poll(30, "the like in who-liked", || {
        let r = fetch(&browser, &likers, json!({"headers": auth(&tok)}));
        (r["body"]["items"][0]["user_id"] == user).then_some(())
    });
    let mine = format!("{api}/users/me/likes?limit=10");
    poll(30, "the like in my likes", || {
        let r = fetch(&browser, &mine, json!({"headers": auth(&tok)}));
        (r["body"]["items"][0]["post_id"] == post).then_some(())
    });
    let summary = format!("{api}/likes/summary?post_ids={post},browser-post-2");
    let r = fetch(&browser, &summary, json!({"headers": auth(&tok)}));
    assert_eq!(r["status"], 200, "{r}");
    assert_eq!(
        r["body"]["items"],
        json!([
            {"post_id": post, "like_count": 1, "liked_by_me": true,
             "reactions": {"like": 1}, "my_reactions": ["like"]},
            {"post_id": "browser-post-2", "like_count": 0, "liked_by_me": false,
             "reactions": {"like": 0}, "my_reactions": []},
        ])
    );
    assert!(r["etag"].is_string(), "{r}");

    // Unlike, named too.
    let key = uuid::Uuid::new_v4().to_string();
    let r = fetch(
        &browser,
        &like,
        json!({"method": "DELETE", "headers": with_key(&tok, &key)}),
    );
    assert_eq!(
        (&r["status"], &r["body"]["changed"]),
        (&json!(200), &json!(true)),
        "{r}"
    );
    poll(30, "the count back at 0", || {
        let r = fetch(&browser, &count_url, json!({"headers": auth(&tok)}));
        (r["body"]["like_count"] == 0).then_some(())
    });

    // Errors reach the page too: it can read why.
    let r = fetch(&browser, &like, json!({}));
    assert_eq!(
        (&r["status"], &r["body"]["error"]["code"]),
        (&json!(401), &json!("unauthorized")),
        "{r}"
    );
    let r = fetch(
        &browser,
        &format!("{api}/nowhere"),
        json!({"headers": auth(&tok)}),
    );
    assert_eq!(r["status"], 404, "{r}");

    // The browser asked first, and the gateway answered without a token.
    let log = log(&stack);
    assert!(
        log.contains(&format!("OPTIONS /posts/{post}/like 204")),
        "{log}"
    );
}

#[test]
fn a_page_on_another_origin_is_refused_by_the_browser() {
    let (allowed, other) = (PageServer::start(), PageServer::start());
    let stack = Stack::start(&Options {
        allowed_origins: Some(allowed.origin.clone()),
        ..Options::default()
    });
    let api = format!("http://127.0.0.1:{}", stack.port);
    let (user, post) = ("browser-2", "browser-post-3");
    let tok = token(user);
    let browser = Browser::start();
    browser.goto(&format!("{}/", other.origin));

    let like = format!("{api}/posts/{post}/like");
    let key = uuid::Uuid::new_v4().to_string();
    let r = fetch(
        &browser,
        &like,
        json!({"method": "PUT", "headers": with_key(&tok, &key)}),
    );
    assert_eq!(r["ok"], false, "{r}");
    assert!(
        r["error"]
            .as_str()
            .is_some_and(|e| e.starts_with("TypeError")),
        "{r}"
    );
    // A request with no preflight is sent, but its answer is kept from the page.
    let r = fetch(
        &browser,
        &format!("{api}/posts/{post}/likes/count"),
        json!({}),
    );
    assert_eq!(r["ok"], false, "{r}");

    // The refused preflight kept the like from being sent at all.
    let (s, b) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/like"),
        Some(&tok),
    )
    .unwrap();
    assert_eq!((s, &b["liked"]), (200, &json!(false)), "{b}");
    let log = log(&stack);
    assert!(
        log.contains(&format!("OPTIONS /posts/{post}/like 204")),
        "{log}"
    );
    assert!(!log.contains(&format!("PUT /posts/{post}/like")), "{log}");
}

#[test]
fn the_demo_page_works_as_a_person_uses_it() {
    let stack = Stack::start(&Options::default());
    // Other people's likes first, through the API: six on the post the person will like.
    let seeds = [
        (
            "demo-post-03",
            &["alice", "bob", "carol", "dave", "frank", "grace"][..],
        ),
        ("demo-post-01", &["bob", "carol"][..]),
        ("demo-post-05", &["dave", "carol", "bob"][..]),
        ("demo-post-08", &["grace"][..]),
    ];
    for (post, users) in seeds {
        for user in users {
            let (s, b) = http(
                stack.port,
                "PUT",
                &format!("/posts/{post}/like"),
                Some(&token(user)),
            )
            .expect("a seed like");
            assert_eq!(s, 200, "{b}");
        }
    }
    let browser = Browser::start();
    browser.goto(&format!("http://127.0.0.1:{}/", stack.demo_port));
    browser.wait_for("body[data-user='alice']", 30);
    // A like-only deployment: the like button alone, no reaction picker.
    browser.wait_for("body[data-kinds='like']", 30);
    assert!(browser.find("button.reaction").is_none());

    // Another person signs in, and sees the others' likes counted.
    browser.type_into("#user", "erin");
    browser.click("#switch");
    browser.wait_for("body[data-user='erin']", 10);
    let post = "li.post[data-post='demo-post-03']";
    let count = || browser.text(&format!("{post} .count"));
    poll(30, "the feed's counts", || (count() == "6").then_some(()));

    browser.click(&format!("{post} .like"));
    browser.wait_for(&format!("{post} .like[aria-pressed='true']"), 10);
    poll(15, "the count to follow the like", || {
        (count() == "7").then_some(())
    });

    // Who liked: newest first, five a page, then the rest.
    let likers = || {
        let n = browser.run(
            "return document.querySelectorAll('#likers-list li').length;",
            &[],
        );
        n.as_u64().unwrap_or(0)
    };
    browser.click(&format!("{post} .who"));
    poll(15, "erin first in who-liked", || {
        let first = browser.text("#likers-list li:first-child");
        (first.contains("erin") && likers() == 5).then_some(())
    });
    browser.click("#likers-more");
    poll(15, "the second page of who-liked", || {
        (likers() == 7).then_some(())
    });
    browser.wait_for("#likers-more[hidden]", 10);
    poll(15, "the post in my likes", || {
        let mine = browser.text("#mine-list");
        mine.contains("Ten tips for tidy Rust").then_some(())
    });
    if let Some(path) = std::env::var_os("LIKES_DEMO_SCREENSHOT") {
        std::fs::write(&path, browser.screenshot_png()).expect("the screenshot is written");
    }

    browser.click(&format!("{post} .like"));
    browser.wait_for(&format!("{post} .like[aria-pressed='false']"), 10);
    poll(15, "the count to follow the unlike", || {
        (count() == "6").then_some(())
    });
    let status = browser.run("return document.getElementById('status').className;", &[]);
    assert_ne!(status, "error", "{}", browser.text("#status"));
}
