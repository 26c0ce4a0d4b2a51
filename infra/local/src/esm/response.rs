//! How Lambda reads a stream function's answer: the serialised partial batch response, with
//! ReportBatchItemFailures on.

use serde_json::Value;

use super::source::Record;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// Every record succeeded (no failures listed, an empty or null list).
    Complete,
    /// Retry from this record (the lowest sequence number listed), as received.
    From(String),
    /// The whole batch failed: an entry with an empty, null or missing `itemIdentifier`, one
    /// that names no record of the batch, or an answer that is not a partial batch response.
    Whole,
}

fn numeric(s: &str) -> (usize, &str) {
    let t = s.trim_start_matches('0');
    (t.len(), t)
}

pub fn verdict(response: &str, batch: &[Record]) -> Verdict {
    let Ok(v) = serde_json::from_str::<Value>(response) else {
        return Verdict::Whole;
    };
    let failures = match v.get("batchItemFailures") {
        None | Some(Value::Null) => return Verdict::Complete,
        Some(Value::Array(a)) if a.is_empty() => return Verdict::Complete,
        Some(Value::Array(a)) => a,
        Some(_) => return Verdict::Whole,
    };
    let mut lowest: Option<&str> = None;
    for f in failures {
        let id = match f.get("itemIdentifier").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id,
            _ => return Verdict::Whole,
        };
        if !batch.iter().any(|r| r.seq == id) {
            return Verdict::Whole;
        }
        if lowest.is_none_or(|l| numeric(id) < numeric(l)) {
            lowest = Some(id);
        }
    }
    lowest.map_or(Verdict::Complete, |l| Verdict::From(l.to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Vec<Record> {
        [
            "100000000000000000005",
            "100000000000000000009",
            "1000000000000000000010",
        ]
        .iter()
        .map(|s| Record {
            event_name: "INSERT".into(),
            keys: Default::default(),
            seq: (*s).into(),
            created_secs: 0.0,
            size_bytes: 0,
            event_id: String::new(),
        })
        .collect()
    }

    #[test]
    fn follows_lambdas_rules_for_the_serialised_answer() {
        let b = batch();
        let v = |s: &str| verdict(s, &b);
        assert_eq!(v(r#"{"batchItemFailures":[]}"#), Verdict::Complete);
        assert_eq!(v(r#"{"batchItemFailures":null}"#), Verdict::Complete);
        assert_eq!(v(r#"{}"#), Verdict::Complete);
        let one = r#"{"batchItemFailures":[{"itemIdentifier":"100000000000000000009"}]}"#;
        assert_eq!(v(one), Verdict::From("100000000000000000009".into()));
        // The lowest, numerically (22 digits are more than 21).
        let two = r#"{"batchItemFailures":[{"itemIdentifier":"1000000000000000000010"},{"itemIdentifier":"100000000000000000009"}]}"#;
        assert_eq!(v(two), Verdict::From("100000000000000000009".into()));
        for whole in [
            r#"{"batchItemFailures":[{"itemIdentifier":""}]}"#,
            r#"{"batchItemFailures":[{"itemIdentifier":null}]}"#,
            r#"{"batchItemFailures":[{}]}"#,
            r#"{"batchItemFailures":[{"itemIdentifier":"999"}]}"#,
            r#"{"batchItemFailures":"nope"}"#,
            "not json",
        ] {
            assert_eq!(v(whole), Verdict::Whole, "{whole}");
        }
    }
}
