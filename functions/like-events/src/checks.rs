//! A batch's milestone checks (invariant 6): for each post with likes in the batch, its
//! announced milestones and its count (`counts`), the milestones to announce (`milestones`),
//! and the hold — the record the batch stops at when a post's count is still behind it.
//!
//! Why hold, and not leave the milestone to the post's next like: that like may never come (a
//! post that reaches 1,000 and is never liked again). A post whose count is still behind after
//! the wait holds the batch at its first like record — so that the redelivery carries all of
//! the post's likes, and its count must cover the same records: that record is reported
//! (invariant 2), Lambda redelivers from it, and nothing of it or after it is published or
//! written now. The redelivery decides them afresh from the same state, so the hold publishes
//! nothing twice and leaves nothing announced unrecorded. Why not a pending state that a later
//! invocation resolves: an invocation comes only with a record, and a quiet shard may have
//! none; the redelivery is an invocation that Lambda makes for us.
//!
//! The hold is bounded: a record is held only while it is younger than [`hold`] (20 count
//! waits, 60 s by default) — its stream creation time against this function's clock. Each held
//! invocation waits the whole count wait (`counts::learn`), so a record is redelivered at most
//! 20 times for a hold: a fifth of the mapping's 100 retries, the rest left for the bus's and
//! the state's failures. A record older (the aggregator down or far behind, or this function
//! itself behind the stream by more than the hold) is not held: its post's milestones are left
//! to its next like, as before (`MilestoneChecksDeferred`), so a broken aggregator delays
//! notifications by at most the hold and never stops them. A read that fails is not held
//! either: it answers at once, and redelivering on it could spend the retries in seconds.

use std::collections::HashMap;
use std::time::Duration;

use chrono::Utc;
use futures::stream::{self, StreamExt};
use likes_core::store::events::{CountsProgress, MilestoneState, MilestoneStore};
use likes_core::Seq;
use tokio::time::Instant;

use crate::counts::{learn, Learned};
use crate::milestones::{self, Announcement};
use crate::records::{Parsed, Rec};
use crate::report::BatchReport;
use crate::LikeEvents;

/// How many count waits a record may be held for.
pub const HOLD_WAITS: u32 = 20;

/// How long after its creation a record may be held for its post's count: [`HOLD_WAITS`] count
/// waits (none if the function does not wait).
pub fn hold(count_wait: Duration) -> Duration {
    count_wait * HOLD_WAITS
}

/// A post's announcement, made for its record `by` (an index into the batch).
pub struct PostRun {
    pub by: usize,
    pub count: i64,
    pub announcement: Announcement,
}

/// What the checks found: the announcements for records below the hold, and the hold (the
/// first record not to publish or write now; `None`: none).
pub struct Checks {
    pub posts: Vec<PostRun>,
    pub hold: Option<usize>,
}

/// A post with likes in the batch: its first and last like records (the announcement is made
/// for the last), and each bucket's last record (what the count must cover).
struct Liked<'a> {
    first: usize,
    by: usize,
    lasts: Vec<(u8, Seq<'a>)>,
}

/// A post's check, before the hold is known.
struct Checked {
    /// Its first like record in the batch, and the last (the announcement is made for it).
    first: usize,
    by: usize,
    state: MilestoneState,
    learned: Learned,
}

/// The posts with likes in the batch whose counts reached milestones not yet announced, and
/// the hold.
pub async fn run<S, M, C, B>(
    f: &LikeEvents<S, M, C, B>,
    parsed: &Parsed<'_>,
    until: Instant,
    report: &mut BatchReport,
) -> Checks
where
    M: MilestoneStore,
    C: CountsProgress,
{
    let none = Checks {
        posts: Vec::new(),
        hold: None,
    };
    // Milestones are the like count's: reactions are not in `posts`, and their records need not
    // be counted first (they move no like count).
    let liked: Vec<Liked<'_>> = parsed
        .posts
        .iter()
        .filter_map(|(_, idxs)| {
            let first = *idxs.first()?;
            let by = *idxs.iter().rev().find(|&&i| parsed.records[i].insert)?;
            let mut lasts: HashMap<u8, Seq<'_>> = HashMap::new();
            for &i in idxs {
                let r = &parsed.records[i];
                lasts.insert(r.bucket, r.seq);
            }
            Some(Liked {
                first,
                by,
                lasts: lasts.into_iter().collect(),
            })
        })
        .collect();
    if liked.is_empty() {
        return none;
    }
    let posts: Vec<_> = liked
        .iter()
        .map(|l| parsed.records[l.by].post.clone())
        .collect();
    let states = match f.milestones.read_milestones(&posts).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "milestones could not be read; they wait for the posts' next likes");
            report.deferred_milestones += liked.len();
            return none;
        }
    };
    let checked: Vec<Checked> = stream::iter(&liked)
        .map(|l| {
            let rec = &parsed.records[l.by];
            let state = states.get(&rec.post).cloned().unwrap_or_default();
            async move {
                let learned = learn(&f.counts, &rec.post, &l.lasts, state.announced, until).await;
                Checked {
                    first: l.first,
                    by: l.by,
                    state,
                    learned,
                }
            }
        })
        .buffer_unordered(f.settings.rules.concurrency)
        .collect()
        .await;

    let held_for = hold(f.settings.rules.count_wait);
    let now_ms = Utc::now().timestamp_millis();
    // A record that did not say when it was created reads as old: never held.
    let young =
        |c: &Checked| now_ms - parsed.records[c.first].created_ms < held_for.as_millis() as i64;
    let holds = |c: &Checked| c.learned == Learned::Behind && young(c);
    let hold = checked.iter().filter(|c| holds(c)).map(|c| c.first).min();

    let mut out = Vec::new();
    for c in checked {
        let rec: &Rec<'_> = &parsed.records[c.by];
        if holds(&c) {
            report.held_milestones += 1;
            tracing::info!(post_id = %rec.post, "the aggregator has not counted this batch's likes yet; the batch is held at the post's first like and redelivered");
            continue;
        }
        if hold.is_some_and(|h| c.by >= h) {
            // Redelivered with the held record: decided then.
            continue;
        }
        let Learned::Count(count) = c.learned else {
            report.deferred_milestones += 1;
            tracing::warn!(post_id = %rec.post, "the post's count was not read, or is behind a like older than the hold; its milestones wait for its next like");
            continue;
        };
        let seq = rec.seq.to_owned();
        if let Some(announcement) = milestones::decide(&c.state, count, (rec.bucket, &seq)) {
            report.milestones += announcement.milestones.len();
            out.push(PostRun {
                by: c.by,
                count,
                announcement,
            });
        }
    }
    Checks { posts: out, hold }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hold_is_twenty_count_waits_and_none_without_a_wait() {
        assert_eq!(hold(Duration::from_secs(3)), Duration::from_secs(60));
        assert_eq!(hold(Duration::ZERO), Duration::ZERO);
    }
}
