//! The batch's records as the events function acts on them. Pure: no I/O.
//!
//! The INSERT and REMOVE records of likes and reactions are kept in batch order (one shard's,
//! so stream order), and indexed by (user, post, kind) and, likes only, by post. A reaction's
//! record is a like's but for its sort key, `{user}#{kind}` (`likes_core::reaction`). Control
//! items (`~…`) are neither; records that can never be read (`likes_core::stream_record`, the
//! aggregator's reading too, and a reaction key naming the like) are logged and skipped
//! (invariant 7).

use std::collections::HashMap;

use likes_core::reaction::Held;
use likes_core::store::events::Pair;
use likes_core::stream_event::{StreamEvent, StreamRecord};
use likes_core::stream_record::{log_skip, read, Unreadable};
use likes_core::{Kind, PostId, Seq, UserId};

/// One like's or unlike's record, or a reaction's or its removal's.
#[derive(Debug, Clone, PartialEq)]
pub struct Rec<'a> {
    pub seq: Seq<'a>,
    /// INSERT (a like, a reaction) or REMOVE (an unlike, a reaction's removal).
    pub insert: bool,
    /// When the record was created (stream time), epoch milliseconds (0 if it did not say).
    pub created_ms: i64,
    pub post: PostId,
    pub user: UserId,
    /// `like` for a like.
    pub kind: Kind,
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
        Pair::new(self.post.clone(), self.user.clone(), self.kind.clone())
    }
}

#[derive(Debug, Default)]
pub struct Parsed<'a> {
    /// In batch order.
    pub records: Vec<Rec<'a>>,
    /// Each (user, post, kind)'s records (indexes into `records`), in order, in order of
    /// appearance.
    pub pairs: Vec<(Pair, Vec<usize>)>,
    /// Each post with likes in the batch, and its likes' records' indexes, in order: milestones
    /// are the like count's (reactions neither announce one nor wait for the count).
    pub posts: Vec<(PostId, Vec<usize>)>,
    /// MODIFY records and control items' records: neither likes nor reactions.
    pub ignored: usize,
    /// Records that can never be read (invariant 7).
    pub skipped: usize,
    /// Records delivered twice within the batch: acted on once.
    pub repeated: usize,
}

fn skip(out: &mut Parsed<'_>, record: &StreamRecord<'_>, why: Unreadable) {
    out.skipped += 1;
    log_skip(record, &why);
}

/// The kind a record's key names, and its user part (`None`: a control item).
fn held(held: Held<'_>) -> Result<Option<(&str, Kind)>, Unreadable> {
    match held {
        Held::Control => Ok(None),
        Held::Like(user) => Ok(Some((user, Kind::like()))),
        // Not written by us (`Held::Foreign`: a reaction key naming the like, or an unknown
        // kind): skipped, as the aggregator skips it.
        Held::Foreign => Err(Unreadable::BadKind),
        Held::Reaction(user, kind) => Kind::parse(kind)
            .map(|kind| Some((user, kind)))
            .map_err(|_| Unreadable::BadKind),
    }
}

/// Reads the batch's records of likes and reactions, added and removed.
pub fn parse<'a>(event: &'a StreamEvent<'a>) -> Parsed<'a> {
    let mut out = Parsed::default();
    let mut pairs: HashMap<Pair, usize> = HashMap::new();
    let mut posts: HashMap<PostId, usize> = HashMap::new();
    for record in &event.records {
        let change = match read(record) {
            Ok(Some(change)) => change,
            Ok(None) => {
                out.ignored += 1;
                continue;
            }
            Err(why) => {
                skip(&mut out, record, why);
                continue;
            }
        };
        let (user_raw, kind) = match held(change.held) {
            Ok(Some(held)) => held,
            Ok(None) => {
                out.ignored += 1;
                continue;
            }
            Err(why) => {
                skip(&mut out, record, why);
                continue;
            }
        };
        let parsed = change.post_and_bucket().and_then(|(post, bucket)| {
            let ids = PostId::parse(post).ok().zip(UserId::parse(user_raw).ok());
            let (post, user) = ids.ok_or(Unreadable::Other("a key is not a like's"))?;
            Ok((post, bucket, user))
        });
        let (post, bucket, user) = match parsed {
            Ok(ids) => ids,
            Err(why) => {
                skip(&mut out, record, why);
                continue;
            }
        };
        let seq = change.seq;
        let is_like = kind.is_like();
        let pair = Pair::new(post.clone(), user.clone(), kind.clone());
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
        if is_like {
            let p = *posts.entry(post.clone()).or_insert_with(|| {
                out.posts.push((post.clone(), Vec::new()));
                out.posts.len() - 1
            });
            out.posts[p].1.push(index);
        }
        out.records.push(Rec {
            seq,
            insert: change.insert,
            created_ms: change.created.map(|t| (t * 1000.0) as i64).unwrap_or(0),
            post,
            user,
            kind,
            bucket,
            post_bucket: change.post_bucket,
            stream: record.stream_label(),
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use likes_sim::stream::{batch, StreamRecord as Sim};

    const USER: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

    fn text(records: &[(&str, &str, u32)]) -> String {
        let records = records
            .iter()
            .map(|(name, sk, n)| {
                let seq = (100_000_000_000_000_000_000u128 + u128::from(*n)).to_string();
                Sim::likes(name, "p#3", sk, &seq).to_json()
            })
            .collect();
        batch(records).to_string()
    }

    /// A reaction's records are read with their kind, each kind its own pair; only likes are
    /// indexed by post (milestones are the like count's).
    #[test]
    fn reactions_are_read_with_their_kind_each_its_own_pair() {
        let love = format!("{USER}#love");
        let t = text(&[
            ("INSERT", USER, 1),
            ("INSERT", &love, 2),
            ("REMOVE", &love, 3),
            ("INSERT", "~fence#j#begin", 4),
        ]);
        let event: StreamEvent<'_> = sonic_rs::from_str(&t).unwrap();
        let p = parse(&event);
        let kinds: Vec<(&str, bool)> = p
            .records
            .iter()
            .map(|r| (r.kind.as_str(), r.insert))
            .collect();
        assert_eq!(kinds, [("like", true), ("love", true), ("love", false)]);
        assert!(p.records.iter().all(|r| r.user.as_str() == USER));
        let pairs: Vec<(&str, &[usize])> = p
            .pairs
            .iter()
            .map(|(pair, idxs)| (pair.kind.as_str(), idxs.as_slice()))
            .collect();
        assert_eq!(pairs, [("like", &[0][..]), ("love", &[1, 2][..])]);
        assert_eq!(p.posts.len(), 1);
        assert_eq!(p.posts[0].1, [0]);
        assert_eq!((p.ignored, p.skipped), (1, 0));
    }

    /// A reaction key whose kind is outside the grammar, or names the like, can never be read:
    /// skipped (invariant 7), never a panic.
    #[test]
    fn a_kind_outside_the_grammar_is_skipped() {
        let keys = [
            format!("{USER}#Love"),
            format!("{USER}#"),
            format!("{USER}#like"),
            format!("{USER}#a#b"),
            format!("{USER}#{}", "x".repeat(33)),
            format!("{USER}#ü"),
        ];
        let records: Vec<_> = keys
            .iter()
            .enumerate()
            .map(|(i, k)| ("INSERT", k.as_str(), i as u32))
            .collect();
        let t = text(&records);
        let event: StreamEvent<'_> = sonic_rs::from_str(&t).unwrap();
        let p = parse(&event);
        assert_eq!((p.records.len(), p.skipped, p.ignored), (0, keys.len(), 0));
    }
}
