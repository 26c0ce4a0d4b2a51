//! In-memory stores with DynamoDB's semantics, for tests of the logic above the stores (the
//! handlers, the aggregator, the erase and admin flows, the paging rules) that need no
//! emulator. Behind the `testing` feature: never in a deployed binary.
//!
//! As on DynamoDB, recount windows live with the likes: [`MemoryCounts::recording_into`] makes
//! the aggregator's window entries visible to the admin tool's reads of a [`MemoryLikes`].

mod counts;
mod erasures;
mod events;
mod hidden;
mod likes;
mod likes_admin;
mod moderation;
mod reactions;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::bucket::PostBucket;
use crate::store::{StoreError, Window};

pub use counts::MemoryCounts;
pub use erasures::MemoryErasureRequests;
pub use events::{BusFaults, MemoryBus, MemoryMilestones, MemorySuppression};
pub use likes::MemoryLikes;
pub use moderation::{MemoryBlocks, MemoryHomes, MemoryPolicies, MemorySuspensions};

fn poisoned() -> StoreError {
    StoreError::Internal("a test store's lock was poisoned".into())
}

/// Recount window entries by bucket and sort key (`crate::control::window_key`): whether the
/// change was a like.
pub type Windows = BTreeMap<(PostBucket, String), bool>;

/// The window entries, shared by the Counts store that records them and the Likes store the
/// admin tool reads them from.
pub type SharedWindows = Arc<Mutex<Windows>>;

/// `job`'s window on `bucket` among the recorded entries.
fn read_window(windows: &Windows, bucket: &PostBucket, job: &str) -> Window {
    let range = crate::control::job_window(job);
    Window::of(
        job,
        windows
            .iter()
            .filter(|((b, key), _)| b == bucket && range.contains(key))
            .map(|((_, key), liked)| (key.as_str(), *liked)),
    )
}

/// "Who liked" or "who reacted with K" over a post's 16 buckets, as the index query and its
/// merge read them: `entries` are every (bucket, user, time) of the listing.
fn listing<'a>(
    entries: impl Iterator<Item = (&'a PostBucket, &'a crate::ids::UserId, &'a String)> + Clone,
    post: &crate::ids::PostId,
    limit: usize,
    after: Option<crate::store::LikerPos>,
) -> crate::store::Page<crate::store::LikerPos> {
    use crate::store::page::{self, BucketScan};
    use crate::store::LikerPos;
    let pages = PostBucket::all(post).map(|pb| {
        let mut scan = BucketScan::new(limit, after.clone());
        let mut bucket: Vec<LikerPos> = entries
            .clone()
            .filter(|(p, _, t)| **p == pb && scan.start_at().is_none_or(|s| t.as_str() <= s))
            .map(|(_, u, t)| LikerPos {
                liked_at: t.clone(),
                user_id: u.clone(),
            })
            .collect();
        // The index promises no order among ties: scramble them.
        let scramble = |p: &LikerPos| crate::bucket::fnv1a64(p.user_id.to_string().as_bytes());
        bucket.sort_by(|a, b| {
            b.liked_at
                .cmp(&a.liked_at)
                .then(scramble(a).cmp(&scramble(b)))
        });
        for pos in bucket {
            if !scan.offer(pos) {
                break;
            }
        }
        scan.finish()
    });
    page::merge(pages, limit)
}
