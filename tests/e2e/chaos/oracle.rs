//! The chaos run's oracle: each bucket's count, read from the Counts items themselves (the API
//! clamps a negative count to 0 and sums the buckets, which could hide two errors that cancel),
//! against the like items in that bucket of the Likes table. Both tables are read whole, with
//! consistent scans: a few requests per poll, where a query per bucket would be a thousand.

use std::collections::BTreeMap;

use likes_aws::DynamoCounts;
use likes_core::{CountsLedger, PostBucket, PostId, BUCKETS};

/// Like items per (post, bucket); control items (`~…` sort keys) are not likes.
async fn liked(client: &aws_sdk_dynamodb::Client) -> BTreeMap<(String, u8), i64> {
    let mut per = BTreeMap::new();
    for item in likes_harness::scan(client, "likes").await {
        let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        let (Some(pb), Some(user)) = (text("post_bucket"), text("user_id")) else {
            panic!("a Likes item without its keys: {item:?}");
        };
        if user.starts_with('~') {
            continue;
        }
        let pb = PostBucket::parse(&pb).expect("a stored post_bucket");
        *per.entry((pb.post.to_string(), pb.bucket)).or_default() += 1;
    }
    per
}

/// Every bucket of every post whose count differs from its like items, as
/// `post P: bucket B counted X, Y like items`.
pub async fn mismatches(
    client: &aws_sdk_dynamodb::Client,
    counts: &DynamoCounts,
    posts: &[String],
) -> Vec<String> {
    let liked = liked(client).await;
    let mut off = Vec::new();
    for post in posts {
        let id = PostId::parse(post).expect("a post id");
        let item = counts.read_post(&id).await.expect("the Counts item read");
        for bucket in 0..BUCKETS {
            let counted = item
                .as_ref()
                .map_or(0, |c| c.buckets[usize::from(bucket)].count);
            let likes = liked.get(&(post.clone(), bucket)).copied().unwrap_or(0);
            if counted != likes {
                off.push(format!(
                    "post {post}: bucket {bucket} counted {counted}, {likes} like items"
                ));
            }
        }
    }
    off
}
