//! Grouping a decoded stream batch. Pure: no I/O.
//!
//! Records are grouped by source partition key (invariant 1), and the keys' groups by post: a
//! post's buckets are written with one update. A recount's fences (`likes_core::control`) are
//! kept in their place among the changes; other control items are not likes.

use std::collections::HashMap;

use likes_core::control::Fence;
use likes_core::reaction::Held;
use likes_core::stream_record::{self, log_skip, read, Unreadable};
use likes_core::{PostId, Seq};

use crate::decode::StreamEvent;

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
        let change = match read(record) {
            Ok(Some(change)) => change,
            Ok(None) => {
                out.ignored += 1;
                continue;
            }
            Err(why) => {
                out.skipped += 1;
                log_skip(record, &why);
                continue;
            }
        };
        // Control items are not likes. Of them, only a fence's INSERT is read.
        let (user, kind, fence) = match (change.held, change.fence) {
            (Held::Like(user), _) => (user, None, None),
            (Held::Reaction(user, kind), _) => (user, Some(kind), None),
            (Held::Control, Some(f)) => (change.sort_key, None, Some(f)),
            (Held::Control, None) => {
                out.ignored += 1;
                continue;
            }
            // `stream_record::read` refuses these already (invariant 7); skipped all the same.
            (Held::Foreign, _) => {
                out.skipped += 1;
                continue;
            }
        };
        let key = change.post_bucket;
        let (p, g) = match groups.get(key) {
            Some(&at) => at,
            None => match first_of_group(&mut out, &mut posts, &change) {
                Ok(at) => {
                    groups.insert(key, at);
                    at
                }
                Err(why) => {
                    out.skipped += 1;
                    log_skip(record, &why);
                    continue;
                }
            },
        };
        let changes = &mut out.posts[p].buckets[g].changes;
        if changes.last().is_some_and(|last| last.seq >= change.seq) {
            out.repeated += 1;
            continue;
        }
        changes.push(Change {
            seq: change.seq,
            delta: match (fence.is_some(), change.insert) {
                (true, _) => 0,
                (false, true) => 1,
                (false, false) => -1,
            },
            created: change.created.map(|t| t as i64).unwrap_or(0),
            user,
            kind,
            sort_key: change.sort_key,
            fence,
        });
    }
    out
}

/// Opens the group of a key not seen before in the batch (and its post's, if new): where its
/// changes go, or why the key is not a Likes partition key.
fn first_of_group<'a>(
    out: &mut Parsed<'a>,
    posts: &mut HashMap<&'a str, usize>,
    change: &stream_record::Change<'a>,
) -> Result<(usize, usize), Unreadable> {
    let (post_str, bucket) = change.post_and_bucket()?;
    let p = match posts.get(post_str) {
        Some(&p) => p,
        None => {
            let post = PostId::parse(post_str)
                .map_err(|_| Unreadable::BadKey(change.post_bucket.chars().take(100).collect()))?;
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
    Ok((p, out.posts[p].buckets.len() - 1))
}

#[cfg(test)]
mod tests;
