//! What a Likes stream reader's batch answers, the same for both readers (the count aggregator
//! and the events function): the partial batch response Lambda reads, and the metrics line.

use aws_lambda_events::streams::{DynamoDbBatchItemFailure, DynamoDbEventResponse};
use chrono::Utc;
use likes_core::Seq;
use serde_json::{json, Map, Value};

/// The partial batch response: the lowest record not done as the only `batchItemFailures`
/// entry, spelled exactly as received (Lambda retries from it, and an entry it cannot find in
/// the batch fails the whole batch); none when everything was done.
pub fn response(checkpoint: Option<&str>) -> DynamoDbEventResponse {
    let mut resp = DynamoDbEventResponse::default();
    if let Some(seq) = checkpoint {
        let mut failure = DynamoDbBatchItemFailure::default();
        failure.item_identifier = Some(seq.to_owned());
        resp.batch_item_failures.push(failure);
    }
    resp
}

/// Keeps the lower of `checkpoint` and `seq` (as numbers; one that does not parse wins, so that
/// nothing after it is reported done).
pub fn lower_checkpoint(checkpoint: &mut Option<String>, seq: &str) {
    let lower = match (checkpoint.as_deref(), Seq::parse(seq)) {
        (Some(current), Ok(new)) => Seq::parse(current).map(|c| new < c).unwrap_or(true),
        _ => true,
    };
    if lower {
        *checkpoint = Some(seq.to_owned());
    }
}

/// Milliseconds from the oldest record's creation (epoch milliseconds) to now: how far behind
/// the reader is. 0 when no record said.
pub fn lag_ms(oldest_created_ms: Option<i64>) -> i64 {
    oldest_created_ms
        .filter(|t| *t > 0)
        .map(|t| (Utc::now().timestamp_millis() - t).max(0))
        .unwrap_or(0)
}

/// One CloudWatch Embedded Metric Format line (stdout is the function's log stream): metrics
/// without a client, an API call or extra latency. `metrics` are (name, unit, value) in the
/// namespace `likes` by `FunctionName`; `fields` are logged beside them, not metrics.
pub fn emf_line(function_name: &str, metrics: &[(&str, &str, i64)], fields: Value) -> String {
    let mut line = Map::new();
    line.insert(
        "_aws".into(),
        json!({
            "Timestamp": Utc::now().timestamp_millis(),
            "CloudWatchMetrics": [{
                "Namespace": "likes",
                "Dimensions": [["FunctionName"]],
                "Metrics": metrics
                    .iter()
                    .map(|(name, unit, _)| json!({"Name": name, "Unit": unit}))
                    .collect::<Vec<_>>(),
            }]
        }),
    );
    line.insert("FunctionName".into(), json!(function_name));
    for (name, _, value) in metrics {
        line.insert((*name).into(), json!(value));
    }
    if let Value::Object(fields) = fields {
        line.extend(fields);
    }
    Value::Object(line).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_checkpoint_is_the_lowest_as_received() {
        let mut c = None;
        lower_checkpoint(&mut c, "300");
        lower_checkpoint(&mut c, "1000");
        lower_checkpoint(&mut c, "0200");
        assert_eq!(c.as_deref(), Some("0200"));
        let r = response(c.as_deref());
        assert_eq!(r.batch_item_failures.len(), 1);
        assert_eq!(
            r.batch_item_failures[0].item_identifier.as_deref(),
            Some("0200")
        );
        assert!(response(None).batch_item_failures.is_empty());
    }

    #[test]
    fn an_emf_line_declares_each_metric_and_carries_its_value() {
        let line = emf_line("f", &[("A", "Count", 3)], json!({"records": 7}));
        let v: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(v["_aws"]["CloudWatchMetrics"][0]["Metrics"][0]["Name"], "A");
        assert_eq!((v["A"].as_i64(), v["records"].as_i64()), (Some(3), Some(7)));
        assert_eq!(v["FunctionName"], "f");
    }
}
