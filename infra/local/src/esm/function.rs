//! The function the local mapping invokes: the aggregator, in process, treated as Lambda treats
//! a function — its answer serialised to JSON, and a panic or an invocation that outlives the
//! function's timeout a function error, not the end of the local stack.

use std::collections::BTreeMap;
use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use count_aggregator::{Aggregator, BatchReport};
use futures::FutureExt;
use likes_core::CountsLedger;
use tokio::time::Instant;

#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub enum FunctionError {
    #[error("the function panicked")]
    Panicked,
    #[error("the invocation outlived the function's timeout")]
    TimedOut,
    #[error("the function failed: {0}")]
    Failed(String),
}

pub trait Function {
    /// One invocation: the batch's JSON in, the answer's JSON out.
    fn invoke(
        &self,
        payload: String,
        timeout: Duration,
    ) -> impl Future<Output = Result<String, FunctionError>>;
}

pub struct AggregatorFunction<C> {
    pub aggregator: Aggregator<C>,
    /// What its answered batches reported, summed: what CloudWatch would show from its metrics.
    pub totals: Totals,
}

impl<C> AggregatorFunction<C> {
    pub fn new(aggregator: Aggregator<C>) -> Self {
        AggregatorFunction {
            aggregator,
            totals: Totals::default(),
        }
    }
}

/// The sums of the aggregator's batch reports (`BatchReport`) over the invocations it answered.
#[derive(Debug, Default)]
pub struct Totals {
    pub records: AtomicU64,
    pub duplicates: AtomicU64,
    pub failed_posts: AtomicU64,
    /// Buckets below zero and records dropped although newer than the mark: drift.
    pub anomalies: AtomicU64,
    pub marks_ahead: AtomicU64,
}

impl Totals {
    fn add(&self, r: &BatchReport) {
        let add = |a: &AtomicU64, n: usize| a.fetch_add(n as u64, Ordering::Relaxed);
        add(&self.records, r.records);
        add(&self.duplicates, r.duplicates);
        add(&self.failed_posts, r.failed_posts);
        add(&self.anomalies, r.anomalies);
        add(&self.marks_ahead, r.marks_ahead);
    }

    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BTreeMap::from([
            ("records", get(&self.records)),
            ("duplicates", get(&self.duplicates)),
            ("failed_posts", get(&self.failed_posts)),
            ("anomalies", get(&self.anomalies)),
            ("marks_ahead", get(&self.marks_ahead)),
        ])
    }
}

impl<C: CountsLedger> Function for AggregatorFunction<C> {
    async fn invoke(&self, payload: String, timeout: Duration) -> Result<String, FunctionError> {
        in_process(timeout, |deadline| async move {
            let report = self.aggregator.process_json(&payload, Some(deadline)).await;
            report.map(|report| {
                self.totals.add(&report);
                report.response()
            })
        })
        .await
    }
}

/// One invocation of a function in process, as Lambda treats it: the answer serialised to JSON;
/// an error, a panic, or a run past `timeout` (the invocation's deadline, which `run` is given)
/// a function error. Every function the local stack invokes goes through here.
pub async fn in_process<F, Fut, A, E>(timeout: Duration, run: F) -> Result<String, FunctionError>
where
    F: FnOnce(Instant) -> Fut,
    Fut: Future<Output = Result<A, E>>,
    A: serde::Serialize,
    E: std::fmt::Display,
{
    let deadline = Instant::now() + timeout;
    let run = AssertUnwindSafe(run(deadline));
    match tokio::time::timeout_at(deadline, run.catch_unwind()).await {
        Err(_) => Err(FunctionError::TimedOut),
        Ok(Err(_)) => Err(FunctionError::Panicked),
        Ok(Ok(Err(e))) => Err(FunctionError::Failed(e.to_string())),
        Ok(Ok(Ok(answer))) => {
            serde_json::to_string(&answer).map_err(|e| FunctionError::Failed(e.to_string()))
        }
    }
}
