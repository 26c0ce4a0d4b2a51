//! The batch's records as the events function acts on them. Pure: no I/O.
//!
//! Likes' INSERT and REMOVE records are kept in batch order (one shard's, so stream order),
//! and indexed by (user, post) and by post. Control items (`~…`) are not likes; records that
//! can never be read (no sequence number, a malformed key) are logged and skipped
//! (invariant 7).

use std::collections::HashMap;

use likes_core::bucket::split_key;
use likes_core::control::is_control;
use likes_core::reaction::is_reaction_key;
use likes_core::store::events::Pair;
use likes_core::stream_event::{StreamEvent, StreamRecord, StringAttr};
use likes_core::{PostId, Seq, UserId};

/// One like's or unlike's record.
#[derive(Debug, Clone, PartialEq)]
pub struct Rec<'a> {
    pub seq: Seq<'a>,
    /// INSERT (a like) or REMOVE (an unlike).
    pub insert: bool,
    /// When the record was created (stream time), epoch milliseconds (0 if it did not say).
    pub created_ms: i64,
    pub post: PostId,
    pub user: UserId,
    pub bucket: u8,
    /// The Likes partition key as received (`<post>#<bucket>`).
    pub post_bucket: &'a str,
    /// The stream's label (see `ids`).
    pub stream: &'a str,
}

impl Rec<'_> {
    pub fn created_secs(&self) -> i64 {
        self.created_ms.div_euclid(1000)
    }

    pub fn pair(&self) -> Pair {
        (self.post.clone(), self.user.clone())
    }
}

#[derive(Debug, Default)]
pub struct Parsed<'a> {
    /// In batch order.
    pub records: Vec<Rec<'a>>,
    /// Each pair's records (indexes into `records`), in order, pairs in order of appearance.
    pub pairs: Vec<(Pair, Vec<usize>)>,
    /// Each post in the batch, and its records' indexes, in order.
    pub posts: Vec<(PostId, Vec<usize>)>,
    /// MODIFY records and control items' records: not likes.
    pub ignored: usize,
    /// Records that can never be read (invariant 7).
    pub skipped: usize,
    /// Records delivered twice within the batch: acted on once.
    pub repeated: usize,
}

fn skip(out: &mut Parsed<'_>, record: &StreamRecord<'_>, why: &str) {
    out.skipped += 1;
    let seq = record
        .change
        .as_ref()
        .and_then(|c| c.sequence_number.as_deref())
        .unwrap_or("<none>");
    tracing::error!(
        sequence_number = seq,
        why,
        "skipping a stream record that can never be read"
    );
}

fn key<'a>(attr: Option<&'a StringAttr<'a>>) -> Option<&'a str> {
    attr.and_then(|a| a.s.as_deref())
}

/// Reads the batch's like and unlike records.
pub fn parse<'a>(event: &'a StreamEvent<'a>) -> Parsed<'a> {
    let mut out = Parsed::default();
    let mut pairs: HashMap<Pair, usize> = HashMap::new();
    let mut posts: HashMap<PostId, usize> = HashMap::new();
    for record in &event.records {
        let insert = match record.event_name.as_deref() {
            Some("INSERT") => true,
            Some("REMOVE") => false,
            _ => {
                out.ignored += 1;
                continue;
            }
        };
        let Some(change) = record.change.as_ref() else {
            skip(&mut out, record, "no dynamodb field");
            continue;
        };
        let user_raw = key(change.keys.user_id.as_ref()).unwrap_or("");
        // Reactions other than the like announce nothing yet (docs/reactions.md).
        if is_control(user_raw) || is_reaction_key(user_raw) {
            out.ignored += 1;
            continue;
        }
        let Some(seq) = change
            .sequence_number
            .as_deref()
            .and_then(|s| Seq::parse(s).ok())
        else {
            skip(&mut out, record, "no valid SequenceNumber");
            continue;
        };
        let Some(post_bucket) = key(change.keys.post_bucket.as_ref()) else {
            skip(&mut out, record, "no post_bucket key");
            continue;
        };
        let parsed = split_key(post_bucket).ok().and_then(|(post, bucket)| {
            Some((
                PostId::parse(post).ok()?,
                bucket,
                UserId::parse(user_raw).ok()?,
            ))
        });
        let Some((post, bucket, user)) = parsed else {
            skip(&mut out, record, "a key is not a like's");
            continue;
        };
        let pair = (post.clone(), user.clone());
        let slot = *pairs.entry(pair.clone()).or_insert_with(|| {
            out.pairs.push((pair, Vec::new()));
            out.pairs.len() - 1
        });
        let last = out.pairs[slot].1.last().map(|&i| out.records[i].seq);
        if last.is_some_and(|l| l >= seq) {
            out.repeated += 1;
            continue;
        }
        let index = out.records.len();
        out.pairs[slot].1.push(index);
        let p = *posts.entry(post.clone()).or_insert_with(|| {
            out.posts.push((post.clone(), Vec::new()));
            out.posts.len() - 1
        });
        out.posts[p].1.push(index);
        out.records.push(Rec {
            seq,
            insert,
            created_ms: change.created.map(|t| (t * 1000.0) as i64).unwrap_or(0),
            post,
            user,
            bucket,
            post_bucket,
            stream: record.stream_label(),
        });
    }
    out
}
