//! `likes-admin`: the day-2 operations on a likes deployment (or the local stack), written
//! against the stores' admin ports (`likes_core::store::admin`), so that they run on DynamoDB
//! and on the in-memory stores alike.
//!
//! - [`audit`]: a post's count against its table, cheap first, exact where they differ;
//! - [`recount`]: makes a post's count exact while its likes keep flowing (fences, see
//!   `count_aggregator::fences`), one job per post at a time ([`lease`]); [`noted`]: every post
//!   the aggregator noted as left unapplied by a failing batch;
//! - erase a person's or a post's likes (`likes_core::erase`; [`account`]: a deleted account's);
//! - [`moderate`]: a user suspended or restored (`likes_core::moderate`), as the product's own
//!   decisions are;
//! - [`backfill`]: every count exact, for a table whose likes the stream never saw;
//! - [`single`]: a deployment switched from `multi` to `single` reaction mode made exact;
//! - [`homes`]: the users' homes a region serves, in two regions;
//! - [`cli`]: the command line, parsed and checked (no I/O); [`commands`]: connects and runs each
//!   command; [`report`]: what they print.

pub mod account;
pub mod audit;
pub mod backfill;
pub mod cli;
pub mod commands;
pub mod homes;
pub mod lease;
pub mod moderate;
pub mod noted;
pub mod recount;
pub mod report;
pub mod single;

use std::time::Duration;

use likes_core::StoreError;

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Bad usage or input: nothing was changed (exit status 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("post {post} is being repaired by job {job} (a recount, an exact audit or an erase), which keeps renewing its lease: wait for it to end, then run again (a lease not renewed for {term_secs} s is taken over by the next run)")]
    Busy {
        post: String,
        job: String,
        term_secs: u64,
    },
    #[error("{0}")]
    Timeout(String),
    /// A backfill's state file could not be read or written (what was done is kept).
    #[error("{0}")]
    State(String),
    /// Part of the work was done and verified, the rest not (the message says what to run).
    #[error("{0}")]
    Incomplete(String),
    #[error("job {job} lost its lease on post {post} (it could not renew it in time, and another job took the post over): it stopped without changing the count. Run `likes-admin recount --post {post}` again if the other job also failed")]
    LeaseLost { post: String, job: String },
    #[error("the recount of post {post} (job {job}) found {found} entries in bucket {bucket}'s window where the aggregator recorded {noted}: something deleted them while it ran (an erase of this post, a hand on the table). Nothing was corrected in that bucket; run `likes-admin recount --post {post}` again")]
    WindowDisturbed {
        post: String,
        job: String,
        bucket: u8,
        noted: u64,
        found: u64,
    },
}

/// The stores an operation works on: the Likes table (`likes_core::LikesAdmin` and
/// `likes_core::erase::EraseStore`) and the Counts table (`likes_core::CountsAdmin`).
#[derive(Debug, Clone)]
pub struct Stores<L, C> {
    pub likes: L,
    pub counts: C,
    /// How long to wait for the aggregator to reach a fence.
    pub fence_wait: Duration,
    /// How long a post's lease holds between its holder's renewals (see [`lease`]).
    pub lease_term: Duration,
}

/// How long a lease holds between renewals unless told otherwise: a renewal every 15 s, and a
/// dead job's post is taken over a minute after it stopped.
pub const DEFAULT_LEASE_TERM: Duration = Duration::from_secs(60);
