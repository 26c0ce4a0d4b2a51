//! The chaos run's oracle: each bucket's count of each kind, read from the Counts items
//! themselves (the API clamps a negative count to 0 and sums the buckets, which could hide two
//! errors that cancel), against that kind's items in that bucket of the Likes table. Both tables are read whole, with
//! consistent scans: a few requests per poll, where a query per bucket would be a thousand.

use std::collections::BTreeMap;

use likes_aws::DynamoCounts;
use likes_core::reaction::{Held, LIKE};
use likes_core::{CountsLedger, PostBucket, PostId, BUCKETS};

/// Items per (post, bucket, kind); control items (`~…` sort keys) are no kind's.
async fn held(client: &aws_sdk_dynamodb::Client) -> BTreeMap<(String, u8, String), i64> {
    let mut per = BTreeMap::new();
    for item in likes_harness::scan(client, "likes").await {
        let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        let (Some(pb), Some(key)) = (text("post_bucket"), text("user_id")) else {
            panic!("a Likes item without its keys: {item:?}");
        };
        let Some(kind) = Held::of(&key).kind() else {
            continue;
        };
        let pb = PostBucket::parse(&pb).expect("a stored post_bucket");
        *per.entry((pb.post.to_string(), pb.bucket, kind.to_owned()))
            .or_default() += 1;
    }
    per
}

/// Every bucket of every post whose count of one of `kinds` differs from its items of that
/// kind, as `post P: bucket B counted X of K, Y items`.
pub async fn mismatches(
    client: &aws_sdk_dynamodb::Client,
    counts: &DynamoCounts,
    posts: &[String],
    kinds: &[&str],
) -> Vec<String> {
    let held = held(client).await;
    let mut off = Vec::new();
    for post in posts {
        let id = PostId::parse(post).expect("a post id");
        let item = counts.read_post(&id).await.expect("the Counts item read");
        for bucket in 0..BUCKETS {
            for kind in kinds {
                let counted = item.as_ref().map_or(0, |c| {
                    let b = &c.buckets[usize::from(bucket)];
                    match *kind {
                        LIKE => b.count,
                        _ => b.kinds.get(*kind).copied().unwrap_or(0),
                    }
                });
                let items = held
                    .get(&(post.clone(), bucket, (*kind).to_owned()))
                    .copied()
                    .unwrap_or(0);
                if counted != items {
                    off.push(format!(
                        "post {post}: bucket {bucket} counted {counted} of {kind}, {items} items"
                    ));
                }
            }
        }
    }
    off
}
