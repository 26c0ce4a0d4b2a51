//! The aggregator's decode + group, side by side with its Python peer on the same event file.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use count_aggregator::decode::{decode, StreamEvent};
use count_aggregator::group::{parse, Parsed};
use serde_json::{json, Value};

/// Records per second of `work` over the event, run for at least `for_at_least`.
fn rate(records: usize, for_at_least: Duration, mut work: impl FnMut()) -> f64 {
    work();
    let started = Instant::now();
    let mut rounds = 0u64;
    while started.elapsed() < for_at_least {
        work();
        rounds += 1;
    }
    (records as f64 * rounds as f64) / started.elapsed().as_secs_f64()
}

pub fn records_in(text: &str) -> Result<usize, String> {
    decode(text)
        .map(|e| e.records.len())
        .map_err(|e| format!("not a Lambda DynamoDB stream event: {e}"))
}

/// Decode + group, records/s.
pub fn rust_rate(text: &str, for_at_least: Duration) -> f64 {
    let n = records_in(text).unwrap_or(0);
    rate(n, for_at_least, || {
        let event: StreamEvent = decode(black_box(text)).expect("checked");
        black_box(parse(&event).posts.len());
    })
}

/// Decode alone, records/s.
pub fn decode_rate(text: &str, for_at_least: Duration) -> f64 {
    let n = records_in(text).unwrap_or(0);
    rate(n, for_at_least, || {
        let event: StreamEvent = decode(black_box(text)).expect("checked");
        black_box(event.records.len());
    })
}

/// What the decode was before: `aws_lambda_events`' full record types, records/s.
pub fn aws_lambda_events_rate(text: &str, for_at_least: Duration) -> f64 {
    let n = records_in(text).unwrap_or(0);
    rate(n, for_at_least, || {
        let event: aws_lambda_events::dynamodb::Event =
            serde_json::from_str(black_box(text)).expect("checked");
        black_box(event.records.len());
    })
}

/// The canonical summary `peer.py --check` prints, from the Rust parse.
pub fn summary(parsed: &Parsed<'_>) -> Value {
    let mut groups: Vec<(String, i64, String, String, usize)> = parsed
        .posts
        .iter()
        .flat_map(|p| {
            p.buckets.iter().map(move |b| {
                let (first, last) = (b.changes[0].seq, b.changes[b.changes.len() - 1].seq);
                let trim = |s: &str| s.trim_start_matches('0').to_owned();
                (
                    format!("{}#{}", p.post, b.bucket),
                    b.changes.iter().map(|c| c.delta).sum(),
                    trim(first.raw()),
                    trim(last.raw()),
                    b.changes.len(),
                )
            })
        })
        .collect();
    // Rust groups a post's buckets together; the peer lists keys by first appearance, which is
    // the order of their first sequence numbers.
    groups.sort_by(|a, b| (a.2.len(), &a.2).cmp(&(b.2.len(), &b.2)));
    json!({
        "records": parsed.records(),
        "ignored": parsed.ignored,
        "skipped": parsed.skipped + parsed.repeated,
        "groups": groups,
    })
}

pub struct Peer {
    python: PathBuf,
    script: PathBuf,
}

impl Peer {
    pub fn new(root: &Path) -> Option<Self> {
        let python = root.join(".venv-bench/bin/python");
        python.exists().then(|| Self {
            python,
            script: root.join("tests/bench/peer.py"),
        })
    }

    fn run(&self, file: &Path, args: &[&str]) -> Result<String, String> {
        let out = Command::new(&self.python)
            .arg(&self.script)
            .arg(file)
            .args(args)
            .output()
            .map_err(|e| format!("running the peer: {e}"))?;
        if !out.status.success() {
            return Err(String::from_utf8_lossy(&out.stderr).into_owned());
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// The peer's summary equals the Rust one: both do the same work.
    pub fn agrees(&self, file: &Path, text: &str) -> Result<(), String> {
        let theirs: Value = serde_json::from_str(&self.run(file, &["--check"])?)
            .map_err(|e| format!("the peer's summary: {e}"))?;
        let event: StreamEvent = decode(text).map_err(|e| e.to_string())?;
        let ours = summary(&parse(&event));
        if theirs == ours {
            Ok(())
        } else {
            Err("the Python peer and the aggregator group the event differently".into())
        }
    }

    /// The peer's records/s, from its one-line report.
    pub fn rate(&self, file: &Path, seconds: u64) -> Result<f64, String> {
        let line = self.run(file, &["--seconds", &seconds.to_string()])?;
        line.split(" records/s")
            .next()
            .and_then(|head| head.rsplit(' ').next())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| format!("unexpected peer output: {line}"))
    }
}
