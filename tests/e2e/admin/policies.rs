//! A post's policy through `make dev`'s bus: `PutEvents` of `PostPolicyChanged` on
//! `likes-product` closes the post to new likes (403 `likes_disabled`; unlikes still work) and
//! keeps its count and its likers to its author (`count_hidden`, 403 `likers_private` to anyone
//! else) within the API's cache time; a later policy opens it again; the author's block
//! refuses the blocked user's like (403 `blocked`) and leaves them out of the author's list of
//! likers; and `likes-admin set-policy` closes the post as the product would. Every call is the lab's:
//! the worker records the policy, the API reads it, as their roles allow.

use serde_json::{json, Value};

use super::product::{like, wait_until};
use super::Local;
use crate::common::{http, token, wait_for_count};

fn get(local: &Local, path: &str, tok: &str) -> (u16, Value) {
    http(local.stack.port, "GET", path, Some(tok)).expect("an answer")
}

#[test]
fn a_posts_policy_on_the_bus_closes_it_and_keeps_counts_and_likers_to_its_author() {
    let local = Local::start(None);
    let (author, fan) = ("auth0|policy-author", "auth0|policy-fan");
    let (a, f, late) = (token(author), token(fan), token("auth0|policy-late"));
    like(&local, "pp", &f);
    wait_for_count(&local.stack, "pp", &f, 1);

    let closed = json!({"post_id": "pp", "author_id": author, "likes": "off", "counts": "author",
        "likers": "author", "at": likes_core::time::now_ts()});
    local.put_product_event("PostPolicyChanged", &closed);
    wait_until("likes on pp refused", || {
        let (s, body) =
            http(local.stack.port, "PUT", "/posts/pp/like", Some(&late)).expect("an answer");
        assert!(
            s == 200 || (s == 403 && body["error"]["code"] == "likes_disabled"),
            "{s} {body}"
        );
        s == 403
    });
    // Counts and likers: the author's alone.
    let (s, body) = get(&local, "/posts/pp/likes/count", &f);
    assert_eq!(s, 200, "{body}");
    assert_eq!(
        (&body["like_count"], &body["count_hidden"]),
        (&Value::Null, &json!(true))
    );
    let (s, body) = get(&local, "/posts/pp/likes/count", &a);
    assert!(s == 200 && body["like_count"].as_i64() >= Some(1), "{body}");
    let (s, body) = get(&local, "/posts/pp/likes", &f);
    assert_eq!((s, &body["error"]["code"]), (403, &json!("likers_private")));
    // `among` is a list of likers too.
    let among = format!("/posts/pp/likes?among={fan},{author}");
    let (s, body) = get(&local, &among, &f);
    assert_eq!((s, &body["error"]["code"]), (403, &json!("likers_private")));
    let (s, body) = get(&local, "/posts/pp/likes", &a);
    assert_eq!(s, 200, "{body}");
    let listed: Vec<&Value> = body["items"].as_array().expect("items").iter().collect();
    assert!(listed.iter().any(|i| i["user_id"] == fan), "{body}");
    // An unlike still works.
    let (s, body) =
        http(local.stack.port, "DELETE", "/posts/pp/like", Some(&f)).expect("an answer");
    assert_eq!((s, &body["changed"]), (200, &json!(true)), "{body}");

    let open = json!({"post_id": "pp", "author_id": author, "at": likes_core::time::now_ts()});
    local.put_product_event("PostPolicyChanged", &open);
    wait_until("likes on pp taken again", || {
        let (s, _) = http(local.stack.port, "PUT", "/posts/pp/like", Some(&f)).expect("an answer");
        s == 200
    });
    let (s, body) = get(&local, "/posts/pp/likes", &f);
    assert_eq!(s, 200, "likers public again: {body}");

    // The author blocks a user: their like of the author's post refused, and the author's
    // list of likers leaves them out (an earlier like of theirs stays counted).
    like(&local, "pp", &late);
    let block = json!({"blocker_id": author, "blocked_id": "auth0|policy-late",
        "at": likes_core::time::now_ts()});
    local.put_product_event("UserBlocked", &block);
    wait_until("the blocked user's like refused", || {
        // Liked already: a 200 changes nothing until the block is followed.
        let (s, body) =
            http(local.stack.port, "PUT", "/posts/pp/like", Some(&late)).expect("an answer");
        assert!(s == 200 || body["error"]["code"] == "blocked", "{s} {body}");
        s == 403
    });
    let lists_late = |tok: &str| {
        let (s, body) = get(&local, "/posts/pp/likes", tok);
        assert_eq!(s, 200, "{body}");
        let items = body["items"].as_array().cloned().unwrap_or_default();
        items.iter().any(|i| i["user_id"] == "auth0|policy-late")
    };
    assert!(!lists_late(&a), "the blocker does not see them");
    assert!(lists_late(&f), "anyone else does");
    // And so with `among`: which of the named liked it.
    let among = |tok: &str| {
        let (s, body) = get(
            &local,
            "/posts/pp/likes?among=auth0|policy-late,nobody",
            tok,
        );
        assert_eq!(s, 200, "{body}");
        body["items"].as_array().map_or(0, Vec::len)
    };
    assert_eq!((among(&a), among(&f)), (0, 1));

    // An operator's policy, dated now, is the latest: followed as the product's are.
    let report = local
        .admin(&[
            "set-policy",
            "--post",
            "pp",
            "--author",
            author,
            "--likes",
            "off",
        ])
        .expect("set-policy");
    assert_eq!(report.doc["likes"], "off", "{}", report.doc);
    wait_until("likes on pp refused again", || {
        let (s, _) =
            http(local.stack.port, "PUT", "/posts/pp/like", Some(&late)).expect("an answer");
        s == 403
    });
    assert!(
        local.stack.denied().is_empty(),
        "{:#?}",
        local.stack.denied()
    );
}
