//! `likes-admin`: the day-2 operations on a likes deployment (or the local stack), written
//! against the stores' admin ports (`likes_core::store::admin`), so that they run on DynamoDB
//! and on the in-memory stores alike.
//!
//! - [`audit`]: a post's count against its table, cheap first, exact where they differ;
//! - [`recount`]: makes a post's count exact while its likes keep flowing (fences, see
//!   `count_aggregator::fences`), one job per post at a time ([`lease`]);
//! - erase a person's or a post's likes (`likes_core::erase`);
//! - [`backfill`]: every count exact, for a table whose likes the stream never saw;
//! - [`cli`]: the command line.

pub mod audit;
pub mod backfill;
pub mod cli;
pub mod lease;
pub mod recount;

use std::time::Duration;

use likes_core::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Bad usage or input: nothing was changed (exit status 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a recount of post {post} is running (job {job}, its lease runs until {until}); wait for it, or run again after the lease ends")]
    Busy {
        post: String,
        job: String,
        until: String,
    },
    #[error("{0}")]
    Timeout(String),
    /// A backfill's state file could not be read or written (what was done is kept).
    #[error("{0}")]
    State(String),
    #[error("the recount of post {post} (job {job}) outlived its lease and another job took the post over; this job stopped before changing its count. Run again if the other job also failed")]
    LeaseLost { post: String, job: String },
}

/// The stores an operation works on: the Likes table (`likes_core::LikesAdmin` and
/// `likes_core::erase::EraseStore`) and the Counts table (`likes_core::CountsAdmin`).
#[derive(Debug, Clone)]
pub struct Stores<L, C> {
    pub likes: L,
    pub counts: C,
    /// How long to wait for the aggregator to reach a fence.
    pub fence_wait: Duration,
}
