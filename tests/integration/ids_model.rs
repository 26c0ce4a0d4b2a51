//! Any id in the grammar works everywhere, and nothing outside it gets in: every route, the
//! stored keys, the cursors and the stream parse, through the real handler and the real
//! aggregator on in-memory stores (no emulator: part of `make unit`).

use count_aggregator::Aggregator;
use likes_api::App;
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{PostBucket, PostId, UserId};
use likes_harness::stream::{event, Deliver, Rec};
use likes_harness::{call, call_as, ApiEvent};
use proptest::prelude::*;
use serde_json::Value;

type MemApp = App<MemoryLikes, MemoryCounts>;

/// Percent-encodes every byte outside `A-Za-z0-9-._`, and with `all` every byte, as a client
/// may: the API decodes exactly once either way.
fn encode(id: &str, all: bool) -> String {
    id.bytes()
        .map(|b| {
            if !all && (b.is_ascii_alphanumeric() || b"-._".contains(&b)) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

fn ids(v: &Value, field: &str) -> Vec<String> {
    v["items"]
        .as_array()
        .expect("items")
        .iter()
        .map(|i| i[field].as_str().expect("an id").to_owned())
        .collect()
}

/// All pages of a listing, one item per page.
async fn pages(app: &MemApp, path: &str, me: &str, field: &str) -> Vec<String> {
    let mut got = Vec::new();
    let mut query = "limit=1".to_owned();
    for _ in 0..10 {
        let (s, b, _) = call(app, ApiEvent::new("GET", path).query(&query).caller(me)).await;
        assert_eq!(s, 200, "{b}");
        got.extend(ids(&b, field));
        match b["next_cursor"].as_str() {
            Some(c) => query = format!("limit=1&cursor={c}"),
            None => break,
        }
    }
    got.sort();
    got
}

async fn round_trip(post: &str, other: &str, user: &str, all: bool) {
    let counts = MemoryCounts::default();
    let app: MemApp = App::new(MemoryLikes::default(), counts.clone());
    let (p, q) = (encode(post, all), encode(other, all));
    for (path, who) in [(&p, user), (&p, other), (&q, user)] {
        let (s, b, _) = call_as(&app, "PUT", &format!("/posts/{path}/like"), who).await;
        assert_eq!(s, 200, "{b}");
        assert_eq!(
            (b["user_id"].as_str(), b["changed"].as_bool()),
            (Some(who), Some(true))
        );
    }
    let (_, b, _) = call_as(&app, "GET", &format!("/posts/{p}/like"), user).await;
    assert_eq!(
        (b["post_id"].as_str(), &b["liked"]),
        (Some(post), &Value::Bool(true))
    );

    let mut want = vec![user.to_owned(), other.to_owned()];
    want.sort();
    assert_eq!(
        pages(&app, &format!("/posts/{p}/likes"), user, "user_id").await,
        want
    );
    let mut want = vec![post.to_owned(), other.to_owned()];
    want.sort();
    assert_eq!(pages(&app, "/users/me/likes", user, "post_id").await, want);
    let comma = if all { "%2C" } else { "," };
    let summary = ApiEvent::new("GET", "/likes/summary").query(&format!("post_ids={p}{comma}{q}"));
    let (s, b, _) = call(&app, summary.caller(user)).await;
    assert_eq!(s, 200, "{b}");
    assert_eq!(ids(&b, "post_id"), [post, other]);

    // The stored keys, as stream records, count through the aggregator into the count route.
    let (post_id, user_id) = (PostId::parse(post).unwrap(), UserId::parse(user).unwrap());
    let key = PostBucket::for_like(&post_id, &user_id);
    let rec = Rec::new(true, &post_id, &user_id, "100000000000000000001");
    assert_eq!(rec.row(), key);
    let report = Aggregator::new(counts.clone())
        .deliver(&event(&[rec]))
        .await;
    assert_eq!((report.groups, report.skipped), (1, 0));
    let (_, b, _) = call_as(&app, "GET", &format!("/posts/{p}/likes/count"), user).await;
    assert_eq!(b["like_count"], 1);

    let (_, b, _) = call_as(&app, "DELETE", &format!("/posts/{p}/like"), user).await;
    assert_eq!(b["changed"], true);
    assert!(!app.likes.pairs().contains(&(post_id, user_id)));
}

const ID: &str = "[A-Za-z0-9._:|@+=-]{1,128}";
/// Strings outside the grammar: an excluded byte somewhere, too long, or not ASCII.
const NOT_ID: &str = "[A-Za-z0-9]{0,4}[#~,/ %?&\"\\\\\t\n]{1,3}[A-Za-z0-9]{0,4}|x{129,140}|[a-z]{0,3}[é€ü][a-z]{0,3}";

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]
    #[test]
    fn every_id_in_the_grammar_works_on_every_route(
        post in ID, other in ID, user in ID, all in any::<bool>()
    ) {
        prop_assume!(post != other && user != other);
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(round_trip(&post, &other, &user, all));
    }

    #[test]
    fn every_id_outside_it_is_refused_and_writes_nothing(bad in NOT_ID, all in any::<bool>()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let counts = MemoryCounts::default();
            let app: MemApp = App::new(MemoryLikes::default(), counts.clone());
            let good = UserId::new_random().to_string();
            let path = format!("/posts/{}/like", encode(&bad, true));
            let (s, b, _) = call_as(&app, "PUT", &path, &good).await;
            assert_eq!((s, b["error"]["code"].as_str()), (400, Some("invalid_id")), "{bad:?}: {b}");
            assert!(b["error"]["message"].as_str().unwrap().contains("post_id"));
            // In post_ids a comma separates ids (encoded or not), so it is not part of a bad id.
            if !bad.contains(',') {
                let query = format!("post_ids={}", encode(&bad, all));
                let (s, b, _) = call(&app, ApiEvent::new("GET", "/likes/summary").query(&query).caller(&good)).await;
                assert_eq!(s, 400, "{bad:?}: {b}");
                assert!(b["error"]["message"].as_str().unwrap().contains("post_ids"), "{b}");
            }
            let (s, b, _) = call_as(&app, "PUT", "/posts/p/like", &bad).await;
            assert_eq!((s, b["error"]["code"].as_str()), (401, Some("unauthorized")), "{bad:?}");
            assert!(app.likes.pairs().is_empty(), "nothing was written");
        });
    }
}
