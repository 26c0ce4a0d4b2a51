//! What a batch did: the partial batch response Lambda reads, and the metrics line.

use aws_lambda_events::streams::DynamoDbEventResponse;
use likes_aws::stream_batch;

/// What happened to one batch: for the response, logs, metrics and tests.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BatchReport {
    /// Like and unlike records acted on; MODIFY and control items' records; records that can
    /// never be read (invariant 7); records delivered twice within the batch.
    pub records: usize,
    pub ignored: usize,
    pub skipped: usize,
    pub repeated: usize,
    /// Events put on the bus and accepted; entries given up on (their records are redelivered);
    /// entries sent again after a refusal; entries not sent (after a failed record, or the
    /// deadline).
    pub published: usize,
    pub failed_entries: usize,
    pub retried_entries: usize,
    pub unsent_entries: usize,
    /// What the rules decided (invariants 4–6), delivered or not.
    pub notifications: usize,
    pub retractions: usize,
    pub suppressed: usize,
    pub milestones: usize,
    /// Posts whose milestones were left to their next like, and posts whose count was behind
    /// the batch and held it (`checks`, invariant 6).
    pub deferred_milestones: usize,
    pub held_milestones: usize,
    /// Records whose notification decision could not be known again (invariant 4).
    pub unknown: usize,
    /// Pairs whose state was found ahead of the stream and set aside.
    pub marks_ahead: usize,
    /// Suppression or milestone writes that failed (logged; see invariant 5).
    pub failed_writes: usize,
    /// The lowest record (its sequence number, as received) not done, if any.
    pub checkpoint: Option<String>,
    /// The oldest record's creation time (epoch milliseconds), for the lag metric.
    pub oldest_created_ms: Option<i64>,
}

impl BatchReport {
    /// Invariant 2: the lowest record not done as the only `batchItemFailures` entry, spelled
    /// exactly as received; none when everything was done.
    pub fn response(&self) -> DynamoDbEventResponse {
        stream_batch::response(self.checkpoint.as_deref())
    }

    /// Milliseconds from the oldest record's creation to now: how late the events are.
    pub fn lag_ms(&self) -> i64 {
        stream_batch::lag_ms(self.oldest_created_ms)
    }
}

/// The batch's metrics line (`likes_aws::stream_batch::emf_line`).
pub fn emf_line(function_name: &str, r: &BatchReport) -> String {
    let n = |v: usize| v as i64;
    stream_batch::emf_line(
        function_name,
        &[
            ("EventsPublished", "Count", n(r.published)),
            ("FailedEntries", "Count", n(r.failed_entries)),
            ("RetriedEntries", "Count", n(r.retried_entries)),
            ("Notifications", "Count", n(r.notifications)),
            ("Retractions", "Count", n(r.retractions)),
            ("SuppressedNotifications", "Count", n(r.suppressed)),
            ("Milestones", "Count", n(r.milestones)),
            ("MilestoneChecksDeferred", "Count", n(r.deferred_milestones)),
            ("MilestoneChecksHeld", "Count", n(r.held_milestones)),
            ("UnknownDecisions", "Count", n(r.unknown)),
            ("FailedStateWrites", "Count", n(r.failed_writes)),
            ("SkippedRecords", "Count", n(r.skipped)),
            ("BatchLagMs", "Milliseconds", r.lag_ms()),
        ],
        serde_json::json!({
            "records": r.records,
            "unsent_entries": r.unsent_entries,
            "marks_ahead": r.marks_ahead,
        }),
    )
}
