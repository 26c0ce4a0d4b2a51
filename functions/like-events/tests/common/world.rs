//! A small world of posts and users, and the Likes stream's records of a like/unlike history
//! in it: what the in-memory tests deliver to the events function.

use std::collections::BTreeSet;

use likes_core::store::memory::MemoryCounts;
use likes_core::{bucket_of, BucketWrite, CountsLedger, PostBucket, PostId, Seq, UserId};
use likes_sim::stream::StreamRecord;
use serde_json::Value;

#[derive(Debug, Clone)]
pub struct Rec {
    pub insert: bool,
    pub post: usize,
    pub user: usize,
    pub seq: String,
    pub t: i64,
}

/// Turns (user, post, like?, pause) operations into the records the Likes table's stream has.
pub fn records(ops: &[(usize, usize, bool, i64)]) -> Vec<Rec> {
    let mut liked = BTreeSet::new();
    let mut t = 1_764_000_000;
    let mut seq = 100_000_000_000_000_000_000u128;
    let mut out = Vec::new();
    for &(user, post, like, pause) in ops {
        t += pause;
        let changed = if like {
            liked.insert((user, post))
        } else {
            liked.remove(&(user, post))
        };
        if changed {
            seq += 1 + seq % 5;
            out.push(Rec {
                insert: like,
                post,
                user,
                seq: seq.to_string(),
                t,
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
        StreamRecord::likes(name, &row.to_string(), self.users[r.user].as_str(), &r.seq)
            .created(r.t as f64)
            .to_json()
    }
}

/// The aggregator, ahead: counts the records before the events function reads them.
pub async fn count_ahead(counts: &MemoryCounts, w: &World, recs: &[Rec]) {
    for r in recs {
        let seq = Seq::parse(&r.seq).expect("seq");
        let write = BucketWrite {
            kinds: Vec::new(),
            bucket: bucket_of(&w.users[r.user]),
            delta: if r.insert { 1 } else { -1 },
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
