//! Audit: a post's count against its table. Cheap first — per bucket, the Counts item's count
//! against a consistent `Select=COUNT` of the bucket; they legitimately differ by what is still
//! in the stream, so only for buckets that differ, exact second: the fence protocol without the
//! correction, which compares at a point of the stream past the audit's start. A quiet, correct
//! post costs 16 small queries and one read; it is never reported.

use serde_json::{json, Value};

use likes_core::{CountsStore, DynamoCounts, PostBucket, PostId, BUCKETS};

use crate::recount::recount_post;
use crate::{AdminError, Tables};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Drift {
    pub bucket: u8,
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
                "bucket": d.bucket, "counted": d.counted, "exact": d.exact
            })).collect::<Vec<_>>(),
        })
    }
}

pub async fn audit_post(t: &Tables, post: &PostId) -> Result<PostAudit, AdminError> {
    let item = DynamoCounts::new(t.client.clone(), &t.counts)
        .read_post(post)
        .await?
        .unwrap_or_default();
    let mut differing = Vec::new();
    for b in 0..BUCKETS {
        let pb = PostBucket {
            post: post.clone(),
            bucket: b,
        };
        if t.table_count(&pb).await? != item.buckets[usize::from(b)].count {
            differing.push(b);
        }
    }
    let mut drifts = Vec::new();
    if !differing.is_empty() {
        for r in recount_post(t, post, &differing, false).await? {
            if r.drift() != 0 {
                drifts.push(Drift {
                    bucket: r.bucket,
                    counted: r.counted,
                    exact: r.exact,
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

/// Every post with a Counts item (or a sample of `sample` of them).
pub async fn all_posts(t: &Tables, sample: Option<usize>) -> Result<Vec<PostId>, AdminError> {
    let mut posts = Vec::new();
    let mut start = None;
    loop {
        let page = t
            .client
            .scan()
            .table_name(&t.counts)
            .projection_expression("#p")
            .expression_attribute_names("#p", likes_core::schema::counts::PK)
            .set_exclusive_start_key(start)
            .send()
            .await
            .map_err(likes_core::store::error::classify_read)?;
        for item in page.items() {
            if let Some(Ok(p)) = item
                .get(likes_core::schema::counts::PK)
                .and_then(|v| v.as_s().ok())
                .map(|p| PostId::parse(p))
            {
                posts.push(p);
            }
        }
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => break,
        }
    }
    if let Some(n) = sample.filter(|n| *n < posts.len()) {
        // A seeded shuffle: a sample is reproducible from the run's seed.
        let mut rng = likes_testkit::rng::SplitMix(chrono::Utc::now().timestamp() as u64);
        for i in (1..posts.len()).rev() {
            posts.swap(i, rng.below(i as u64 + 1) as usize);
        }
        posts.truncate(n);
    }
    Ok(posts)
}
