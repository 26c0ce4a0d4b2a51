//! A Counts store wrapper that counts calls and injects failures: how the tests break the
//! aggregator's writes, and how `make dev` does it on request (`LIKES_LOCAL_FAIL_FIRST_WRITES`).

use std::collections::HashSet;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use likes_core::{ApplyOutcome, CountRow, CountsStore, PostBucket, PostId, SeqNo, StoreError};

/// Faults to inject into the next writes.
#[derive(Debug, Default, Clone)]
pub struct FaultPlan {
    /// Writes to these rows fail before reaching the store.
    pub fail_rows: HashSet<PostBucket>,
    /// Writes to these rows reach the store, but the caller is told they failed (a lost
    /// response: the case that makes redelivery dangerous).
    pub lose_response_rows: HashSet<PostBucket>,
    /// Every write after this many successful ones fails (a function crashing midway).
    pub fail_writes_after: Option<usize>,
    /// The next this-many writes fail, whatever their row.
    pub fail_next: usize,
}

pub struct FaultyCounts<C> {
    pub inner: C,
    pub writes: AtomicUsize,
    pub reads: AtomicUsize,
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

    fn next_fault(&self, row: &PostBucket) -> Fault {
        let Ok(mut guard) = self.plan.lock() else {
            return Fault::Fail;
        };
        let (plan, done) = &mut *guard;
        if plan.fail_next > 0 {
            plan.fail_next -= 1;
            return Fault::Fail;
        }
        if plan.fail_rows.contains(row) || plan.fail_writes_after.is_some_and(|n| *done >= n) {
            return Fault::Fail;
        }
        *done += 1;
        if plan.lose_response_rows.contains(row) {
            Fault::LoseResponse
        } else {
            Fault::None
        }
    }
}

impl<C: CountsStore> CountsStore for FaultyCounts<C> {
    async fn apply(
        &self,
        row: &PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        match self.next_fault(row) {
            Fault::Fail => Err(StoreError::Unavailable("injected write failure".into())),
            Fault::LoseResponse => {
                self.inner
                    .apply(row, delta, first_seq, last_seq, now)
                    .await?;
                Err(StoreError::Unavailable("injected lost response".into()))
            }
            Fault::None => self.inner.apply(row, delta, first_seq, last_seq, now).await,
        }
    }

    async fn read_row(&self, row: &PostBucket) -> Result<Option<CountRow>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_row(row).await
    }

    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        self.inner.post_count(post).await
    }
}
