//! The Counts table in memory, with the conditional updates' semantics: the aggregator's
//! counts, marks, fences and windows, and the admin tool's lease and correction.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

use super::{poisoned, MemoryLikes, SharedWindows};
use crate::bucket::PostBucket;
use crate::control::window_key;
use crate::ids::PostId;
use crate::store::{
    ApplyOutcome, BucketCount, BucketWrite, CountsAdmin, CountsLedger, CountsRead, Ended,
    FenceRecord, FenceWrite, LeaseState, PostCounts, RepairNote, StoreError, Window, WindowEntry,
};
use crate::time::now_ts;

/// The Counts table: one item per post; and the recount window entries the aggregator records
/// (in the Likes table on DynamoDB: shared with a [`MemoryLikes`] by [`Self::recording_into`]).
///
/// A clone is the same table (as two clients of one DynamoDB table are): the aggregator and the
/// API of one test share it that way.
#[derive(Debug, Default, Clone)]
pub struct MemoryCounts {
    items: Arc<Mutex<HashMap<PostId, PostCounts>>>,
    windows: SharedWindows,
    /// The aggregator's repair notes (items beside the posts' on DynamoDB).
    notes: Arc<Mutex<BTreeMap<PostId, RepairNote>>>,
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

    /// `job`'s window on `bucket`, as the admin tool would read it.
    pub fn window_now(&self, bucket: &PostBucket, job: &str) -> Window {
        self.windows
            .lock()
            .map(|w| super::read_window(&w, bucket, job))
            .unwrap_or_default()
    }

    /// Runs `f` on the post's item, created empty if absent.
    fn with_item<T>(
        &self,
        post: &PostId,
        f: impl FnOnce(&mut PostCounts) -> T,
    ) -> Result<T, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        Ok(f(items.entry(post.clone()).or_default()))
    }
}

/// Whether a write of records from `first` on is below the bucket's mark (not yet applied).
fn below_mark(b: &BucketCount, first: crate::seq::Seq<'_>) -> bool {
    b.hwm.as_ref().is_none_or(|h| h.as_seq() < first)
}

impl CountsLedger for MemoryCounts {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> Result<ApplyOutcome, StoreError> {
        self.with_item(post, |item| {
            let stale = writes.iter().any(|w| {
                let b = &item.buckets[usize::from(w.bucket)];
                !below_mark(b, w.first) || b.window.as_deref() != w.window
            });
            if stale {
                return ApplyOutcome::AlreadyApplied;
            }
            let mut counts = Vec::with_capacity(writes.len());
            for w in writes {
                let b = &mut item.buckets[usize::from(w.bucket)];
                b.count += w.delta;
                for (kind, d) in &w.kinds {
                    *b.kinds.entry((*kind).to_owned()).or_insert(0) += d;
                }
                b.hwm = Some(w.last.to_owned());
                b.hwm_created = Some(w.last_created);
                if w.window.is_some() {
                    b.window_entries += u64::from(w.records);
                }
                counts.push((w.bucket, b.count));
            }
            item.updated_at = Some(now_ts());
            ApplyOutcome::Applied { counts }
        })
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        Ok(self.read_post_now(post))
    }

    async fn note_unapplied(&self, post: &PostId, from: &str) -> Result<(), StoreError> {
        // A fresh id for every note: a clear must see that the post was noted again.
        static NOTED: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let id = NOTED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut notes = self.notes.lock().map_err(|_| poisoned())?;
        notes.insert(
            post.clone(),
            RepairNote {
                post: post.clone(),
                noted_ms: chrono::Utc::now().timestamp_millis(),
                id: id.to_string(),
                from: from.to_owned(),
            },
        );
        Ok(())
    }

    async fn fence(&self, post: &PostId, r: &FenceRecord<'_>) -> Result<ApplyOutcome, StoreError> {
        self.with_item(post, |item| {
            let lease = item.lease.as_ref().map(|l| l.job.clone());
            let b = &mut item.buckets[usize::from(r.bucket)];
            let placed = match r.replaces_mark {
                Some(ahead) => b.hwm.as_ref() == Some(ahead),
                None => below_mark(b, r.seq),
            };
            if !placed {
                return ApplyOutcome::AlreadyApplied;
            }
            match r.fence {
                FenceWrite::Begin {
                    job,
                    holds_lease: true,
                } => {
                    if lease.as_deref() != Some(job) {
                        return ApplyOutcome::AlreadyApplied;
                    }
                    b.window = Some(job.to_owned());
                    b.window_opened = Some(r.created);
                    b.window_entries = 0;
                }
                FenceWrite::End {
                    job,
                    closes: true,
                    kinds,
                } => {
                    if b.window.as_deref() != Some(job) {
                        return ApplyOutcome::AlreadyApplied;
                    }
                    // As on DynamoDB: only the kinds the fence names are noted.
                    let noted = kinds
                        .iter()
                        .map(|k| (k.clone(), b.kinds.get(k).copied().unwrap_or(0)))
                        .collect();
                    b.ended = Some(Ended {
                        job: job.to_owned(),
                        count: b.count,
                        entries: b.window_entries,
                        kinds: noted,
                    });
                    b.window = None;
                    b.window_opened = None;
                    b.window_entries = 0;
                }
                FenceWrite::Begin { .. } | FenceWrite::End { .. } => {}
            }
            b.hwm = Some(r.seq.to_owned());
            b.hwm_created = Some(r.created);
            item.updated_at = Some(now_ts());
            ApplyOutcome::Applied { counts: Vec::new() }
        })
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let mut w = self.windows.lock().map_err(|_| poisoned())?;
        for e in entries {
            let key = window_key(e.job, e.user, &e.seq.key());
            w.insert((bucket.clone(), key), e.liked);
        }
        Ok(())
    }

    async fn close_window(&self, post: &PostId, bucket: u8, job: &str) -> Result<bool, StoreError> {
        self.with_item(post, |item| {
            let b = &mut item.buckets[usize::from(bucket)];
            if b.window.as_deref() != Some(job) {
                return false;
            }
            b.window = None;
            b.window_opened = None;
            b.window_entries = 0;
            true
        })
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

    async fn kind_counts(&self, post: &PostId) -> Result<BTreeMap<String, i64>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items
            .get(post)
            .map(PostCounts::kind_totals)
            .unwrap_or_default())
    }

    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(posts
            .iter()
            .filter_map(|p| items.get(p).map(|i| (p.clone(), i.kind_totals())))
            .collect())
    }
}

impl CountsAdmin for MemoryCounts {
    async fn take_lease(
        &self,
        post: &PostId,
        job: &str,
        term_secs: u64,
        seen: Option<&LeaseState>,
    ) -> Result<bool, StoreError> {
        self.with_item(post, |item| {
            if item.lease.as_ref() != seen {
                return false;
            }
            item.lease = Some(LeaseState {
                job: job.to_owned(),
                beat: 0,
                term_secs,
            });
            true
        })
    }

    async fn renew_lease(&self, post: &PostId, job: &str) -> Result<bool, StoreError> {
        self.with_item(post, |item| match item.lease.as_mut() {
            Some(l) if l.job == job => {
                l.beat += 1;
                true
            }
            _ => false,
        })
    }

    async fn release_lease(&self, post: &PostId, job: &str) -> Result<(), StoreError> {
        self.with_item(post, |item| {
            if item.lease.as_ref().is_some_and(|l| l.job == job) {
                item.lease = None;
            }
        })
    }

    async fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
        kinds: &[(String, i64)],
    ) -> Result<bool, StoreError> {
        self.with_item(post, |item| {
            let holds = item.lease.as_ref().is_some_and(|l| l.job == job);
            let b = &mut item.buckets[usize::from(bucket)];
            if !holds || b.ended.as_ref().map(|e| e.job.as_str()) != Some(job) {
                return false;
            }
            b.count += diff;
            for (kind, d) in kinds {
                *b.kinds.entry(kind.clone()).or_insert(0) += d;
            }
            b.ended = None;
            true
        })
    }

    async fn counted_posts(&self) -> Result<Vec<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.keys().map(|p| p.to_string()).collect())
    }

    async fn repair_notes(&self) -> Result<Vec<RepairNote>, StoreError> {
        let notes = self.notes.lock().map_err(|_| poisoned())?;
        Ok(notes.values().cloned().collect())
    }

    async fn clear_note(&self, note: &RepairNote) -> Result<bool, StoreError> {
        let mut notes = self.notes.lock().map_err(|_| poisoned())?;
        if notes.get(&note.post) != Some(note) {
            return Ok(false);
        }
        notes.remove(&note.post);
        Ok(true)
    }
}
