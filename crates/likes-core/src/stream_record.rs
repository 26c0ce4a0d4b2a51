//! One Likes stream record, read: the one decoding both stream readers (the count aggregator
//! and the events function) start from. Pure: no I/O but the log line of a skipped record.
//!
//! A record is read when it is an INSERT or a REMOVE, has its change, a sequence number, a
//! `post_bucket` key and a sort key naming a like, a reaction of a kind inside the grammar, or a
//! recount's fence being written (`crate::control`); other records of control items are
//! nothing to read, whatever else they hold. What each reader does with a record (fences,
//! pairs, posts) is its own; what can never be read is the same for both, and both log and skip
//! it (invariant 7 of each: a record that can never apply must not block its shard).

use crate::bucket::split_key;
use crate::control::{parse_fence, Fence};
use crate::reaction::Held;
use crate::seq::{BadSeqNo, Seq};
use crate::stream_event::StreamRecord;

/// A like's, a reaction's or a control item's INSERT or REMOVE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Change<'a> {
    /// INSERT (a like, a reaction, a control item written); REMOVE otherwise.
    pub insert: bool,
    pub seq: Seq<'a>,
    /// When the record was created (stream time), epoch seconds, if it said.
    pub created: Option<f64>,
    /// The Likes partition key as received (`<post>#<bucket>`), not yet split: the aggregator
    /// splits it once per key, the events function once per record.
    pub post_bucket: &'a str,
    /// The item's sort key (`{user}`, `{user}#{kind}` or `~…`).
    pub sort_key: &'a str,
    /// What the sort key names; a reaction's kind is inside the grammar.
    pub held: Held<'a>,
    /// A recount's fence being written (the only control item read).
    pub fence: Option<Fence<'a>>,
}

impl<'a> Change<'a> {
    /// The post and bucket of `post_bucket`.
    pub fn post_and_bucket(&self) -> Result<(&'a str, u8), Unreadable> {
        split_key(self.post_bucket).map_err(|_| Unreadable::bad_key(self.post_bucket))
    }
}

/// Why a record can never be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("no dynamodb field")]
    NoChange,
    #[error("no SequenceNumber")]
    NoSequence,
    #[error("{0}")]
    BadSequence(#[from] BadSeqNo),
    #[error("key post_bucket is missing or not a string")]
    NoKey,
    #[error("key post_bucket {0:?} is not \"<post_id>#<0..15>\"")]
    BadKey(String),
    #[error("key user_id names a reaction of a kind outside the grammar")]
    BadKind,
    /// A key the reader cannot use for its own reason (a post or user id outside the grammar).
    #[error("{0}")]
    Other(&'static str),
}

impl Unreadable {
    fn bad_key(key: &str) -> Self {
        Unreadable::BadKey(key.chars().take(100).collect())
    }
}

/// Reads one record: `Ok(None)` for one that is neither an INSERT nor a REMOVE (a MODIFY), and
/// for a control item's record other than a fence's INSERT.
pub fn read<'a>(record: &'a StreamRecord<'a>) -> Result<Option<Change<'a>>, Unreadable> {
    let insert = match record.event_name.as_deref() {
        Some("INSERT") => true,
        Some("REMOVE") => false,
        _ => return Ok(None),
    };
    let change = record.change.as_ref().ok_or(Unreadable::NoChange)?;
    let sort_key = change
        .keys
        .user_id
        .as_ref()
        .and_then(|a| a.s.as_deref())
        .unwrap_or("");
    let held = Held::of(sort_key);
    let mut fence = None;
    match held {
        Held::Foreign => return Err(Unreadable::BadKind),
        Held::Control => match parse_fence(sort_key) {
            Some(f) if insert => fence = Some(f),
            _ => return Ok(None),
        },
        Held::Like(_) | Held::Reaction(..) => {}
    }
    let raw_seq = change
        .sequence_number
        .as_deref()
        .ok_or(Unreadable::NoSequence)?;
    let seq = Seq::parse(raw_seq)?;
    let post_bucket = change
        .keys
        .post_bucket
        .as_ref()
        .and_then(|a| a.s.as_deref())
        .ok_or(Unreadable::NoKey)?;
    Ok(Some(Change {
        insert,
        seq,
        created: change.created,
        post_bucket,
        sort_key,
        held,
        fence,
    }))
}

/// The one log line of a skipped record: which record, and why.
pub fn log_skip(record: &StreamRecord<'_>, why: &Unreadable) {
    let seq = record
        .change
        .as_ref()
        .and_then(|c| c.sequence_number.as_deref())
        .unwrap_or("<none>");
    tracing::error!(
        sequence_number = seq,
        event_id = record.event_id.as_deref().unwrap_or("<none>"),
        %why,
        "skipping a stream record that can never be read"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stream_event::StreamEvent;

    fn event(records: &str) -> String {
        format!("{{\"Records\": [{records}]}}")
    }

    fn record(name: &str, seq: Option<&str>, pk: Option<&str>, sk: &str) -> String {
        let mut keys = format!("\"user_id\": {{\"S\": \"{sk}\"}}");
        if let Some(pk) = pk {
            keys += &format!(", \"post_bucket\": {{\"S\": \"{pk}\"}}");
        }
        let seq = seq.map_or(String::new(), |s| format!(", \"SequenceNumber\": \"{s}\""));
        format!("{{\"eventName\": \"{name}\", \"dynamodb\": {{\"Keys\": {{{keys}}}{seq}}}}}")
    }

    /// What `read` makes of the one record of `text`: (insert, post_bucket, held) or why not.
    fn read_one(text: &str) -> Result<Option<(bool, String, String)>, Unreadable> {
        let ev: StreamEvent<'_> = serde_json::from_str(text).unwrap();
        let r = read(&ev.records[0])?;
        Ok(r.map(|c| (c.insert, c.post_bucket.to_owned(), format!("{:?}", c.held))))
    }

    /// Likes, reactions and control items are read with what their key names; a MODIFY is
    /// nothing to read; each defect is named.
    #[test]
    fn reads_what_each_key_names_and_names_each_defect() {
        let seq = Some("100000000000000000001");
        let ok = |name, sk| read_one(&event(&record(name, seq, Some("p#3"), sk)));
        let held = |h: Held<'_>| format!("{h:?}");
        assert_eq!(
            ok("INSERT", "u"),
            Ok(Some((true, "p#3".into(), held(Held::Like("u")))))
        );
        assert_eq!(
            ok("REMOVE", "u#love"),
            Ok(Some((
                false,
                "p#3".into(),
                held(Held::Reaction("u", "love"))
            )))
        );
        assert_eq!(
            ok("INSERT", "~fence#j#begin"),
            Ok(Some((true, "p#3".into(), held(Held::Control))))
        );
        assert_eq!(ok("MODIFY", "u"), Ok(None));
        // Other control items' records are nothing to read, even without a sequence number.
        assert_eq!(ok("REMOVE", "~fence#j#begin"), Ok(None));
        assert_eq!(
            read_one(&event(&record("INSERT", None, Some("p#3"), "~op#u#k-1"))),
            Ok(None)
        );
        assert_eq!(ok("INSERT", "u#Love"), Err(Unreadable::BadKind));
        assert_eq!(
            read_one(&event(&record("INSERT", None, Some("p#3"), "u"))),
            Err(Unreadable::NoSequence)
        );
        assert_eq!(
            read_one(&event(&record("INSERT", seq, None, "u"))),
            Err(Unreadable::NoKey)
        );
        assert!(matches!(
            read_one(&event(&record("INSERT", Some("x"), Some("p#3"), "u"))),
            Err(Unreadable::BadSequence(_))
        ));
        assert_eq!(
            read_one(&event("{\"eventName\": \"INSERT\"}")),
            Err(Unreadable::NoChange)
        );
    }

    #[test]
    fn a_key_that_is_not_a_likes_partition_key_is_named() {
        let text = event(&record(
            "INSERT",
            Some("100000000000000000001"),
            Some("p#99"),
            "u",
        ));
        let ev: StreamEvent<'_> = serde_json::from_str(&text).unwrap();
        let change = read(&ev.records[0]).unwrap().unwrap();
        assert_eq!(
            change.post_and_bucket(),
            Err(Unreadable::BadKey("p#99".into()))
        );
    }
}
