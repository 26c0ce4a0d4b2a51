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

#[cfg(test)]
mod tests {
    use super::*;
    use likes_core::store::memory::MemoryCounts;

    /// The lease's rules on the in-memory store (the emulator's run is `tests/lease.rs`).
    #[tokio::test]
    async fn one_job_per_post_and_a_lost_lease_is_lost_for_good() {
        let counts = MemoryCounts::default();
        let post = PostId::parse("p").expect("an id");
        let long = Duration::from_secs(600);
        acquire(&counts, &post, "a", long)
            .await
            .expect("a takes it");
        let refused = acquire(&counts, &post, "b", long).await;
        assert!(matches!(&refused, Err(AdminError::Busy { job, .. }) if job == "a"));
        // a's lease ends (taken again to end in the past), and b takes the post over.
        release(&counts, &post, "a").await.expect("released");
        counts
            .acquire_lease(&post, "a", now() - 10, now())
            .await
            .expect("a again, ending at once");
        acquire(&counts, &post, "b", long)
            .await
            .expect("b takes over");
        let lost = renew(&counts, &post, "a", long).await;
        assert!(matches!(&lost, Err(AdminError::LeaseLost { job, .. }) if job == "a"));
        release(&counts, &post, "a").await.expect("a no-op");
        let refused = acquire(&counts, &post, "c", long).await;
        assert!(matches!(&refused, Err(AdminError::Busy { job, .. }) if job == "b"));
    }
}
