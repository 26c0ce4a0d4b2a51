//! The API's metrics, as CloudWatch embedded-metric-format lines on stdout (the function's log
//! stream): no client, no API call, no latency. One line per request is both its access log
//! (route, method, status, outcome, latency, request id — fields a Logs Insights query filters
//! on) and its metrics (`Requests` and `Latency` by route and outcome).

use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{json, Value};

use crate::routes::{route, Route};

/// Whether each request's line is written: on in the Lambda binary, where the line is the access
/// log and the metrics; off where a caller logs requests its own way (the local stack).
static REQUEST_LINES: AtomicBool = AtomicBool::new(false);

pub fn write_request_lines(on: bool) {
    REQUEST_LINES.store(on, Ordering::Relaxed);
}

pub fn request_lines() -> bool {
    REQUEST_LINES.load(Ordering::Relaxed)
}

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

/// A route's name in logs and metric dimensions.
pub fn route_label(method: &http::Method, path: &str) -> &'static str {
    match route(method, path) {
        Ok(Route::Like(_)) => "like",
        Ok(Route::Unlike(_)) => "unlike",
        Ok(Route::GetLike(_)) => "get_like",
        Ok(Route::Count(_)) => "count",
        Ok(Route::Likers(_)) => "likers",
        Ok(Route::MyLikes) => "my_likes",
        Ok(Route::EraseMine) => "erase_mine",
        Ok(Route::Summary) => "summary",
        Ok(_) => "preflight",
        Err(e) if e.status == 400 => "bad_id",
        Err(_) => "unknown",
    }
}

/// What a request came to: `changed`/`unchanged` for a like or unlike that answered, `ok` for
/// another success, the error code of a 503 (`unavailable`, `outcome_unknown`), `post_full`,
/// `rate_limited`, `4xx`, or `5xx`.
pub fn outcome(status: u16, body: Option<&str>) -> &'static str {
    let json = || body.and_then(|b| serde_json::from_str::<Value>(b).ok());
    match status {
        200 => match json().and_then(|v| v["changed"].as_bool()) {
            Some(true) => "changed",
            Some(false) => "unchanged",
            None => "ok",
        },
        201..=399 => "ok",
        503 => match json()
            .as_ref()
            .and_then(|v| v["error"]["code"].as_str().map(str::to_owned))
            .as_deref()
        {
            Some("outcome_unknown") => "outcome_unknown",
            _ => "unavailable",
        },
        507 => "post_full",
        429 => "rate_limited",
        400..=499 => "4xx",
        _ => "5xx",
    }
}

/// The request's line: its access log entry and its metrics.
pub struct RequestLine<'a> {
    pub function: &'a str,
    pub route: &'static str,
    pub method: &'a str,
    pub status: u16,
    pub outcome: &'static str,
    pub latency_ms: f64,
    pub request_id: &'a str,
}

impl RequestLine<'_> {
    pub fn to_line(&self) -> String {
        json!({
            "_aws": {
                "Timestamp": chrono_now_ms(),
                "CloudWatchMetrics": [{
                    "Namespace": "likes",
                    "Dimensions": [["FunctionName", "Route", "Outcome"], ["FunctionName"]],
                    "Metrics": [
                        {"Name": "Requests", "Unit": "Count"},
                        {"Name": "Latency", "Unit": "Milliseconds"}
                    ]
                }]
            },
            "message": "request",
            "FunctionName": self.function,
            "Route": self.route,
            "Outcome": self.outcome,
            "Requests": 1,
            "Latency": self.latency_ms,
            "method": self.method,
            "status": self.status,
            "function_request_id": self.request_id,
        })
        .to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_and_routes_are_named() {
        assert_eq!(outcome(200, Some(r#"{"changed":true}"#)), "changed");
        assert_eq!(outcome(200, Some(r#"{"changed":false}"#)), "unchanged");
        assert_eq!(outcome(200, Some(r#"{"like_count":3}"#)), "ok");
        assert_eq!(outcome(304, None), "ok");
        let unknown = r#"{"error":{"code":"outcome_unknown","message":"…"}}"#;
        assert_eq!(outcome(503, Some(unknown)), "outcome_unknown");
        assert_eq!(
            outcome(503, Some(r#"{"error":{"code":"unavailable"}}"#)),
            "unavailable"
        );
        assert_eq!(
            (outcome(404, None), outcome(507, None), outcome(500, None)),
            ("4xx", "post_full", "5xx")
        );
        let m = http::Method::PUT;
        assert_eq!(route_label(&m, "/posts/p1/like"), "like");
        assert_eq!(route_label(&http::Method::GET, "/likes/summary"), "summary");
        assert_eq!(route_label(&m, "/nowhere"), "unknown");
        assert_eq!(route_label(&m, "/posts/a%20b/like"), "bad_id");
    }
}
