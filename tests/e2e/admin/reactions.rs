//! The repairs know every kind (docs/reactions.md): a reaction count drifted behind the
//! aggregator's back is found by `audit`, named by its kind, and made exact by `recount`, through
//! the command line against the local stack; the like's count beside it is left as it was.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::{bucket_of, CountsLedger, PostBucket, PostId, UserId};
use serde_json::json;

use super::Local;
use crate::common::{http, token, Emulator};

const POST: &str = "reacted";

/// The bucket's `love` count on the Counts item, and in the table.
fn love(local: &Local, bucket: u8) -> (i64, i64) {
    let post = PostId::parse(POST).expect("a post id");
    let item = local
        .rt
        .block_on(local.stores.counts.read_post(&post))
        .expect("read Counts")
        .unwrap_or_default();
    let counted = item.buckets[usize::from(bucket)]
        .kinds
        .get("love")
        .copied()
        .unwrap_or(0);
    let pb = PostBucket { post, bucket };
    let held = local
        .rt
        .block_on(likes_core::LikesAdmin::count_kinds(
            &local.stores.likes,
            &pb,
        ))
        .expect("count the table");
    (counted, held.get("love").copied().unwrap_or(0))
}

fn wait_love(local: &Local, bucket: u8, want: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (counted, held) = love(local, bucket);
        if counted == want && held == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "love in bucket {bucket}: counted {counted}, held {held}, want {want}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn a_drifted_reaction_count_is_found_by_audit_and_made_exact_by_recount() {
    let local = Local::with(
        Emulator::start(),
        None,
        vec![("LIKES_REACTION_KINDS", "like,love".to_owned())],
    );
    let users = ["ann", "bob", "cy"];
    for u in users {
        let path = format!("/posts/{POST}/reactions/love");
        let (s, b) = http(local.stack.port, "PUT", &path, Some(&token(u))).expect("a reaction");
        assert_eq!(s, 200, "{b}");
    }
    let (s, _) = http(
        local.stack.port,
        "PUT",
        &format!("/posts/{POST}/like"),
        Some(&token("ann")),
    )
    .expect("a like");
    assert_eq!(s, 200);
    let b = bucket_of(&UserId::parse("ann").expect("an id"));
    let in_b = users
        .iter()
        .filter(|u| bucket_of(&UserId::parse(u).expect("an id")) == b)
        .count() as i64;
    wait_love(&local, b, in_b);
    local.wait_exact(POST, Duration::from_secs(60));

    // Drift: 5 loves too many, written behind the aggregator's back.
    let attr = likes_aws::dynamo::counts::kind_attr(b, "love");
    local
        .rt
        .block_on(
            local
                .client
                .update_item()
                .table_name("counts")
                .key("post_id", AttributeValue::S(POST.into()))
                .update_expression("ADD #k :d")
                .expression_attribute_names("#k", attr)
                .expression_attribute_values(":d", AttributeValue::N("5".into()))
                .send(),
        )
        .expect("drift written");

    let r = local.admin(&["audit", "--post", POST]).expect("audit runs");
    assert!(!r.clean, "drift found means exit status 1: {}", r.doc);
    let want = json!([{"bucket": b, "kind": "love", "counted": in_b + 5, "exact": in_b}]);
    assert_eq!(r.doc["posts"][0]["drifts"], want, "{}", r.doc);

    let likes_before = local.counted(POST);
    let r = local
        .admin(&["recount", "--post", POST])
        .expect("recount runs");
    assert!(r.clean, "{}", r.doc);
    assert_eq!(love(&local, b), (in_b, in_b), "{}", r.doc);
    assert_eq!(
        local.counted(POST),
        likes_before,
        "the like's counts are untouched"
    );
    let again = local.admin(&["audit", "--post", POST]).expect("audit runs");
    assert!(again.clean, "{}", again.doc);
}
