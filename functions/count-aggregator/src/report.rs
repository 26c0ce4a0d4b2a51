//! What a batch did: the partial batch response Lambda reads, and the metrics line.

use aws_lambda_events::streams::DynamoDbEventResponse;
use likes_aws::stream_batch;

/// What happened to one batch: for the response, logs, metrics and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchReport {
    pub records: usize,
    pub ignored: usize,
    pub skipped: usize,
    /// Source partition keys in the batch, and posts (one write each).
    pub groups: usize,
    pub posts: usize,
    pub failed_posts: usize,
    /// Posts not started because the invocation's deadline was near (their records are
    /// reported unapplied and redelivered).
    pub deferred_posts: usize,
    /// Records not applied because a mark showed them applied already, or because they were
    /// delivered twice within the batch.
    pub duplicates: usize,
    /// Buckets that went below zero, and records dropped as applied although created after the
    /// record at the mark: both mean the counts drifted and the post must be recounted.
    pub anomalies: usize,
    /// Buckets found with a mark ahead of the stream (invariant 10).
    pub marks_ahead: usize,
    /// Repair notes written for posts left unapplied (invariant 11).
    pub noted_posts: usize,
    /// The lowest sequence number (as received) not applied, if any.
    pub checkpoint: Option<String>,
    /// The oldest record's creation time (epoch seconds), for the lag metric.
    pub oldest_created: Option<i64>,
}

impl BatchReport {
    /// Invariant 5: the lowest unapplied record as the only `batchItemFailures` entry, spelled
    /// exactly as received; none when everything was applied.
    pub fn response(&self) -> DynamoDbEventResponse {
        stream_batch::response(self.checkpoint.as_deref())
    }

    pub(crate) fn note_unapplied(&mut self, seq: &str) {
        stream_batch::lower_checkpoint(&mut self.checkpoint, seq);
    }

    /// Milliseconds from the oldest record's creation to now: how far behind the counts are.
    pub fn lag_ms(&self) -> i64 {
        stream_batch::lag_ms(self.oldest_created.map(|t| t.saturating_mul(1000)))
    }
}

/// The batch's metrics line (`likes_aws::stream_batch::emf_line`).
pub fn emf_line(function_name: &str, report: &BatchReport) -> String {
    let n = |v: usize| v as i64;
    stream_batch::emf_line(
        function_name,
        &[
            ("CountAnomalies", "Count", n(report.anomalies)),
            ("MarksAhead", "Count", n(report.marks_ahead)),
            ("DuplicateRecords", "Count", n(report.duplicates)),
            ("FailedPosts", "Count", n(report.failed_posts)),
            ("DeferredPosts", "Count", n(report.deferred_posts)),
            ("RepairNotes", "Count", n(report.noted_posts)),
            ("SkippedRecords", "Count", n(report.skipped)),
            ("BatchLagMs", "Milliseconds", report.lag_ms()),
        ],
        serde_json::json!({
            "records": report.records,
            "groups": report.groups,
            "posts": report.posts,
        }),
    )
}
