//! What a batch did: the partial batch response Lambda reads, and the metrics line.

use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use chrono::Utc;
use likes_core::Seq;

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
    /// The lowest sequence number (as received) not applied, if any.
    pub checkpoint: Option<String>,
    /// The oldest record's creation time (epoch seconds), for the lag metric.
    pub oldest_created: Option<i64>,
}

impl BatchReport {
    /// Invariant 5: the lowest unapplied record as the only `batchItemFailures` entry, spelled
    /// exactly as received; none when everything was applied.
    pub fn response(&self) -> DynamoDbEventResponse {
        let mut resp = DynamoDbEventResponse::default();
        if let Some(seq) = &self.checkpoint {
            let mut failure = DynamoDbBatchItemFailure::default();
            failure.item_identifier = Some(seq.clone());
            resp.batch_item_failures.push(failure);
        }
        resp
    }

    pub(crate) fn note_unapplied(&mut self, seq: &str) {
        let lower = match (&self.checkpoint, Seq::parse(seq)) {
            (Some(current), Ok(new)) => Seq::parse(current).map(|c| new < c).unwrap_or(true),
            _ => true,
        };
        if lower {
            self.checkpoint = Some(seq.to_owned());
        }
    }

    /// Milliseconds from the oldest record's creation to now: how far behind the counts are.
    pub fn lag_ms(&self) -> i64 {
        self.oldest_created
            .filter(|t| *t > 0)
            .map(|t| (Utc::now().timestamp_millis() - t * 1000).max(0))
            .unwrap_or(0)
    }
}

/// One CloudWatch Embedded Metric Format line (stdout is the function's log stream): metrics
/// without a client, an API call or extra latency.
pub fn emf_line(function_name: &str, report: &BatchReport) -> String {
    serde_json::json!({
        "_aws": {
            "Timestamp": Utc::now().timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": "likes",
                "Dimensions": [["FunctionName"]],
                "Metrics": [
                    {"Name": "CountAnomalies", "Unit": "Count"},
                    {"Name": "MarksAhead", "Unit": "Count"},
                    {"Name": "DuplicateRecords", "Unit": "Count"},
                    {"Name": "FailedPosts", "Unit": "Count"},
                    {"Name": "DeferredPosts", "Unit": "Count"},
                    {"Name": "SkippedRecords", "Unit": "Count"},
                    {"Name": "BatchLagMs", "Unit": "Milliseconds"}
                ]
            }]
        },
        "FunctionName": function_name,
        "CountAnomalies": report.anomalies,
        "MarksAhead": report.marks_ahead,
        "DuplicateRecords": report.duplicates,
        "FailedPosts": report.failed_posts,
        "DeferredPosts": report.deferred_posts,
        "SkippedRecords": report.skipped,
        "BatchLagMs": report.lag_ms(),
        "records": report.records,
        "groups": report.groups,
        "posts": report.posts,
    })
    .to_string()
}
