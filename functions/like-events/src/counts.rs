//! How a batch learns a post's count for its milestones (invariant 6): a consistent read of
//! the post's Counts item, which the stream's other reader, the aggregator, writes. The
//! aggregator may not have counted this batch's likes yet — the two readers run on their own —
//! so the count is taken only once each bucket's mark is at or past the batch's last record of
//! it (or, at `until`, if it already reaches a milestone above the announced one), read again
//! with a growing pause until `until`, and a last time at `until` itself: [`Learned::Behind`] means
//! the invocation waited the whole of it (`checks` counts on that to bound how often a held
//! record is redelivered). What the batch does with a post still behind is `checks`'.

use std::time::Duration;

use likes_core::store::events::CountsProgress;
use likes_core::{PostId, Seq};
use tokio::time::Instant;

use crate::milestones::{covered, reached};

const FIRST_PAUSE: Duration = Duration::from_millis(100);

/// What the batch learned of a post's count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Learned {
    Count(i64),
    /// The aggregator had not counted the batch's likes by `until`.
    Behind,
    /// The read failed: not retried here (a failing read answers at once; redelivering on it
    /// could spend the mapping's retries in seconds).
    Unread,
}

/// The post's count once it covers `lasts` (each bucket's last record in the batch), waiting
/// at most until `until`.
pub async fn learn<C: CountsProgress>(
    counts: &C,
    post: &PostId,
    lasts: &[(u8, Seq<'_>)],
    announced: u64,
    until: Instant,
) -> Learned {
    let mut pause = FIRST_PAUSE;
    loop {
        match counts.progress(post).await {
            Ok(item) => {
                let item = item.unwrap_or_default();
                let total = item.total();
                if covered(&item, lasts) {
                    return Learned::Count(total);
                }
                // Not all of the batch counted yet: a milestone the count already reached is
                // announced only once the wait is over, since the batch's own likes may reach
                // a higher one that a count taken now would leave for the post's next like.
                if Instant::now() >= until && reached(total) > announced {
                    return Learned::Count(total);
                }
            }
            Err(e) => {
                tracing::warn!(post_id = %post, error = %e, "the post's count could not be read; its milestones wait for its next like");
                return Learned::Unread;
            }
        }
        // The last pause ends at `until`, so that a count arriving late in the wait is seen.
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Learned::Behind;
        }
        tokio::time::sleep(pause.min(left)).await;
        pause *= 2;
    }
}
