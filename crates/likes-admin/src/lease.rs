//! One repair of a post at a time: a recount, an exact audit or an erase holds the post's lease
//! (on the post's Counts item) for as long as it works on the post.
//!
//! No machine's clock decides who holds it. The holder renews it every quarter of its term,
//! which moves its beat on; a job that finds the lease held watches it for a whole term by its
//! own monotonic clock, and takes it over only if it stayed exactly as first seen — the holder
//! stopped (died, or was suspended) — with a write conditional on that. A clock that runs
//! minutes ahead therefore cannot take a live lease. A holder that was suspended past its term
//! and resumes finds it lost: its fences are inert (the aggregator opens a window only for the
//! lease's holder), its correction is refused (conditional on holding the lease), and it
//! deletes only its own control items.

use std::future::Future;
use std::time::Duration;

use likes_core::{CountsAdmin, LeaseState, PostId};
use tokio::time::Instant;

use crate::AdminError;

/// How often the lease is read while it is watched.
const WATCH_POLL: Duration = Duration::from_millis(500);

fn busy(post: &PostId, held: &LeaseState) -> AdminError {
    AdminError::Busy {
        post: post.to_string(),
        job: held.job.clone(),
        term_secs: held.term_secs,
    }
}

/// Takes `post`'s lease for `job`, renewable within `term`.
pub async fn acquire<C: CountsAdmin>(
    counts: &C,
    post: &PostId,
    job: &str,
    term: Duration,
) -> Result<(), AdminError> {
    let term_secs = term.as_secs().max(1);
    loop {
        let seen = counts.read_post(post).await?.and_then(|i| i.lease);
        let Some(seen) = seen else {
            if counts.take_lease(post, job, term_secs, None).await? {
                return Ok(());
            }
            continue; // another job took it meanwhile: look again
        };
        // Held: watch it for its term (and a poll more); a live holder renews it within that.
        let until = Instant::now() + Duration::from_secs(seen.term_secs.max(1)) + WATCH_POLL;
        let mut released = false;
        while Instant::now() < until {
            tokio::time::sleep(WATCH_POLL.min(until - Instant::now())).await;
            match counts.read_post(post).await?.and_then(|i| i.lease) {
                Some(now) if now == seen => {}
                Some(_) => return Err(busy(post, &seen)),
                None => {
                    released = true;
                    break;
                }
            }
        }
        if released {
            continue;
        }
        if counts.take_lease(post, job, term_secs, Some(&seen)).await? {
            tracing::warn!(post_id = %post, job = %seen.job, "took over a lease its holder stopped renewing");
            return Ok(());
        }
        return Err(busy(post, &seen));
    }
}

/// Renews `job`'s lease every quarter of `term`, for as long as it is polled; ends (with
/// `LeaseLost`) only if another job holds the lease. A renewal that fails for another reason is
/// tried again at the next beat: a job that could not renew for a whole term may find the lease
/// taken over, and then everything it still does is refused or inert.
async fn heartbeat<C: CountsAdmin>(
    counts: &C,
    post: &PostId,
    job: &str,
    term: Duration,
) -> AdminError {
    loop {
        tokio::time::sleep(term / 4).await;
        match counts.renew_lease(post, job).await {
            Ok(true) => {}
            Ok(false) => return lost(post, job),
            Err(e) => {
                tracing::warn!(post_id = %post, error = %e, "could not renew the lease; trying again")
            }
        }
    }
}

pub fn lost(post: &PostId, job: &str) -> AdminError {
    AdminError::LeaseLost {
        post: post.to_string(),
        job: job.to_owned(),
    }
}

/// Runs `work` on `post` while holding its lease for `job`: takes it, renews it while `work`
/// runs, and gives it up after (not if it was lost: it is another job's then).
pub async fn hold<C, T, W>(
    counts: &C,
    post: &PostId,
    job: &str,
    term: Duration,
    work: W,
) -> Result<T, AdminError>
where
    C: CountsAdmin,
    W: Future<Output = Result<T, AdminError>>,
{
    acquire(counts, post, job, term).await?;
    let result = tokio::select! {
        done = work => done,
        lost = heartbeat(counts, post, job, term) => Err(lost),
    };
    if !matches!(result, Err(AdminError::LeaseLost { .. })) {
        counts.release_lease(post, job).await?;
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use likes_core::store::memory::MemoryCounts;

    fn post() -> PostId {
        PostId::parse("p").expect("an id")
    }

    /// A live holder's lease is never taken, whatever the taker's clock: it sees the beat move.
    #[tokio::test(start_paused = true)]
    async fn a_live_lease_is_refused_and_a_dead_one_taken_over_after_its_term() {
        let counts = MemoryCounts::default();
        let term = Duration::from_secs(8);
        let p = post();
        let live = hold(&counts, &p, "a", term, async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        });
        let second = async {
            tokio::time::sleep(Duration::from_secs(1)).await;
            acquire(&counts, &post(), "b", term).await
        };
        let (first, second) = tokio::join!(live, second);
        first.expect("the first job ran to its end");
        assert!(
            matches!(&second, Err(AdminError::Busy { job, .. }) if job == "a"),
            "{second:?}"
        );
        // The first job released it: the next one takes it at once.
        acquire(&counts, &post(), "c", term).await.expect("free");
        // c dies (never renews): d waits out its term, then takes it over.
        let started = Instant::now();
        acquire(&counts, &post(), "d", term)
            .await
            .expect("taken over");
        assert!(
            started.elapsed() >= term,
            "taken after {:?}",
            started.elapsed()
        );
        // c, resumed, can neither renew nor release d's lease.
        assert!(!counts.renew_lease(&post(), "c").await.expect("answers"));
        counts.release_lease(&post(), "c").await.expect("a no-op");
        let held = counts.read_post_now(&post()).and_then(|i| i.lease);
        assert_eq!(held.map(|l| l.job), Some("d".to_owned()));
    }

    /// A job whose lease is taken over stops, and gives nothing up.
    #[tokio::test(start_paused = true)]
    async fn a_job_that_loses_its_lease_stops() {
        let counts = MemoryCounts::default();
        let term = Duration::from_secs(4);
        let work = async {
            tokio::time::sleep(Duration::from_secs(2)).await;
            // Another job takes the post over behind this one's back.
            let seen = counts.read_post_now(&post()).and_then(|i| i.lease);
            assert!(counts
                .take_lease(&post(), "thief", 4, seen.as_ref())
                .await
                .expect("answers"));
            tokio::time::sleep(Duration::from_secs(60)).await;
            Ok(())
        };
        let result = hold(&counts, &post(), "a", term, work).await;
        assert!(matches!(&result, Err(AdminError::LeaseLost { job, .. }) if job == "a"));
        let held = counts.read_post_now(&post()).and_then(|i| i.lease);
        assert_eq!(held.map(|l| l.job), Some("thief".to_owned()));
    }
}
