//! A small world of posts and users, and the Likes stream's records of a like/unlike history
//! in it — reactions of other kinds included — : what the in-memory tests deliver to the events
//! function.

use std::collections::BTreeSet;

use likes_core::reaction::{sort_key, LIKE};
use likes_core::store::memory::MemoryCounts;
use likes_core::{bucket_of, BucketWrite, CountsLedger, Kind, PostBucket, PostId, Seq, UserId};
use likes_sim::stream::StreamRecord;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Rec {
    pub insert: bool,
    pub post: usize,
    pub user: usize,
    pub seq: String,
    pub t: i64,
    /// The kind (`like`, or a reaction's).
    pub kind: &'static str,
}

/// Turns (user, post, like?, pause) operations into the records the Likes table's stream has.
pub fn records(ops: &[(usize, usize, bool, i64)]) -> Vec<Rec> {
    let ops: Vec<_> = ops
        .iter()
        .map(|&(user, post, like, pause)| (user, post, LIKE, like, pause))
        .collect();
    records_of_kinds(&ops)
}

/// Turns (user, post, kind, add?, pause) operations into the records the Likes table's stream
/// has: a (user, post, kind) is one item, added once and removed once.
pub fn records_of_kinds(ops: &[(usize, usize, &'static str, bool, i64)]) -> Vec<Rec> {
    let mut held = BTreeSet::new();
    let mut t = 1_764_000_000;
    let mut seq = 100_000_000_000_000_000_000u128;
    let mut out = Vec::new();
    for &(user, post, kind, add, pause) in ops {
        t += pause;
        let changed = if add {
            held.insert((user, post, kind))
        } else {
            held.remove(&(user, post, kind))
        };
        if changed {
            seq += 1 + seq % 5;
            out.push(Rec {
                insert: add,
                post,
                user,
                seq: seq.to_string(),
                t,
                kind,
            });
        }
    }
    out
}

pub struct World {
    pub posts: Vec<PostId>,
    pub users: Vec<UserId>,
}

impl World {
    pub fn json(&self, r: &Rec) -> Value {
        let row = PostBucket::for_like(&self.posts[r.post], &self.users[r.user]);
        let name = if r.insert { "INSERT" } else { "REMOVE" };
        let kind = Kind::parse(r.kind).expect("a kind");
        let sk = sort_key(&self.users[r.user], &kind);
        StreamRecord::likes(name, &row.to_string(), &sk, &r.seq)
            .created(r.t as f64)
            .to_json()
    }
}

/// The aggregator, ahead: counts the records before the events function reads them (a
/// reaction in its kind's count, never in the like count).
pub async fn count_ahead(counts: &MemoryCounts, w: &World, recs: &[Rec]) {
    for r in recs {
        let seq = Seq::parse(&r.seq).expect("seq");
        let delta = if r.insert { 1 } else { -1 };
        let (delta, kinds) = match r.kind {
            LIKE => (delta, Vec::new()),
            kind => (0, vec![(kind, delta)]),
        };
        let write = BucketWrite {
            kinds,
            bucket: bucket_of(&w.users[r.user]),
            delta,
            first: seq,
            last: seq,
            last_created: r.t,
            window: None,
            records: 1,
        };
        counts
            .apply(&w.posts[r.post], &[write])
            .await
            .expect("counted");
    }
}
