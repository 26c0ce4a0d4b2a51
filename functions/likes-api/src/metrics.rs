//! The API's metrics, as CloudWatch embedded-metric-format lines on stdout (the function's log
//! stream): no client, no API call, no latency.

use serde_json::json;

/// A like refused because one bucket of its post reached DynamoDB's 10 GB item-collection
/// limit (the `ItemCollectionFull` metric): that post cannot take more likes in that bucket.
pub fn collection_full_line(function: &str) -> String {
    json!({
        "_aws": {
            "Timestamp": chrono_now_ms(),
            "CloudWatchMetrics": [{
                "Namespace": "likes",
                "Dimensions": [["FunctionName"]],
                "Metrics": [{"Name": "ItemCollectionFull", "Unit": "Count"}]
            }]
        },
        "FunctionName": function,
        "ItemCollectionFull": 1
    })
    .to_string()
}

fn chrono_now_ms() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis())
        .unwrap_or(0)
}
