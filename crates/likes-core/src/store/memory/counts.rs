//! The Counts table in memory, with the conditional update's semantics, and recount leases.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::{poisoned, MemoryLikes, SharedWindows};
use crate::bucket::PostBucket;
use crate::ids::PostId;
use crate::seq::SeqNo;
use crate::store::{
    ApplyOutcome, BucketWrite, CountsAdmin, CountsLedger, CountsRead, FenceRecord, FenceWrite,
    Lease, PostCounts, StoreError, WindowEntry,
};
use crate::time::now_ts;

/// The Counts table, with the conditional update's semantics: one item per post; and the
/// recount window entries the aggregator records, by (bucket, job, user).
///
/// A clone is the same table (as two clients of one DynamoDB table are): the aggregator and the
/// API of one test share it that way.
#[derive(Debug, Default, Clone)]
pub struct MemoryCounts {
    items: Arc<Mutex<HashMap<PostId, PostCounts>>>,
    windows: SharedWindows,
    /// Recount leases: post → (job, until).
    leases: Arc<Mutex<HashMap<PostId, (String, i64)>>>,
}

impl MemoryCounts {
    /// A Counts store that records recount windows next to `likes`' items, where the admin
    /// tool reads them (as the DynamoDB store records them in the Likes table).
    pub fn recording_into(likes: &MemoryLikes) -> Self {
        Self {
            windows: Arc::clone(&likes.windows),
            ..Self::default()
        }
    }

    /// A post's item, without going through the trait's future.
    pub fn read_post_now(&self, post: &PostId) -> Option<PostCounts> {
        self.items.lock().ok()?.get(post).cloned()
    }

    /// `job`'s window entries on `bucket`: user → (sequence number, liked).
    pub fn window_entries(&self, bucket: &PostBucket, job: &str) -> HashMap<String, (SeqNo, bool)> {
        self.windows
            .lock()
            .map(|w| {
                w.iter()
                    .filter(|((b, j, _), _)| b == bucket && j == job)
                    .map(|((_, _, u), v)| (u.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Adds `diff` to a bucket if `job`'s end is the one noted there, and forgets it: a
    /// recount's correction.
    pub fn correct(&self, post: &PostId, bucket: u8, job: &str, diff: i64) -> bool {
        let Ok(mut items) = self.items.lock() else {
            return false;
        };
        let Some(b) = items
            .get_mut(post)
            .map(|i| &mut i.buckets[usize::from(bucket)])
        else {
            return false;
        };
        if b.ended.as_ref().map(|(j, _)| j.as_str()) != Some(job) {
            return false;
        }
        b.count += diff;
        b.ended = None;
        true
    }
}

impl CountsLedger for MemoryCounts {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> Result<ApplyOutcome, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let item = items.entry(post.clone()).or_default();
        let stale = writes.iter().any(|w| {
            let b = &item.buckets[usize::from(w.bucket)];
            b.hwm.as_ref().is_some_and(|h| h.as_seq() >= w.first) || b.window.as_deref() != w.window
        });
        if stale {
            return Ok(ApplyOutcome::AlreadyApplied);
        }
        let mut counts = Vec::with_capacity(writes.len());
        for w in writes {
            let b = &mut item.buckets[usize::from(w.bucket)];
            b.count += w.delta;
            b.hwm = Some(w.last.to_owned());
            b.hwm_created = Some(w.last_created);
            counts.push((w.bucket, b.count));
        }
        item.updated_at = Some(now_ts());
        Ok(ApplyOutcome::Applied { counts })
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        Ok(self
            .items
            .lock()
            .map_err(|_| poisoned())?
            .get(post)
            .cloned())
    }

    async fn fence(&self, post: &PostId, r: &FenceRecord<'_>) -> Result<ApplyOutcome, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let item = items.entry(post.clone()).or_default();
        let b = &mut item.buckets[usize::from(r.bucket)];
        if b.hwm.as_ref().is_some_and(|h| h.as_seq() >= r.seq) {
            return Ok(ApplyOutcome::AlreadyApplied);
        }
        match r.fence {
            FenceWrite::Begin { job } => b.window = Some(job.to_owned()),
            FenceWrite::End { job, closes: true } => {
                if b.window.as_deref() != Some(job) {
                    return Ok(ApplyOutcome::AlreadyApplied);
                }
                b.window = None;
                b.ended = Some((job.to_owned(), b.count));
            }
            FenceWrite::End { closes: false, .. } => {}
        }
        b.hwm = Some(r.seq.to_owned());
        b.hwm_created = Some(r.created);
        item.updated_at = Some(now_ts());
        Ok(ApplyOutcome::Applied { counts: Vec::new() })
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let mut w = self.windows.lock().map_err(|_| poisoned())?;
        for e in entries {
            let key = (bucket.clone(), e.job.to_owned(), e.user.to_owned());
            w.insert(key, (e.seq.to_owned(), e.liked));
        }
        Ok(())
    }
}

impl CountsRead for MemoryCounts {
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.get(post).map(PostCounts::total).unwrap_or(0))
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(posts
            .iter()
            .filter_map(|p| items.get(p).map(|i| (p.clone(), i.total())))
            .collect())
    }
}

impl CountsAdmin for MemoryCounts {
    async fn acquire_lease(
        &self,
        post: &PostId,
        job: &str,
        until: i64,
        now: i64,
    ) -> Result<Lease, StoreError> {
        let mut leases = self.leases.lock().map_err(|_| poisoned())?;
        match leases.get(post) {
            Some((held, held_until)) if *held_until >= now => Ok(Lease::Held {
                job: held.clone(),
                until: *held_until,
            }),
            _ => {
                leases.insert(post.clone(), (job.to_owned(), until));
                Ok(Lease::Taken)
            }
        }
    }

    async fn renew_lease(&self, post: &PostId, job: &str, until: i64) -> Result<bool, StoreError> {
        let mut leases = self.leases.lock().map_err(|_| poisoned())?;
        match leases.get_mut(post) {
            Some((held, held_until)) if held == job => {
                *held_until = until;
                Ok(true)
            }
            _ => Ok(false),
        }
    }

    async fn release_lease(&self, post: &PostId, job: &str) -> Result<(), StoreError> {
        let mut leases = self.leases.lock().map_err(|_| poisoned())?;
        if leases.get(post).is_some_and(|(held, _)| held == job) {
            leases.remove(post);
        }
        Ok(())
    }

    async fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
    ) -> Result<bool, StoreError> {
        Ok(self.correct(post, bucket, job, diff))
    }

    async fn counted_posts(&self) -> Result<Vec<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.keys().map(|p| p.to_string()).collect())
    }
}
