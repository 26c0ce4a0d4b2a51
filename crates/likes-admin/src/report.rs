//! What a command tells its operator: its report (lines for people, or one JSON document), its
//! progress while it runs, and its errors — readable, with what to do, and JSON under `--json`.

use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use likes_core::StoreError;
use serde_json::{json, Value};

use crate::AdminError;

/// What a command found or did: for people, and for scripts (`--json`).
#[derive(Debug, Clone)]
pub struct Report {
    /// False when an audit found drift (exit status 1).
    pub clean: bool,
    /// Posts the command could not handle (each named in the report): exit status 3, after
    /// all the others were done.
    pub failed: usize,
    pub human: String,
    pub doc: Value,
}

impl Report {
    pub fn done(human: String, doc: Value) -> Self {
        Report {
            clean: true,
            failed: 0,
            human,
            doc,
        }
    }

    /// The process's exit status for this report.
    pub fn exit_code(&self) -> u8 {
        if self.failed > 0 {
            3
        } else if self.clean {
            0
        } else {
            1
        }
    }
}

/// Progress on a terminal: a bar with its total and an estimate of the time left where the
/// total is known, a spinner where it is not; nothing under `--json`.
pub fn progress(json: bool, what: &str, total: Option<u64>) -> ProgressBar {
    if json {
        return ProgressBar::hidden();
    }
    let (bar, template) = match total {
        Some(n) => (
            ProgressBar::new(n),
            "{msg} {bar:30} {pos}/{len} [{elapsed}, about {eta} left]",
        ),
        None => (
            ProgressBar::new_spinner(),
            "{spinner} {msg} {pos} [{elapsed}]",
        ),
    };
    if let Ok(style) = ProgressStyle::with_template(template) {
        bar.set_style(style);
    }
    bar.set_message(what.to_owned());
    bar.enable_steady_tick(Duration::from_millis(200));
    bar
}

/// The first line of a store error's detail, bounded: the SDK's own text nests every source.
fn first_line(detail: &str) -> String {
    let line = detail.lines().next().unwrap_or(detail);
    line.chars().take(300).collect()
}

/// A store error as an operator reads it: what happened and what to do, not the SDK's dump.
fn store_message(e: &StoreError) -> (&'static str, String) {
    let detail = match e {
        StoreError::Unavailable(d) | StoreError::OutcomeUnknown(d) | StoreError::Internal(d) => d,
        StoreError::CollectionFull(d) => d,
        StoreError::KeyReused => return ("store", e.to_string()),
    };
    let lower = detail.to_lowercase();
    if lower.contains("credential") {
        return (
            "credentials",
            "no AWS credentials were found: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or pass --endpoint-url for an emulator".into(),
        );
    }
    if lower.contains("connection refused")
        || lower.contains("dns error")
        || lower.contains("io error")
    {
        return (
            "unreachable",
            format!("DynamoDB could not be reached ({}): is the endpoint right, and is it running? Nothing was changed by this attempt; run again", first_line(detail)),
        );
    }
    match e {
        StoreError::Unavailable(_) => (
            "unavailable",
            format!(
                "DynamoDB throttled or did not answer ({}); run again",
                first_line(detail)
            ),
        ),
        _ => (
            "store",
            format!("DynamoDB request failed: {}", first_line(detail)),
        ),
    }
}

/// An error as the process reports it: its exit status, a stable code and a message.
pub fn error_report(e: &AdminError) -> (u8, &'static str, String) {
    match e {
        AdminError::Usage(m) => (2, "usage", m.clone()),
        AdminError::Store(s) => {
            let (code, message) = store_message(s);
            (3, code, message)
        }
        AdminError::Busy { .. } => (3, "busy", e.to_string()),
        AdminError::LeaseLost { .. } => (3, "lease_lost", e.to_string()),
        AdminError::WindowDisturbed { .. } => (3, "window_disturbed", e.to_string()),
        AdminError::Timeout(_) => (3, "timeout", e.to_string()),
        AdminError::State(_) => (3, "state_file", e.to_string()),
        AdminError::Incomplete(_) => (3, "incomplete", e.to_string()),
    }
}

/// The error as one JSON document (`--json`).
pub fn error_json(e: &AdminError) -> Value {
    let (status, code, message) = error_report(e);
    json!({"error": {"code": code, "message": message, "exit_status": status}})
}
