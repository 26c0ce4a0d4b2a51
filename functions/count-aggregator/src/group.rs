//! Grouping a decoded stream batch. Pure: no I/O.
//!
//! Records are grouped by source partition key (invariant 1), and the keys' groups by post: a
//! post's buckets are written with one update. A recount's fences (`likes_core::control`) are
//! kept in their place among the changes; other control items are not likes.

use std::collections::HashMap;

use likes_core::bucket::split_key;
use likes_core::control::{parse_fence, Fence};
use likes_core::reaction::{is_kind, Held};
use likes_core::{PostId, Seq};

use crate::decode::{StreamEvent, StreamRecord};

/// One stream record the aggregator acts on, in its group's order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Change<'a> {
    pub seq: Seq<'a>,
    /// +1 for INSERT (a like), −1 for REMOVE (an unlike); 0 for a fence.
    pub delta: i64,
    /// When the record was created, epoch seconds (0 if the record did not say).
    pub created: i64,
    /// The liker (a recount's window records who changed).
    pub user: &'a str,
    /// The reaction's kind, for a reaction other than the like (`likes_core::reaction`):
    /// counted apart.
    pub kind: Option<&'a str>,
    /// The item's sort key (`{user}`, or `{user}#{kind}`): what a recount's window records.
    pub sort_key: &'a str,
    pub fence: Option<Fence<'a>>,
}

/// All of one `post_bucket`'s records in a batch, in stream order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketGroup<'a> {
    pub bucket: u8,
    pub changes: Vec<Change<'a>>,
}

/// A post's bucket groups, written together.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PostGroup<'a> {
    pub post: PostId,
    pub buckets: Vec<BucketGroup<'a>>,
}

impl PostGroup<'_> {
    pub fn records(&self) -> usize {
        self.buckets.iter().map(|b| b.changes.len()).sum()
    }

    /// Whether a recount's fence is among the records: the post then takes the careful path.
    pub fn has_fence(&self) -> bool {
        self.buckets
            .iter()
            .any(|b| b.changes.iter().any(|c| c.fence.is_some()))
    }
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Parsed<'a> {
    pub posts: Vec<PostGroup<'a>>,
    /// Records of other kinds (MODIFY), and records of control items (sort key starting with
    /// `~`: request markers, recount fences): nothing to count.
    pub ignored: usize,
    /// Records that can never be applied (no sequence number, missing or malformed key): logged
    /// and skipped so they cannot block the shard (invariant 7).
    pub skipped: usize,
    /// Records delivered twice within the batch (a sequence number not above the one before it
    /// in its group): counted once.
    pub repeated: usize,
}

impl Parsed<'_> {
    pub fn records(&self) -> usize {
        self.posts.iter().map(PostGroup::records).sum()
    }

    pub fn groups(&self) -> usize {
        self.posts.iter().map(|p| p.buckets.len()).sum()
    }
}

fn delta_of(event_name: Option<&str>) -> Option<i64> {
    match event_name {
        Some("INSERT") => Some(1),
        Some("REMOVE") => Some(-1),
        _ => None,
    }
}

#[derive(Debug, thiserror::Error)]
enum Unparsable {
    #[error("no dynamodb field")]
    NoChange,
    #[error("no SequenceNumber")]
    NoSequence,
    #[error("{0}")]
    BadSequence(#[from] likes_core::seq::BadSeqNo),
    #[error("key post_bucket is missing or not a string")]
    NoKey,
    #[error("key post_bucket {0:?} is not \"<post_id>#<0..15>\"")]
    BadKey(String),
    #[error("key user_id names a reaction of a kind outside the grammar")]
    BadKind,
}

fn skip(out: &mut Parsed<'_>, record: &StreamRecord<'_>, why: Unparsable) {
    out.skipped += 1;
    let seq = record
        .change
        .as_ref()
        .and_then(|c| c.sequence_number.as_deref())
        .unwrap_or("<none>");
    tracing::error!(
        sequence_number = seq,
        event_id = record.event_id.as_deref().unwrap_or("<none>"),
        %why,
        "skipping a stream record that can never be applied"
    );
}

/// Groups the batch's INSERT/REMOVE records by source partition key, keeping stream order
/// within each group (invariant 1), and the groups by post. Posts, and buckets within a post,
/// come out in order of first appearance. Records that can never apply are logged and skipped
/// (invariant 7).
pub fn parse<'a>(event: &'a StreamEvent<'a>) -> Parsed<'a> {
    let mut out = Parsed::default();
    // Keyed by the key as stored, borrowed from the event: a key is checked and a PostId built
    // once per group, not per record.
    let n = event.records.len();
    let mut groups: HashMap<&'a str, (usize, usize)> = HashMap::with_capacity(n);
    let mut posts: HashMap<&'a str, usize> = HashMap::with_capacity(n);
    out.posts.reserve(n);
    for record in &event.records {
        let Some(delta) = delta_of(record.event_name.as_deref()) else {
            out.ignored += 1;
            continue;
        };
        let Some(change) = record.change.as_ref() else {
            skip(&mut out, record, Unparsable::NoChange);
            continue;
        };
        let sort_key = change
            .keys
            .user_id
            .as_ref()
            .and_then(|a| a.s.as_deref())
            .unwrap_or("");
        // Control items are not likes. Of them, only a fence's INSERT is acted on.
        let (user, kind, fence) = match Held::of(sort_key) {
            Held::Like(user) => (user, None, None),
            Held::Reaction(user, kind) if is_kind(kind) => (user, Some(kind), None),
            Held::Reaction(..) => {
                skip(&mut out, record, Unparsable::BadKind);
                continue;
            }
            Held::Control => match (delta, parse_fence(sort_key)) {
                (1, Some(f)) => (sort_key, None, Some(f)),
                _ => {
                    out.ignored += 1;
                    continue;
                }
            },
        };
        let Some(raw_seq) = change.sequence_number.as_deref() else {
            skip(&mut out, record, Unparsable::NoSequence);
            continue;
        };
        let seq = match Seq::parse(raw_seq) {
            Ok(s) => s,
            Err(e) => {
                skip(&mut out, record, e.into());
                continue;
            }
        };
        let Some(key) = change
            .keys
            .post_bucket
            .as_ref()
            .and_then(|a| a.s.as_deref())
        else {
            skip(&mut out, record, Unparsable::NoKey);
            continue;
        };
        let (p, g) = match groups.get(key) {
            Some(&at) => at,
            None => match first_of_group(&mut out, &mut posts, key) {
                Some(at) => {
                    groups.insert(key, at);
                    at
                }
                None => {
                    let shown = key.chars().take(100).collect();
                    skip(&mut out, record, Unparsable::BadKey(shown));
                    continue;
                }
            },
        };
        let changes = &mut out.posts[p].buckets[g].changes;
        if changes.last().is_some_and(|last| last.seq >= seq) {
            out.repeated += 1;
            continue;
        }
        changes.push(Change {
            seq,
            delta: if fence.is_some() { 0 } else { delta },
            created: change.created.map(|t| t as i64).unwrap_or(0),
            user,
            kind,
            sort_key,
            fence,
        });
    }
    out
}

/// Opens the group of a key not seen before in the batch (and its post's, if new): where its
/// changes go, or `None` if the key is not a Likes partition key.
fn first_of_group<'a>(
    out: &mut Parsed<'a>,
    posts: &mut HashMap<&'a str, usize>,
    key: &'a str,
) -> Option<(usize, usize)> {
    let (post_str, bucket) = split_key(key).ok()?;
    let p = match posts.get(post_str) {
        Some(&p) => p,
        None => {
            let post = PostId::parse(post_str).ok()?;
            out.posts.push(PostGroup {
                post,
                buckets: Vec::new(),
            });
            posts.insert(post_str, out.posts.len() - 1);
            out.posts.len() - 1
        }
    };
    out.posts[p].buckets.push(BucketGroup {
        bucket,
        changes: Vec::new(),
    });
    Some((p, out.posts[p].buckets.len() - 1))
}

#[cfg(test)]
mod tests;
