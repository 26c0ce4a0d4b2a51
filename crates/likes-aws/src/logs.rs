//! The functions' logs: one JSON object per line on stdout (the function's log stream), with the
//! keys Powertools for AWS Lambda uses, so that the queries and dashboards written for it work
//! here: `timestamp`, `level`, `message`, `service`, `function_name`, `cold_start`,
//! `function_request_id`, `xray_trace_id`, then the event's own fields. An event's fields are
//! flattened into the line, never nested, so a CloudWatch Logs Insights query can filter on them.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

/// The invocation being served: one at a time per execution environment.
static INVOCATION: Mutex<Option<Invocation>> = Mutex::new(None);
/// Whether an invocation has been served yet by this execution environment.
static WARM: AtomicBool = AtomicBool::new(false);

#[derive(Debug, Clone)]
struct Invocation {
    request_id: String,
    cold_start: bool,
}

/// Marks the start of an invocation: its lines carry its request id, and the first one of the
/// execution environment `cold_start: true`.
pub fn begin_invocation(request_id: &str) {
    let cold_start = !WARM.swap(true, Ordering::Relaxed);
    if let Ok(mut now) = INVOCATION.lock() {
        *now = Some(Invocation {
            request_id: request_id.to_owned(),
            cold_start,
        });
    }
}

/// The layer that writes the lines.
pub struct JsonLines {
    service: &'static str,
    function_name: String,
}

impl JsonLines {
    pub fn new(service: &'static str, function_name: impl Into<String>) -> Self {
        Self {
            service,
            function_name: function_name.into(),
        }
    }

    /// The line for an event with these fields (`message` among them).
    fn line(&self, level: &tracing::Level, mut fields: Map<String, Value>) -> Value {
        let mut line = Map::new();
        let now = chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Millis, true);
        line.insert("timestamp".into(), now.into());
        line.insert("level".into(), level.as_str().into());
        line.insert(
            "message".into(),
            fields.remove("message").unwrap_or(Value::Null),
        );
        line.insert("service".into(), self.service.into());
        line.insert("function_name".into(), self.function_name.clone().into());
        let invocation = INVOCATION.lock().ok().and_then(|i| i.clone());
        if let Some(i) = invocation {
            line.insert("cold_start".into(), i.cold_start.into());
            line.insert("function_request_id".into(), i.request_id.into());
        }
        if let Ok(trace) = std::env::var("_X_AMZN_TRACE_ID") {
            line.insert("xray_trace_id".into(), trace.into());
        }
        for (k, v) in fields {
            line.entry(k).or_insert(v);
        }
        Value::Object(line)
    }
}

/// Collects an event's fields as JSON values.
struct Fields<'a>(&'a mut Map<String, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.0.insert(field.name().into(), value.into());
    }
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        self.0
            .insert(field.name().into(), format!("{value:?}").into());
    }
}

impl<S: Subscriber> Layer<S> for JsonLines {
    fn on_event(&self, event: &Event<'_>, _ctx: Context<'_, S>) {
        let mut fields = Map::new();
        event.record(&mut Fields(&mut fields));
        let line = self.line(event.metadata().level(), fields);
        // One write per line: lines of concurrent tasks never interleave.
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "{line}");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_line_has_the_powertools_keys_and_the_events_fields_flat() {
        let layer = JsonLines::new("likes-api", "likes-LikesApiFunction-1");
        begin_invocation("req-1");
        let mut fields = Map::new();
        fields.insert("message".into(), "request".into());
        fields.insert("route".into(), "like".into());
        fields.insert("status".into(), 200.into());
        let line = layer.line(&tracing::Level::INFO, fields);
        assert_eq!(line["level"], "INFO");
        assert_eq!(line["message"], "request");
        assert_eq!(line["service"], "likes-api");
        assert_eq!(line["function_name"], "likes-LikesApiFunction-1");
        assert_eq!(line["function_request_id"], "req-1");
        assert_eq!(
            (line["route"].as_str(), line["status"].as_i64()),
            (Some("like"), Some(200))
        );
        assert!(line["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')));
        assert!(line["cold_start"].is_boolean());
        // The environment's second invocation is warm.
        begin_invocation("req-2");
        let line = layer.line(&tracing::Level::WARN, Map::new());
        assert_eq!(
            (&line["cold_start"], &line["function_request_id"]),
            (&Value::Bool(false), &Value::from("req-2"))
        );
    }
}
