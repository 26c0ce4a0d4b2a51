//! A Counts store wrapper that counts calls and injects failures and delays: how the tests and
//! the benchmarks break or slow the aggregator's writes, and how `make dev` does it on request
//! (`LIKES_LOCAL_FAIL_FIRST_WRITES`, `LIKES_LOCAL_CHAOS`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use std::collections::HashMap;

use likes_core::{
    ApplyOutcome, BucketWrite, CountsLedger, CountsRead, FenceRecord, PostBucket, PostCounts,
    PostId, StoreError, WindowEntry,
};

/// Faults to inject into the next writes.
#[derive(Debug, Default, Clone)]
pub struct FaultPlan {
    /// Writes touching any of these (post, bucket)s fail before reaching the store.
    pub fail_rows: HashSet<PostBucket>,
    /// Writes touching any of these reach the store, but the caller is told they failed (a lost
    /// response: the case that makes redelivery dangerous).
    pub lose_response_rows: HashSet<PostBucket>,
    /// Every write after this many successful ones fails (a function crashing midway).
    pub fail_writes_after: Option<usize>,
    /// The next this-many writes fail, whatever their row.
    pub fail_next: usize,
    /// With `(rng, percent)`, that percentage of writes fail, chosen by the seeded stream.
    pub random_failures: Option<(crate::rng::SplitMix, u64)>,
    /// Every count update takes this long first (tokio time: a paused clock makes it exact):
    /// a DynamoDB brownout.
    pub write_delay: Option<std::time::Duration>,
    /// Consistent reads of a post's item fail (the aggregator reads one after a condition
    /// failed, and a recount's fences need one).
    pub fail_reads: bool,
}

pub struct FaultyCounts<C> {
    pub inner: C,
    pub writes: AtomicUsize,
    pub reads: AtomicUsize,
    /// Writes failed by `random_failures` (shared: `make dev` reports it while the aggregator
    /// owns the store).
    pub injected: Arc<AtomicUsize>,
    /// The plan, and how many writes succeeded under it.
    plan: Mutex<(FaultPlan, usize)>,
}

enum Fault {
    None,
    Fail,
    LoseResponse,
}

impl<C> FaultyCounts<C> {
    pub fn new(inner: C) -> Self {
        Self::with_plan(inner, FaultPlan::default())
    }

    pub fn with_plan(inner: C, plan: FaultPlan) -> Self {
        Self {
            inner,
            writes: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            injected: Arc::default(),
            plan: Mutex::new((plan, 0)),
        }
    }

    pub fn set_plan(&self, plan: FaultPlan) {
        if let Ok(mut guard) = self.plan.lock() {
            *guard = (plan, 0);
        }
    }

    pub fn clear(&self) {
        self.set_plan(FaultPlan::default());
    }

    fn next_fault(&self, post: &PostId, buckets: impl IntoIterator<Item = u8>) -> Fault {
        let rows: Vec<PostBucket> = buckets
            .into_iter()
            .map(|bucket| PostBucket {
                post: post.clone(),
                bucket,
            })
            .collect();
        let Ok(mut guard) = self.plan.lock() else {
            return Fault::Fail;
        };
        let (plan, done) = &mut *guard;
        if plan.fail_next > 0 {
            plan.fail_next -= 1;
            return Fault::Fail;
        }
        if let Some((rng, percent)) = plan.random_failures.as_mut() {
            if rng.below(100) < *percent {
                self.injected.fetch_add(1, Ordering::Relaxed);
                return Fault::Fail;
            }
        }
        if rows.iter().any(|r| plan.fail_rows.contains(r))
            || plan.fail_writes_after.is_some_and(|n| *done >= n)
        {
            return Fault::Fail;
        }
        *done += 1;
        if rows.iter().any(|r| plan.lose_response_rows.contains(r)) {
            Fault::LoseResponse
        } else {
            Fault::None
        }
    }
}

/// Plays a fault around a write (a future does nothing until awaited).
async fn faulted<T>(
    fault: Fault,
    write: impl std::future::Future<Output = Result<T, StoreError>>,
) -> Result<T, StoreError> {
    match fault {
        Fault::Fail => Err(StoreError::Unavailable("injected write failure".into())),
        Fault::LoseResponse => {
            write.await?;
            Err(StoreError::OutcomeUnknown("injected lost response".into()))
        }
        Fault::None => write.await,
    }
}

impl<C: CountsLedger> CountsLedger for FaultyCounts<C> {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> Result<ApplyOutcome, StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let delay = self.plan.lock().ok().and_then(|g| g.0.write_delay);
        if let Some(d) = delay {
            tokio::time::sleep(d).await;
        }
        let fault = self.next_fault(post, writes.iter().map(|w| w.bucket));
        faulted(fault, self.inner.apply(post, writes)).await
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        if self.plan.lock().map_or(true, |g| g.0.fail_reads) {
            return Err(StoreError::Unavailable("injected read failure".into()));
        }
        self.inner.read_post(post).await
    }

    async fn fence(
        &self,
        post: &PostId,
        record: &FenceRecord<'_>,
    ) -> Result<ApplyOutcome, StoreError> {
        // Fences and window entries fail like any other write, so that the recount's path is
        // exercised under every fault the counting path is.
        let fault = self.next_fault(post, [record.bucket]);
        faulted(fault, self.inner.fence(post, record)).await
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let fault = self.next_fault(&bucket.post, [bucket.bucket]);
        faulted(fault, self.inner.record_window(bucket, entries)).await
    }

    async fn close_window(&self, post: &PostId, bucket: u8, job: &str) -> Result<bool, StoreError> {
        let fault = self.next_fault(post, [bucket]);
        faulted(fault, self.inner.close_window(post, bucket, job)).await
    }

    /// Never faulted: a note is another item (on DynamoDB, another partition) than the post's
    /// whose writes the faults strike.
    async fn note_unapplied(&self, post: &PostId, from: &str) -> Result<(), StoreError> {
        self.inner.note_unapplied(post, from).await
    }
}

/// Reads are never faulted: the faults are the aggregator's.
impl<C: CountsRead> CountsRead for FaultyCounts<C> {
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        self.inner.post_count(post).await
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        self.inner.post_counts(posts).await
    }

    async fn kind_counts(
        &self,
        post: &PostId,
    ) -> Result<std::collections::BTreeMap<String, i64>, StoreError> {
        self.inner.kind_counts(post).await
    }

    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, std::collections::BTreeMap<String, i64>>, StoreError> {
        self.inner.kind_counts_among(posts).await
    }
}
