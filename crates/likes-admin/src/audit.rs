//! Audit: a post's count against its table. Cheap first — per bucket, the Counts item's count
//! against a consistent `Select=COUNT` of the bucket; they legitimately differ by what is still
//! in the stream, so only for buckets that differ, exact second: the fence protocol without the
//! correction, which compares at a point of the stream past the audit's start. A quiet, correct
//! post costs 16 small queries and one read; it is never reported.

use likes_core::bucket::fnv1a64;
use serde_json::{json, Value};

use likes_core::reaction::LIKE;
use likes_core::{CountsAdmin, LikesAdmin, PostBucket, PostId, BUCKETS};

use crate::recount::recount_post;
use crate::{AdminError, Stores};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub bucket: u8,
    /// `like`, or the reaction kind that drifted.
    pub kind: String,
    /// The count the aggregator had, and the exact one, at the same point of the stream.
    pub counted: i64,
    pub exact: i64,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostAudit {
    pub post: PostId,
    pub drifts: Vec<Drift>,
    /// Buckets whose quick check differed (and so were checked exactly).
    pub checked_exactly: usize,
}

impl PostAudit {
    pub fn json(&self) -> Value {
        json!({
            "post_id": self.post,
            "drifted": !self.drifts.is_empty(),
            "checked_exactly": self.checked_exactly,
            "drifts": self.drifts.iter().map(|d| json!({
                "bucket": d.bucket, "kind": d.kind, "counted": d.counted, "exact": d.exact
            })).collect::<Vec<_>>(),
        })
    }
}

pub async fn audit_post<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    post: &PostId,
) -> Result<PostAudit, AdminError> {
    let item = s.counts.read_post(post).await?.unwrap_or_default();
    let mut differing = Vec::new();
    for b in 0..BUCKETS {
        let pb = PostBucket {
            post: post.clone(),
            bucket: b,
        };
        // Every kind the table holds in the bucket against every kind the item counts.
        let held = s.likes.count_kinds(&pb).await?;
        let counted = &item.buckets[usize::from(b)];
        let like = held.get(LIKE).copied().unwrap_or(0) != counted.count;
        let other =
            |k: &String, n: i64| k != LIKE && counted.kinds.get(k).copied().unwrap_or(0) != n;
        let kinds = held.iter().any(|(k, n)| other(k, *n))
            || counted
                .kinds
                .iter()
                .any(|(k, n)| *n != held.get(k).copied().unwrap_or(0));
        if like || kinds {
            differing.push(b);
        }
    }
    let mut drifts = Vec::new();
    if !differing.is_empty() {
        for r in recount_post(s, post, &differing, false).await? {
            if r.drift() != 0 {
                drifts.push(Drift {
                    bucket: r.bucket,
                    kind: LIKE.to_owned(),
                    counted: r.counted,
                    exact: r.exact,
                });
            }
            for k in r.kinds.iter().filter(|k| k.counted != k.exact) {
                drifts.push(Drift {
                    bucket: r.bucket,
                    kind: k.kind.clone(),
                    counted: k.counted,
                    exact: k.exact,
                });
            }
        }
    }
    Ok(PostAudit {
        post: post.clone(),
        drifts,
        checked_exactly: differing.len(),
    })
}

/// Every post with a Counts item or with likes (or a sample of `sample` of them, chosen by
/// `seed`: the same seed picks the same posts). The Likes table is scanned too: a post whose
/// first likes were in a batch the aggregator gave up has likes but no Counts item, and its
/// drift would otherwise be invisible (a Scan: ~0.0125 read units per like, parallel segments).
pub async fn all_posts<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    sample: Option<usize>,
    seed: u64,
) -> Result<Vec<PostId>, AdminError> {
    let items = std::sync::atomic::AtomicU64::new(0);
    let scans = (0..SCAN_SEGMENTS).map(|seg| s.likes.scan_posts(seg, SCAN_SEGMENTS, &items));
    let mut found = std::collections::BTreeSet::new();
    for posts in futures::future::join_all(scans).await {
        found.extend(posts?);
    }
    found.extend(s.counts.counted_posts().await?);
    let mut posts: Vec<PostId> = found.iter().filter_map(|p| PostId::parse(p).ok()).collect();
    if let Some(n) = sample.filter(|n| *n < posts.len()) {
        // A seeded hash of each id orders the posts at random, reproducibly.
        let key = |p: &PostId| fnv1a64(format!("{seed}#{p}").as_bytes());
        posts.sort_by_cached_key(key);
        posts.truncate(n);
    }
    Ok(posts)
}

/// Parallel Scan segments of the Likes table in `audit --all`.
const SCAN_SEGMENTS: u32 = 4;
