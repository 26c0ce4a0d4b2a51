//! One recount (or exact audit) of a post at a time: a lease on the post in the Counts table,
//! taken with a conditional write. A job that dies leaves its lease to run out; after that,
//! running again takes over safely (a new job's begin fence replaces the dead job's window). A
//! live job renews its lease before each step that needs it still held (the correction, the
//! cleanup): a job slowed past its lease stops there instead of racing the job that took over.

use std::time::Duration;

use likes_core::{CountsAdmin, Lease, PostId};

use crate::AdminError;

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

fn until(lease: Duration) -> i64 {
    now() + i64::try_from(lease.as_secs()).unwrap_or(i64::MAX / 2)
}

pub async fn acquire<C: CountsAdmin>(
    counts: &C,
    post: &PostId,
    job: &str,
    lease: Duration,
) -> Result<(), AdminError> {
    match counts.acquire_lease(post, job, until(lease), now()).await? {
        Lease::Taken => Ok(()),
        Lease::Held { job, until } => Err(AdminError::Busy {
            post: post.to_string(),
            job,
            until: chrono::DateTime::from_timestamp(until, 0)
                .map(|d| d.to_rfc3339())
                .unwrap_or_default(),
        }),
    }
}

/// Extends this job's lease to `lease` from now, if the job still holds it.
pub async fn renew<C: CountsAdmin>(
    counts: &C,
    post: &PostId,
    job: &str,
    lease: Duration,
) -> Result<(), AdminError> {
    if counts.renew_lease(post, job, until(lease)).await? {
        Ok(())
    } else {
        Err(AdminError::LeaseLost {
            post: post.to_string(),
            job: job.to_owned(),
        })
    }
}

pub async fn release<C: CountsAdmin>(
    counts: &C,
    post: &PostId,
    job: &str,
) -> Result<(), AdminError> {
    Ok(counts.release_lease(post, job).await?)
}
