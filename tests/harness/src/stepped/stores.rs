//! The stores' side of the stepping rig: each call one step of its actor, its answer folded
//! into the actor's trace, and monitors of the protocol's rules on the calls that apply them.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::fmt::Debug;
use std::future::Future;
use std::sync::atomic::AtomicU64;

use likes_core::control::Phase;
use likes_core::store::HeldItem;
use likes_core::{
    ApplyOutcome, BucketWrite, CountsAdmin, CountsLedger, FenceRecord, LeaseState, LikesAdmin,
    PostBucket, PostCounts, PostId, RepairNote, StoreError, Window, WindowEntry,
};

use super::Gate;

/// A store whose every call waits for its actor's turn, and whose answers go into its trace.
#[derive(Debug, Clone)]
pub struct Stepped<S> {
    pub inner: S,
    pub gate: Gate,
}

impl<S> Stepped<S> {
    pub fn new(inner: S, gate: Gate) -> Self {
        Self { inner, gate }
    }

    async fn call<T: Debug>(&self, f: impl Future<Output = T>) -> T {
        self.gate.turn().await;
        let answer = f.await;
        self.gate.record(&answer);
        answer
    }
}

impl<C: CountsLedger> CountsLedger for Stepped<C> {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> Result<ApplyOutcome, StoreError> {
        self.call(self.inner.apply(post, writes)).await
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        // The time of the last update is no part of the state: the protocol never reads it.
        let read = self.call(async {
            let mut item = self.inner.read_post(post).await;
            if let Ok(Some(i)) = item.as_mut() {
                i.updated_at = None;
            }
            item
        });
        read.await
    }

    async fn fence(&self, post: &PostId, r: &FenceRecord<'_>) -> Result<ApplyOutcome, StoreError> {
        // Monitor: a fence is applied only above the bucket's mark (or to set a mark found
        // ahead back), read in the same step as the write.
        self.call(async {
            let before = self.inner.read_post(post).await;
            let answer = self.inner.fence(post, r).await;
            let mark = before.ok().flatten().and_then(|i| {
                let b = &i.buckets[usize::from(r.bucket)];
                b.hwm.clone()
            });
            let at_or_below = mark.as_ref().is_some_and(|m| m.as_seq() >= r.seq);
            if matches!(answer, Ok(ApplyOutcome::Applied { .. }))
                && r.replaces_mark.is_none()
                && at_or_below
            {
                self.gate.found(format!(
                    "a fence at {} applied at or below the mark {mark:?}",
                    r.seq.raw()
                ));
            }
            answer
        })
        .await
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        self.call(self.inner.record_window(bucket, entries)).await
    }

    async fn close_window(&self, post: &PostId, bucket: u8, job: &str) -> Result<bool, StoreError> {
        self.call(self.inner.close_window(post, bucket, job)).await
    }

    async fn note_unapplied(&self, post: &PostId, from: &str) -> Result<(), StoreError> {
        self.call(self.inner.note_unapplied(post, from)).await
    }
}

impl<C: CountsAdmin> CountsAdmin for Stepped<C> {
    async fn take_lease(
        &self,
        post: &PostId,
        job: &str,
        term_secs: u64,
        seen: Option<&LeaseState>,
    ) -> Result<bool, StoreError> {
        self.call(self.inner.take_lease(post, job, term_secs, seen))
            .await
    }

    async fn renew_lease(&self, post: &PostId, job: &str) -> Result<bool, StoreError> {
        self.call(self.inner.renew_lease(post, job)).await
    }

    async fn release_lease(&self, post: &PostId, job: &str) -> Result<(), StoreError> {
        self.call(self.inner.release_lease(post, job)).await
    }

    async fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
        kinds: &[(String, i64)],
    ) -> Result<bool, StoreError> {
        // Monitor: only the lease's holder changes a count.
        self.call(async {
            let before = self.inner.read_post(post).await;
            let answer = self.inner.settle(post, bucket, job, diff, kinds).await;
            let holder = before.ok().flatten().and_then(|i| i.lease).map(|l| l.job);
            if matches!(answer, Ok(true)) && holder.as_deref() != Some(job) {
                self.gate.found(format!(
                    "{job} settled bucket {bucket} while the lease was {holder:?}'s"
                ));
            }
            answer
        })
        .await
    }

    async fn counted_posts(&self) -> Result<Vec<String>, StoreError> {
        self.call(self.inner.counted_posts()).await
    }

    async fn repair_notes(&self) -> Result<Vec<RepairNote>, StoreError> {
        self.call(self.inner.repair_notes()).await
    }

    async fn clear_note(&self, note: &RepairNote) -> Result<bool, StoreError> {
        self.call(self.inner.clear_note(note)).await
    }
}

impl<L: LikesAdmin> LikesAdmin for Stepped<L> {
    async fn count_bucket(&self, bucket: &PostBucket) -> Result<i64, StoreError> {
        self.call(self.inner.count_bucket(bucket)).await
    }

    async fn count_kinds(&self, bucket: &PostBucket) -> Result<BTreeMap<String, i64>, StoreError> {
        self.call(self.inner.count_kinds(bucket)).await
    }

    async fn bucket_users(&self, bucket: &PostBucket) -> Result<HashSet<String>, StoreError> {
        // Sorted for the trace: a set's iteration order is no part of the answer.
        let users = self.inner.bucket_users(bucket);
        self.gate.turn().await;
        let answer = users.await;
        self.gate
            .record(&answer.as_ref().map(|u| u.iter().collect::<BTreeSet<_>>()));
        answer
    }

    async fn put_fence(
        &self,
        bucket: &PostBucket,
        job: &str,
        phase: Phase,
    ) -> Result<(), StoreError> {
        self.call(self.inner.put_fence(bucket, job, phase)).await
    }

    async fn window(&self, bucket: &PostBucket, job: &str) -> Result<Window, StoreError> {
        let window = self.inner.window(bucket, job);
        self.gate.turn().await;
        let answer = window.await;
        self.gate.record(&answer.as_ref().map(|w| {
            let last: BTreeMap<_, _> = w.last.iter().collect();
            let keys: BTreeSet<_> = w.keys.iter().collect();
            (last, w.entries, keys)
        }));
        answer
    }

    async fn recount_items(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        self.call(self.inner.recount_items(bucket)).await
    }

    async fn delete_controls(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> Result<(), StoreError> {
        self.call(self.inner.delete_controls(bucket, sort_keys))
            .await
    }

    async fn scan_several(
        &self,
        segment: u32,
        total: u32,
        held: &AtomicU64,
    ) -> Result<Vec<Vec<HeldItem>>, StoreError> {
        self.call(self.inner.scan_several(segment, total, held))
            .await
    }

    async fn scan_posts(
        &self,
        segment: u32,
        total: u32,
        likes: &AtomicU64,
    ) -> Result<BTreeSet<String>, StoreError> {
        self.call(self.inner.scan_posts(segment, total, likes))
            .await
    }
}
