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
//! 1. **Group by source partition key** (`post_bucket`), keeping stream order inside a group.
//! 2. **One conditional UpdateItem per group**: `ADD like_count :delta SET hwm = :last,
//!    updated_at = :now IF attribute_not_exists(hwm) OR hwm < :first`.
//! 3. **On a failed condition** the row is read (consistently), the group's records with
//!    `seq ≤ hwm` are dropped as already applied, and the rest are applied the same way.
//!    Nothing is ever applied twice.
//! 4. **A group is written even when its delta is 0** (a like and an unlike in one batch): the
//!    hwm must still advance, or a retry that starts between the two records would apply only
//!    the unlike.
//! 5. **A failed group** (after the SDK's retries) is reported in `batchItemFailures` as the
//!    lowest sequence number among the batch's unapplied records, spelled exactly as received
//!    (never the padded form, never empty). Lambda retries from there; the hwms absorb what was
//!    applied already.
//! 6. **Groups are independent**: written concurrently (bounded), and one group's failure does
//!    not stop the others.
//! 7. **A record that can never apply** (no sequence number, a missing key, a `post_bucket`
//!    that is not `<post_id>#<0..15>`) is logged with its sequence number and skipped, so that
//!    it cannot block the shard.
//! 8. **Anomalies are applied and flagged, never hidden**: a row that goes below zero, and a
//!    record dropped as already applied although created after the row's last update (the
//!    sign that the sequence-number assumption below was breached), are logged and counted in
//!    the `CountAnomalies` metric, so that the post can be recounted.
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

pub mod batch;

use std::sync::atomic::{AtomicU64, Ordering};

use aws_lambda_events::dynamodb::Event;
use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use chrono::{Duration, Utc};
use futures::stream::{self, StreamExt};
use likes_core::time::{format_ts, parse_ts};
use likes_core::{ApplyOutcome, CountsStore, PostBucket, SeqNo, StoreError};

use crate::batch::{Change, Group};

/// Default bound on concurrent UpdateItems per invocation: enough to hide DynamoDB latency for a
/// batch spread over many posts, small enough not to burst one function into throttling.
pub const DEFAULT_MAX_CONCURRENCY: usize = 16;

/// A row's condition can fail again only if a writer outside this shard's single in-order
/// consumer touches it; after this many rounds the group is reported as failed instead.
const MAX_ROUNDS: usize = 4;

/// Tolerance for clock skew between the stream's `ApproximateCreationDateTime` and the
/// aggregator's own `updated_at` when checking for dropped-but-unapplied records.
const SKEW_TOLERANCE_SECS: i64 = 2;

/// What happened to one batch: for logs, metrics and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchReport {
    pub records: usize,
    pub ignored: usize,
    pub skipped: usize,
    pub groups: usize,
    pub failed_groups: usize,
    /// Records not applied because the row's hwm showed them applied already.
    pub duplicates: usize,
    /// Rows that went below zero, and records dropped as applied although created after the
    /// row's last update: both mean the counts drifted and the post must be recounted.
    pub anomalies: usize,
    /// The lowest sequence number (as received) not applied, if any group failed.
    pub checkpoint: Option<SeqNo>,
}

impl BatchReport {
    pub fn response(&self) -> DynamoDbEventResponse {
        let mut resp = DynamoDbEventResponse::default();
        if let Some(seq) = &self.checkpoint {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(seq.raw().to_owned());
            resp.batch_item_failures.push(failure);
        }
        resp
    }
}

#[derive(Debug, Default)]
struct GroupResult {
    duplicates: usize,
    anomalies: usize,
    /// Lowest unapplied sequence number, when the group failed.
    failed_at: Option<SeqNo>,
}

/// Process-lifetime counters, for the EMF metrics line and for tests.
#[derive(Debug, Default)]
pub struct Totals {
    pub anomalies: AtomicU64,
    pub duplicates: AtomicU64,
}

pub struct Aggregator<C> {
    counts: C,
    max_concurrency: usize,
    pub totals: Totals,
}

impl<C: CountsStore> Aggregator<C> {
    pub fn new(counts: C) -> Self {
        Self::with_concurrency(counts, DEFAULT_MAX_CONCURRENCY)
    }

    pub fn with_concurrency(counts: C, max_concurrency: usize) -> Self {
        Self {
            counts,
            max_concurrency: max_concurrency.max(1),
            totals: Totals::default(),
        }
    }

    pub fn store(&self) -> &C {
        &self.counts
    }

    /// The Lambda handler's body: never fails as a whole; failures are reported per record.
    pub async fn handle(&self, event: &Event) -> DynamoDbEventResponse {
        self.process(event).await.response()
    }

    pub async fn process(&self, event: &Event) -> BatchReport {
        let parsed = batch::parse(event);
        let mut report = BatchReport {
            records: parsed.records(),
            ignored: parsed.ignored,
            skipped: parsed.skipped,
            groups: parsed.groups.len(),
            ..BatchReport::default()
        };
        // Invariant 6: bounded concurrency, and one group's failure does not stop the others.
        let results: Vec<GroupResult> = stream::iter(parsed.groups.iter())
            .map(|g| self.apply_group(g))
            .buffer_unordered(self.max_concurrency)
            .collect()
            .await;
        for r in results {
            report.duplicates += r.duplicates;
            report.anomalies += r.anomalies;
            if let Some(seq) = r.failed_at {
                report.failed_groups += 1;
                // Invariant 5: report the lowest unapplied sequence number of the whole batch.
                if report.checkpoint.as_ref().is_none_or(|c| seq < *c) {
                    report.checkpoint = Some(seq);
                }
            }
        }
        self.totals
            .anomalies
            .fetch_add(report.anomalies as u64, Ordering::Relaxed);
        self.totals
            .duplicates
            .fetch_add(report.duplicates as u64, Ordering::Relaxed);
        report
    }

    async fn apply_group(&self, group: &Group) -> GroupResult {
        let mut result = GroupResult::default();
        let mut pending: &[Change] = &group.changes;
        for _ in 0..MAX_ROUNDS {
            let (Some(first), Some(last)) = (pending.first(), pending.last()) else {
                return result;
            };
            // Invariants 2 and 4: one write for the group, even when the delta is 0.
            let delta: i64 = pending.iter().map(|c| c.delta).sum();
            let now = format_ts(Utc::now());
            match self
                .counts
                .apply(&group.row, delta, &first.seq, &last.seq, &now)
                .await
            {
                Ok(ApplyOutcome::Applied { like_count }) => {
                    // Invariant 8.
                    if like_count < 0 {
                        result.anomalies += 1;
                        tracing::error!(
                            post_id = %group.row.post,
                            bucket = group.row.bucket,
                            like_count,
                            "count went negative: the Counts row drifted from the Likes table; recount this post"
                        );
                    }
                    return result;
                }
                Ok(ApplyOutcome::AlreadyApplied) => {
                    // Invariant 3: some of these were applied by an earlier delivery. Read the
                    // row and keep only what lies above its hwm.
                    let row = match self.counts.read_row(&group.row).await {
                        Ok(row) => row,
                        Err(e) => return fail(result, &group.row, first, e),
                    };
                    let Some((hwm, updated_at)) =
                        row.and_then(|r| r.hwm.map(|h| (h, r.updated_at)))
                    else {
                        // The condition failed yet there is no hwm: the row changed under us.
                        continue;
                    };
                    let applied = pending.partition_point(|c| c.seq <= hwm);
                    let (dropped, rest) = pending.split_at(applied);
                    result.duplicates += dropped.len();
                    result.anomalies +=
                        self.check_dropped(&group.row, dropped, &hwm, updated_at.as_deref());
                    pending = rest;
                }
                Err(e) => return fail(result, &group.row, first, e),
            }
        }
        match pending.first() {
            None => result,
            Some(first) => fail(
                result,
                &group.row,
                first,
                StoreError::Internal("the row's high-water mark kept moving".into()),
            ),
        }
    }

    /// Invariant 8: a record dropped as "already applied" must have been created before the
    /// row was last written. One created after it means the sequence-number assumption was
    /// breached and a like was silently lost: say so loudly.
    fn check_dropped(
        &self,
        row: &PostBucket,
        dropped: &[Change],
        hwm: &SeqNo,
        updated_at: Option<&str>,
    ) -> usize {
        let Some(updated_at) = updated_at.and_then(parse_ts) else {
            return 0;
        };
        let limit = updated_at + Duration::seconds(SKEW_TOLERANCE_SECS);
        let late = dropped.iter().filter(|c| c.created > limit).count();
        if late > 0 {
            tracing::error!(
                post_id = %row.post,
                bucket = row.bucket,
                hwm = %hwm,
                late,
                "records dropped as applied were created after the row's last update; recount this post"
            );
        }
        late
    }
}

fn fail(mut result: GroupResult, row: &PostBucket, first: &Change, err: StoreError) -> GroupResult {
    tracing::warn!(
        post_id = %row.post,
        bucket = row.bucket,
        checkpoint = %first.seq,
        error = %err,
        "group not applied; Lambda will redeliver from its first unapplied record"
    );
    result.failed_at = Some(first.seq.clone());
    result
}

/// One CloudWatch Embedded Metric Format line (stdout is the function's log stream): metrics
/// without a client, an API call or extra latency.
pub fn emf_line(function_name: &str, report: &BatchReport, lag_ms: i64) -> String {
    serde_json::json!({
        "_aws": {
            "Timestamp": Utc::now().timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": "likes",
                "Dimensions": [["FunctionName"]],
                "Metrics": [
                    {"Name": "CountAnomalies", "Unit": "Count"},
                    {"Name": "DuplicateRecords", "Unit": "Count"},
                    {"Name": "FailedGroups", "Unit": "Count"},
                    {"Name": "SkippedRecords", "Unit": "Count"},
                    {"Name": "BatchLagMs", "Unit": "Milliseconds"}
                ]
            }]
        },
        "FunctionName": function_name,
        "CountAnomalies": report.anomalies,
        "DuplicateRecords": report.duplicates,
        "FailedGroups": report.failed_groups,
        "SkippedRecords": report.skipped,
        "BatchLagMs": lag_ms,
        "records": report.records,
        "groups": report.groups,
    })
    .to_string()
}

/// Milliseconds from the oldest record's creation to now: how far behind the counts are.
pub fn batch_lag_ms(event: &Event) -> i64 {
    event
        .records
        .iter()
        .map(|r| r.change.approximate_creation_date_time)
        .filter(|t| t.timestamp() > 0)
        .min()
        .map(|oldest| (Utc::now() - oldest).num_milliseconds().max(0))
        .unwrap_or(0)
}
