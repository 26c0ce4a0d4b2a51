//! Parsing and grouping a stream batch. Pure: no I/O.

use std::collections::HashMap;

use aws_lambda_events::dynamodb::{Event, EventRecord};
use chrono::{DateTime, Utc};
use likes_core::bucket::split_key;
use likes_core::schema::likes::{PK, SK};
use likes_core::{PostBucket, SeqNo};
use serde_dynamo::AttributeValue;

/// One counted stream record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    pub seq: SeqNo,
    /// +1 for INSERT (a like), −1 for REMOVE (an unlike).
    pub delta: i64,
    pub created: DateTime<Utc>,
}

/// All of one source partition key's records in a batch, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Group {
    pub row: PostBucket,
    pub changes: Vec<Change>,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Parsed {
    pub groups: Vec<Group>,
    /// Records of other kinds (MODIFY), and records of control items (sort key starting with
    /// `~`: request markers, recount fences): nothing to count.
    pub ignored: usize,
    /// Records that can never be applied (no sequence number, missing or malformed key): logged
    /// and skipped so they cannot block the shard.
    pub skipped: usize,
}

impl Parsed {
    pub fn records(&self) -> usize {
        self.groups.iter().map(|g| g.changes.len()).sum()
    }
}

fn delta_of(event_name: &str) -> Option<i64> {
    match event_name {
        "INSERT" => Some(1),
        "REMOVE" => Some(-1),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
enum Unparsable {
    #[error("no SequenceNumber")]
    NoSequence,
    #[error("{0}")]
    BadSequence(#[from] likes_core::seq::BadSeqNo),
    #[error("key {PK} is missing or not a string")]
    NoKey,
    #[error("key {PK} {0:?} is not \"<post_id>#<0..15>\"")]
    BadKey(String),
}

/// A record of a control item: its sort key starts with `~`, which no user id can.
fn is_control(record: &EventRecord) -> bool {
    matches!(record.change.keys.get(SK), Some(AttributeValue::S(s)) if s.starts_with('~'))
}

/// The record's partition key (checked, borrowed from the event) and sequence number.
fn parse_record(record: &EventRecord) -> Result<(&str, SeqNo), Unparsable> {
    let raw_seq = record
        .change
        .sequence_number
        .as_deref()
        .ok_or(Unparsable::NoSequence)?;
    let seq = SeqNo::parse(raw_seq)?;
    let key = match record.change.keys.get(PK) {
        Some(AttributeValue::S(s)) => s,
        _ => return Err(Unparsable::NoKey),
    };
    split_key(key).map_err(|_| Unparsable::BadKey(key.chars().take(100).collect()))?;
    Ok((key.as_str(), seq))
}

/// Groups the batch's INSERT/REMOVE records by source partition key, keeping stream order
/// within each group (invariant 1). Groups come out in order of first appearance. Records that
/// can never apply are logged and skipped (invariant 7).
pub fn parse(event: &Event) -> Parsed {
    let mut out = Parsed::default();
    // Keyed by the key as stored, borrowed from the event: one PostBucket per group, not per
    // record.
    let mut index: HashMap<&str, usize> = HashMap::new();
    for record in &event.records {
        let Some(delta) = delta_of(&record.event_name) else {
            out.ignored += 1;
            continue;
        };
        if is_control(record) {
            out.ignored += 1;
            continue;
        }
        match parse_record(record) {
            Ok((key, seq)) => {
                let change = Change {
                    seq,
                    delta,
                    created: record.change.approximate_creation_date_time,
                };
                let i = match index.get(key) {
                    Some(&i) => i,
                    None => {
                        let Ok(row) = PostBucket::parse(key) else {
                            continue;
                        };
                        out.groups.push(Group {
                            row,
                            changes: Vec::new(),
                        });
                        index.insert(key, out.groups.len() - 1);
                        out.groups.len() - 1
                    }
                };
                out.groups[i].changes.push(change);
            }
            Err(why) => {
                out.skipped += 1;
                tracing::error!(
                    sequence_number = record.change.sequence_number.as_deref().unwrap_or("<none>"),
                    event_id = %record.event_id,
                    %why,
                    "skipping a stream record that can never be applied"
                );
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use likes_core::{PostId, UserId};
    use likes_testkit::stream::{batch, StreamRecord};

    fn rec(name: &str, post: &PostId, user: &UserId, seq: u64) -> serde_json::Value {
        let seq = (100_000_000_000_000_000_000u128 + u128::from(seq)).to_string();
        let pb = PostBucket::for_like(post, user).to_string();
        StreamRecord::likes(name, &pb, user.as_ref(), &seq).to_json()
    }

    #[test]
    fn groups_by_key_in_stream_order_and_first_appearance() {
        let (p, q) = (PostId::new_random(), PostId::new_random());
        let u = UserId::new_random();
        let records = vec![
            rec("INSERT", &p, &u, 1),
            rec("INSERT", &q, &u, 2),
            rec("MODIFY", &p, &u, 3),
            rec("REMOVE", &p, &u, 4),
            rec("INSERT", &p, &u, 5),
        ];
        let event: Event = serde_json::from_value(batch(records)).unwrap();
        let parsed = parse(&event);
        assert_eq!(parsed.ignored, 1);
        assert_eq!(parsed.skipped, 0);
        assert_eq!(parsed.records(), 4);
        assert_eq!(parsed.groups.len(), 2);
        assert_eq!(parsed.groups[0].row, PostBucket::for_like(&p, &u));
        assert_eq!(parsed.groups[1].row, PostBucket::for_like(&q, &u));
        let p_changes: Vec<(String, i64)> = parsed.groups[0]
            .changes
            .iter()
            .map(|c| (c.seq.raw().to_owned(), c.delta))
            .collect();
        assert_eq!(
            p_changes,
            vec![
                ("100000000000000000001".to_owned(), 1),
                ("100000000000000000004".to_owned(), -1),
                ("100000000000000000005".to_owned(), 1),
            ]
        );
    }

    #[test]
    fn an_empty_or_foreign_batch_yields_nothing() {
        let event: Event = serde_json::from_value(batch(vec![])).unwrap();
        assert_eq!(parse(&event), Parsed::default());
        let mut bad = rec("INSERT", &PostId::new_random(), &UserId::new_random(), 1);
        bad["dynamodb"]["SequenceNumber"] = "12x".into();
        let event: Event = serde_json::from_value(batch(vec![bad])).unwrap();
        let parsed = parse(&event);
        assert_eq!((parsed.skipped, parsed.groups.len()), (1, 0));
        // A request marker in the post's bucket is control, not a like.
        let marker = StreamRecord::likes("INSERT", "p#3", "~op#u#k-1", "100000000000000000009");
        let event: Event = serde_json::from_value(batch(vec![marker.to_json()])).unwrap();
        let parsed = parse(&event);
        assert_eq!((parsed.ignored, parsed.groups.len()), (1, 0));
    }
}
