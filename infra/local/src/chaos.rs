//! Faults the local stack injects on request (`LIKES_LOCAL_CHAOS=<seed>`), for the chaos run:
//! the mapping delivers a batch twice, the function fails after doing its work (Lambda then
//! bisects and retries), and — through the Counts store — writes fail. Seeded, counted by kind.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

pub use likes_sim::rng::SplitMix as Rng;

use crate::esm::function::{Function, FunctionError};

#[derive(Debug, Default)]
pub struct ChaosCounts {
    pub duplicate_deliveries: AtomicU64,
    pub function_errors: AtomicU64,
}

/// The function, with a batch now and then delivered twice (its first answer lost) or failed
/// after it ran.
pub struct ChaosFunction<F> {
    pub inner: F,
    pub rng: Mutex<Rng>,
    /// Percent of invocations delivered twice, and failed after running.
    pub duplicate_percent: u64,
    pub error_percent: u64,
    pub counts: ChaosCounts,
}

/// Percent of invocations delivered twice, and failed after running, under chaos. High: a
/// mapping invokes the function tens of times per thousand likes (batches of up to 100
/// records), and a CI-sized run must meet each kind several times to prove anything.
const DUPLICATE_PERCENT: u64 = 20;
const ERROR_PERCENT: u64 = 20;

impl<F> ChaosFunction<F> {
    /// Faults only with a seed; without one, the function as it is.
    pub fn new(inner: F, seed: Option<u64>) -> Self {
        let on = seed.is_some();
        ChaosFunction {
            inner,
            rng: Mutex::new(Rng(seed.unwrap_or(0))),
            duplicate_percent: if on { DUPLICATE_PERCENT } else { 0 },
            error_percent: if on { ERROR_PERCENT } else { 0 },
            counts: ChaosCounts::default(),
        }
    }
}

impl<F: Function> Function for ChaosFunction<F> {
    async fn invoke(&self, payload: String, timeout: Duration) -> Result<String, FunctionError> {
        let roll = self.rng.lock().map(|mut r| r.below(100)).unwrap_or(100);
        let answer = self.inner.invoke(payload.clone(), timeout).await;
        if roll < self.duplicate_percent {
            self.counts
                .duplicate_deliveries
                .fetch_add(1, Ordering::Relaxed);
            return self.inner.invoke(payload, timeout).await;
        }
        if roll < self.duplicate_percent + self.error_percent {
            self.counts.function_errors.fetch_add(1, Ordering::Relaxed);
            return Err(FunctionError::Failed("injected after the batch ran".into()));
        }
        answer
    }
}
