//! The sample events of `events` and their manifest, `expected.json`: what every
//! function's events test reads, and the seed likes the API and erase-worker events are
//! answered against.

use std::collections::BTreeMap;
use std::path::PathBuf;

use likes_core::{BucketWrite, CountsLedger, PostBucket, PostId, Seq, UserId};
use serde_json::Value;

use crate::Tables;

/// Every function an event in the manifest may be for.
pub const FUNCTIONS: [&str; 4] = [
    "LikesApiFunction",
    "CountAggregatorFunction",
    "EraseWorkerFunction",
    "LikeEventsFunction",
];

pub fn dir() -> PathBuf {
    PathBuf::from(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../functions/events"
    ))
}

pub fn read_json(file: &str) -> Value {
    let path = dir().join(file);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

pub fn manifest() -> Value {
    read_json("expected.json")
}

pub fn entries(manifest: &Value) -> &[Value] {
    manifest["events"].as_array().expect("events: a list")
}

/// The manifest's entries for `function`, in order.
pub fn entries_for<'a>(manifest: &'a Value, function: &str) -> Vec<&'a Value> {
    entries(manifest)
        .iter()
        .filter(|e| e["function"] == function)
        .collect()
}

pub fn file_of(entry: &Value) -> &str {
    entry["file"].as_str().expect("file: a string")
}

/// Writes the manifest's seed likes as the API stores them (the Likes table's persistent item
/// format), and the Counts rows the aggregator would have made of them. How many it wrote.
pub async fn seed(t: &Tables, m: &Value) -> usize {
    let likes = m["seed"]["likes"].as_array().expect("seed.likes");
    let mut per_row: BTreeMap<PostBucket, i64> = BTreeMap::new();
    for like in likes {
        let s = |k: &str| like[k].as_str().expect("seed like field").to_owned();
        let post = PostId::parse(&s("post_id")).expect("seed post id");
        let user = UserId::parse(&s("user_id")).expect("seed user id");
        t.put_like(&post, &user, &s("liked_at")).await;
        *per_row
            .entry(PostBucket::for_like(&post, &user))
            .or_default() += 1;
    }
    let seq = Seq::parse("1").expect("a sequence number");
    for (row, n) in &per_row {
        let write = BucketWrite {
            kinds: Vec::new(),
            bucket: row.bucket,
            delta: *n,
            first: seq,
            last: seq,
            last_created: 0,
            window: None,
            records: 0,
        };
        t.counts()
            .apply(&row.post, &[write])
            .await
            .expect("seed a Counts item");
    }
    likes.len()
}

/// `expected` matches `actual`: objects as subsets (every listed field, recursively), arrays
/// element by element and of the same length, `"*"` any non-null value, anything else exactly.
pub fn check_match(expected: &Value, actual: &Value, at: &str, problems: &mut Vec<String>) {
    match (expected, actual) {
        (Value::String(s), _) if s == "*" => {
            if actual.is_null() {
                problems.push(format!("{at}: expected a value, got null"));
            }
        }
        (Value::Object(want), Value::Object(got)) => {
            for (k, v) in want {
                match got.get(k) {
                    Some(g) => check_match(v, g, &format!("{at}.{k}"), problems),
                    None => problems.push(format!("{at}.{k}: missing")),
                }
            }
        }
        (Value::Array(want), Value::Array(got)) => {
            if want.len() != got.len() {
                problems.push(format!(
                    "{at}: expected {} items, got {}: {actual}",
                    want.len(),
                    got.len()
                ));
                return;
            }
            for (i, (w, g)) in want.iter().zip(got).enumerate() {
                check_match(w, g, &format!("{at}[{i}]"), problems);
            }
        }
        _ => {
            if expected != actual {
                problems.push(format!("{at}: expected {expected}, got {actual}"));
            }
        }
    }
}

/// Fails with every mismatch of a function's events at once.
pub fn assert_no_problems(problems: &[String], events: usize) {
    assert!(
        problems.is_empty(),
        "{} problems over {events} events (functions/events/expected.json):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
