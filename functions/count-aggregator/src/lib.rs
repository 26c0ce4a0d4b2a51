//! The count aggregator: DynamoDB stream batches of the Likes table → per-(post, bucket) counts.
//!
//! Exactly-once effect over at-least-once delivery: each Counts row keeps the highest stream
//! sequence number applied to it (its high-water mark, `hwm`), and every update is conditional
//! on the group's first record being above it. `INSERT` is +1, `REMOVE` is −1; other events
//! are ignored (the event source mapping's filter drops them before invocation).
//!
//! # Invariants
//!
//! These are numbered once, here; code, tests and the README cite them by number.
//!
//! 1. **Group by source partition key** (`post_bucket`), keeping stream order inside a group;
//!    a record repeated within the batch counts once.
//! 2. **One conditional UpdateItem per post per batch**, covering its groups: for each bucket
//!    `b` in the batch `ADD c<b> :delta SET h<b> = :last, t<b> = :created`, and
//!    `IF (attribute_not_exists(h<b>) OR h<b> < :first) AND …` over those buckets only — the
//!    post's item holds every bucket's count and mark, and an update touches only its own.
//! 3. **On a failed condition** the item is read (consistently), each group's records with
//!    `seq ≤ h<b>` are dropped as already applied, and the rest are applied the same way.
//!    Nothing is ever applied twice.
//! 4. **A group is written even when its delta is 0** (a like and an unlike in one batch): the
//!    hwm must still advance, or a retry that starts between the two records would apply only
//!    the unlike.
//! 5. **A failed group** (after the SDK's retries) is reported in `batchItemFailures` as the
//!    lowest sequence number among the batch's unapplied records, spelled exactly as received
//!    (never the padded form, never empty). Lambda retries from there; the hwms absorb what was
//!    applied already.
//! 6. **Posts are independent**: written concurrently (bounded), and one post's failure does
//!    not stop the others. Near the invocation's deadline no new post is started; the records
//!    of those not started are reported unapplied (invariant 5) rather than cut off mid-batch.
//! 7. **A record that can never apply** (no sequence number, a missing key, a `post_bucket`
//!    that is not `<post_id>#<0..15>`) is logged with its sequence number and skipped, so that
//!    it cannot block the shard.
//! 8. **Anomalies are applied and flagged, never hidden**: a bucket that goes below zero, and a
//!    record dropped as already applied although created after the record at the bucket's mark
//!    (`t<b>`; the sign that the sequence-number assumption below was breached), are logged and
//!    counted in the `CountAnomalies` metric, so that the post can be recounted.
//! 9. **A recount's fences are control, never likes**: between a job's `begin` and `end`
//!    fence records in a bucket, each change is recorded in the job's window (one entry per
//!    change, counted with the change) before it is counted, and at `end` the bucket's count
//!    and the window's entry count are noted for the job; a `begin` opens a window only for the
//!    job holding the post's recount lease, and a window open longer than an hour by the
//!    stream's clock is closed; every step is conditional on the bucket's mark, so redelivered
//!    fences are absorbed like any record (`fences`' docs give the protocol and why the job's
//!    correction is exact).
//! 10. **A mark ahead of the stream is found and repaired**: a record dropped as applied
//!     although created after the record at the mark (a restored table's new stream, a child
//!     shard numbered below its parent) is logged and counted (`MarksAhead`, and in
//!     `CountAnomalies`); a recount's fence so dropped is a definite point of the current
//!     stream, so it sets the mark back to itself (conditional on the mark it found), and the
//!     recount makes the bucket exact.
//! 11. **A failing batch leaves a note of every post it leaves unapplied.** When a post of the
//!     batch failed (after the SDK's retries), or its oldest record is more than an hour old,
//!     each post whose records are reported unapplied (failed, or deferred by the deadline: a
//!     batch given up after retries holds both, one given up for age perhaps only deferred
//!     posts) gets a repair note,
//!     an item of its own beside the posts' (`likes_core::RepairNote`), before the invocation
//!     ends. If Lambda later gives the batch up, `likes-admin recount --noted` recounts exactly
//!     those posts, one that never got a Counts item included; a post that later succeeded is
//!     recounted needlessly, which changes nothing. A note that cannot be written is logged
//!     with its post (`notes`).
//!
//! # Why this is correct
//!
//! Within one partition key all stream records sit in one shard, in commit order: the Likes
//! table has a local secondary index, and DynamoDB never splits an item collection of such a
//! table across partitions. Across a shard's rollover, Lambda finishes the parent shard before
//! its children. Lambda delivers a shard's batches one at a time (`ParallelizationFactor: 1`)
//! and retries from the reported checkpoint. So the records applied to a row always form a
//! prefix of that key's records, and the hwm is exactly the offset of that prefix. One
//! assumption is DynamoDB's, not ours: sequence numbers keep growing from a parent shard to its
//! child. Invariant 8 makes a breach visible rather than silent.

//!
//! # Layout
//!
//! [`decode`] reads Lambda's event text into borrowed structs; [`group`] groups its records by
//! bucket and post (invariants 1, 7); [`apply`] writes a post's groups (2–4), and [`fences`]
//! when a recount is under way (9); [`marks`] holds what both share (3, 5, 8); [`report`]
//! builds the partial batch response and the metrics line.

pub mod apply;
pub mod decode;
pub mod fences;
pub mod group;
pub mod marks;
pub mod notes;
pub mod report;

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::time::Instant;

use futures::stream::{self, StreamExt};
use likes_aws::env::Tuning;
use likes_core::{CountsLedger, PostId};

use crate::apply::apply_post;
use crate::decode::StreamEvent;
use crate::marks::PostResult;
pub use crate::report::{emf_line, BatchReport};

/// How the aggregator is tuned. The defaults are `likes_aws::env::Tuning`'s: 128 posts written
/// at once (measured by `make bench`: with 5 ms per write, a batch of 1,000 records over ~700
/// posts takes ~46 sequential rounds at 16, ~6 at 128; DynamoDB and one execution environment
/// take that concurrency easily), and 9 s as the time a post needs at worst (the SDK's
/// operation timeout, 8 s, plus a margin): no post is started with less than that left before
/// the invocation's deadline.
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub concurrency: usize,
    pub post_budget: Duration,
}

impl Default for Settings {
    fn default() -> Self {
        Self::from(Tuning::default())
    }
}

impl From<Tuning> for Settings {
    fn from(t: Tuning) -> Self {
        Self {
            concurrency: t.aggregator_concurrency.max(1),
            post_budget: t.aggregator_post_budget,
        }
    }
}

/// Process-lifetime counters, for the EMF metrics line and for tests.
#[derive(Debug, Default)]
pub struct Totals {
    pub anomalies: AtomicU64,
    pub duplicates: AtomicU64,
}

pub struct Aggregator<C> {
    counts: C,
    settings: Settings,
    pub totals: Totals,
}

impl<C: CountsLedger> Aggregator<C> {
    pub fn new(counts: C) -> Self {
        Self::with_settings(counts, Settings::default())
    }

    /// For tests: the default settings but `concurrency`.
    #[cfg(feature = "testing")]
    pub fn with_concurrency(counts: C, concurrency: usize) -> Self {
        Self::with_settings(
            counts,
            Settings {
                concurrency: concurrency.max(1),
                ..Settings::default()
            },
        )
    }

    pub fn with_settings(counts: C, settings: Settings) -> Self {
        Self {
            counts,
            settings,
            totals: Totals::default(),
        }
    }

    /// For tests: the store, to look at or to fault.
    #[cfg(feature = "testing")]
    pub fn store(&self) -> &C {
        &self.counts
    }

    /// A batch given as Lambda's JSON. Fails only if the text is not a stream event at all.
    pub async fn process_json(
        &self,
        text: &str,
        deadline: Option<Instant>,
    ) -> Result<BatchReport, sonic_rs::Error> {
        let event: StreamEvent = decode::decode(text)?;
        Ok(self.process(&event, deadline).await)
    }

    /// The Lambda handler's body: never fails as a whole; failures are reported per record.
    pub async fn process(&self, event: &StreamEvent<'_>, deadline: Option<Instant>) -> BatchReport {
        let parsed = group::parse(event);
        let mut report = BatchReport {
            records: parsed.records(),
            ignored: parsed.ignored,
            skipped: parsed.skipped,
            groups: parsed.groups(),
            posts: parsed.posts.len(),
            duplicates: parsed.repeated,
            oldest_created: parsed
                .posts
                .iter()
                .flat_map(|p| &p.buckets)
                .flat_map(|b| &b.changes)
                .map(|c| c.created)
                .filter(|t| *t > 0)
                .min(),
            ..BatchReport::default()
        };
        let budget = self.settings.post_budget;
        // Invariant 6: bounded concurrency; one post's failure does not stop the others; no
        // post starts too close to the deadline. The check runs when a post's turn comes.
        let results: Vec<(&PostId, PostResult, bool)> = stream::iter(parsed.posts.iter())
            .map(|group| async move {
                let late =
                    deadline.is_some_and(|d| d.saturating_duration_since(Instant::now()) < budget);
                if late {
                    (&group.post, PostResult::not_started(group), true)
                } else {
                    (&group.post, apply_post(&self.counts, group).await, false)
                }
            })
            .buffer_unordered(self.settings.concurrency)
            .collect()
            .await;
        let mut unapplied = Vec::new();
        for (post, r, deferred) in results {
            report.duplicates += r.duplicates;
            report.anomalies += r.anomalies;
            report.marks_ahead += r.marks_ahead;
            if let Some(seq) = r.failed_at {
                if deferred {
                    report.deferred_posts += 1;
                } else {
                    report.failed_posts += 1;
                }
                report.note_unapplied(&seq);
                unapplied.push((post, seq));
            }
        }
        // Invariant 11: a failing batch notes its unapplied posts before Lambda can give it up;
        // so does one an hour behind (a day behind, Lambda gives it up for age, even if its
        // posts were only ever deferred).
        if report.failed_posts > 0 || (!unapplied.is_empty() && report.lag_ms() > notes::BEHIND_MS)
        {
            report.noted_posts = notes::note(&self.counts, &unapplied, deadline).await;
        }
        self.totals
            .anomalies
            .fetch_add(report.anomalies as u64, Ordering::Relaxed);
        self.totals
            .duplicates
            .fetch_add(report.duplicates as u64, Ordering::Relaxed);
        report
    }
}
