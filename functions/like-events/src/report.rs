//! What a batch did: the partial batch response Lambda reads, and the metrics line.

use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use chrono::Utc;

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
    /// Posts whose milestones were left to their next like (invariant 6).
    pub deferred_milestones: usize,
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
        let mut resp = DynamoDbEventResponse::default();
        if let Some(seq) = &self.checkpoint {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(seq.clone());
            resp.batch_item_failures.push(failure);
        }
        resp
    }

    /// Milliseconds from the oldest record's creation to now: how late the events are.
    pub fn lag_ms(&self) -> i64 {
        self.oldest_created_ms
            .filter(|t| *t > 0)
            .map(|t| (Utc::now().timestamp_millis() - t).max(0))
            .unwrap_or(0)
    }
}

/// One CloudWatch Embedded Metric Format line (stdout is the function's log stream).
pub fn emf_line(function_name: &str, r: &BatchReport) -> String {
    let metrics = [
        ("EventsPublished", "Count"),
        ("FailedEntries", "Count"),
        ("RetriedEntries", "Count"),
        ("Notifications", "Count"),
        ("Retractions", "Count"),
        ("SuppressedNotifications", "Count"),
        ("Milestones", "Count"),
        ("MilestoneChecksDeferred", "Count"),
        ("UnknownDecisions", "Count"),
        ("FailedStateWrites", "Count"),
        ("SkippedRecords", "Count"),
        ("BatchLagMs", "Milliseconds"),
    ];
    serde_json::json!({
        "_aws": {
            "Timestamp": Utc::now().timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": "likes",
                "Dimensions": [["FunctionName"]],
                "Metrics": metrics
                    .iter()
                    .map(|(name, unit)| serde_json::json!({"Name": name, "Unit": unit}))
                    .collect::<Vec<_>>(),
            }]
        },
        "FunctionName": function_name,
        "EventsPublished": r.published,
        "FailedEntries": r.failed_entries,
        "RetriedEntries": r.retried_entries,
        "Notifications": r.notifications,
        "Retractions": r.retractions,
        "SuppressedNotifications": r.suppressed,
        "Milestones": r.milestones,
        "MilestoneChecksDeferred": r.deferred_milestones,
        "UnknownDecisions": r.unknown,
        "FailedStateWrites": r.failed_writes,
        "SkippedRecords": r.skipped,
        "BatchLagMs": r.lag_ms(),
        "records": r.records,
        "unsent_entries": r.unsent_entries,
        "marks_ahead": r.marks_ahead,
    })
    .to_string()
}
