//! How a batch learns a post's count for its milestones (invariant 6): a consistent read of
//! the post's Counts item, which the stream's other reader, the aggregator, writes. The
//! aggregator may not have counted this batch's likes yet — the two readers run on their own —
//! so the count is taken only once each bucket's mark is at or past the batch's last record of
//! it (or once it already reaches a milestone above the announced one), read again with a
//! growing pause for at most `wait`. Still behind then, the post's milestones are left to its
//! next like (counted in `MilestoneChecksDeferred`): a batch never waits on the aggregator
//! longer than that, so notifications do not stop when counts lag.

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
    /// The aggregator had not counted the batch's likes in time, or the read failed.
    Deferred,
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
                if covered(&item, lasts) || reached(total) > announced {
                    return Learned::Count(total);
                }
            }
            Err(e) => {
                tracing::warn!(post_id = %post, error = %e, "the post's count could not be read; its milestones wait for its next like");
                return Learned::Deferred;
            }
        }
        let now = Instant::now();
        if now + pause > until {
            tracing::info!(post_id = %post, "the aggregator has not counted this batch's likes yet; the post's milestones wait for its next like");
            return Learned::Deferred;
        }
        tokio::time::sleep(pause).await;
        pause *= 2;
    }
}
