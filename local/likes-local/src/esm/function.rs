//! The function the local mapping invokes: the aggregator, in process, treated as Lambda treats
//! a function — its answer serialised to JSON, and a panic or an invocation that outlives the
//! function's timeout a function error, not the end of the local stack.

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::time::Duration;

use count_aggregator::Aggregator;
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
}

impl<C: CountsLedger> Function for AggregatorFunction<C> {
    async fn invoke(&self, payload: String, timeout: Duration) -> Result<String, FunctionError> {
        let deadline = Instant::now() + timeout;
        let run = AssertUnwindSafe(self.aggregator.process_json(&payload, Some(deadline)));
        match tokio::time::timeout_at(deadline, run.catch_unwind()).await {
            Err(_) => Err(FunctionError::TimedOut),
            Ok(Err(_)) => Err(FunctionError::Panicked),
            Ok(Ok(Err(e))) => Err(FunctionError::Failed(e.to_string())),
            Ok(Ok(Ok(report))) => serde_json::to_string(&report.response())
                .map_err(|e| FunctionError::Failed(e.to_string())),
        }
    }
}
