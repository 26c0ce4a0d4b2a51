//! The demo page as people see the authors' policies (`make dev`'s demo policies,
//! `LIKES_DEMO_POLICIES`): carol keeps the count and the likers of "Learning the cello at 40" to
//! herself, so alice sees the count hidden and is told who liked it is private, while carol sees
//! both; dave turned likes off on "Fixing a bike in the rain", so alice's like is refused, and
//! the page says so and shows the post unliked.

use super::log;
use super::webdriver::{poll, Browser};
use crate::common::{http, token, Options, Stack};

#[test]
fn the_demo_page_shows_hidden_counts_private_likers_and_closed_posts() {
    let stack = Stack::start(&Options {
        env: vec![("LIKES_DEMO_POLICIES", "on".into())],
        ..Options::default()
    });
    for user in ["bob", "carol"] {
        let (s, b) = http(
            stack.port,
            "PUT",
            "/posts/demo-post-12/like",
            Some(&token(user)),
        )
        .expect("a seed like");
        assert_eq!(s, 200, "{b}");
    }
    let browser = Browser::start();
    browser.goto(&format!("http://127.0.0.1:{}/", stack.demo_port));
    browser.wait_for("body[data-user='alice']", 30);
    let cello = "li.post[data-post='demo-post-12']";
    browser.wait_for(&format!("{cello} .count.hidden-count"), 30);

    browser.click(&format!("{cello} .who"));
    poll(15, "who liked: private", || {
        let text = browser.text("#likers-list");
        text.contains("Only the post's author").then_some(())
    });

    let bike = "li.post[data-post='demo-post-14']";
    browser.click(&format!("{bike} .like"));
    // Said on the post itself (the status line is the feed's, and the next poll rewrites it).
    browser.wait_for(&format!("{bike}.closed"), 15);
    browser.wait_for(&format!("{bike} .like[aria-pressed='false']"), 10);

    // The author sees her post's count and who liked it.
    browser.type_into("#user", "carol");
    browser.click("#switch");
    browser.wait_for("body[data-user='carol']", 10);
    poll(30, "carol sees the count", || {
        (browser.text(&format!("{cello} .count")) == "2").then_some(())
    });
    browser.click(&format!("{cello} .who"));
    poll(15, "carol sees who liked", || {
        let text = browser.text("#likers-list");
        (text.contains("bob") && text.contains("carol")).then_some(())
    });
    assert!(
        browser.find("#likers-list .private").is_none(),
        "{}",
        log(&stack)
    );
}
