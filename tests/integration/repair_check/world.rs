//! One world of the model check: the in-memory tables, one post's stream shard, and four actors
//! running the production code, stepped by `likes_harness::stepped`.
//!
//! - a writer: a few likes and unlikes, each an item written and its stream record appended
//!   in one step (DynamoDB Streams records a change with its write);
//! - the aggregator (`count_aggregator::Aggregator::process`) fed by a model of Lambda's event
//!   source mapping: in-order batches of at most two records from a checkpoint, and at one
//!   invocation of the checker's choosing a fault — the function failing after its first write
//!   (Lambda bisects and retries from the same record) or the batch delivered again after it
//!   succeeded (a duplicate delivery);
//! - two recount jobs (`likes_admin::recount::{fence_bucket, finish_bucket}`): the first takes
//!   the free lease and recounts both buckets; the second takes the lease over whenever it
//!   runs (as `lease::acquire` does once a holder stopped renewing: the first job suspended past
//!   its term), recounts one bucket, and the first job may resume late at any step.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::{Hash, Hasher};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use likes_admin::recount::BucketRecount;
use likes_core::control::Phase;
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{
    bucket_of, BucketWrite, CountsLedger, LikesAdmin, LikesStore, PostBucket, PostId, Seq, UserId,
    WriteToken,
};
use likes_harness::stepped::{now, Actor, Actors, Scheduler};
use likes_harness::stream::Rec;

use super::actors;

pub const WRITER: usize = 0;
pub const AGGREGATOR: usize = 1;
pub const JOBS: [(usize, &str); 2] = [(2, "job1"), (3, "job2")];
/// The mapping's batch size.
pub const BATCH: usize = 2;
/// The bucket the history drifts in: its count starts one above its likes.
pub const DRIFT: i64 = 1;

/// A job's end on one bucket: the job, the bucket, how it ended, whether it held the lease then.
pub type Ending = (String, u8, JobEnd, bool);

/// What a job ended with, per bucket it recounted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JobEnd {
    Recounted(BucketRecount),
    Failed(String),
}

/// The shared parts of a world: what the actors write and what the checks read.
#[derive(Clone)]
pub struct Tables {
    pub post: PostId,
    /// Bucket A (two users, drifted) and bucket B (one user, one like from before).
    pub buckets: [u8; 2],
    pub users: [UserId; 3],
    pub likes: Arc<MemoryLikes>,
    pub counts: MemoryCounts,
    pub log: Arc<Mutex<Vec<Rec>>>,
    /// The mapping's checkpoint: the records before it are done with.
    pub checkpoint: Arc<AtomicUsize>,
    /// Each job's result per bucket: (job, bucket, ended).
    pub ended: Arc<Mutex<Vec<Ending>>>,
    /// The aggregator's anomalies and marks found ahead, summed over invocations.
    pub anomalies: Arc<AtomicUsize>,
}

pub fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Tables {
    pub fn append(&self, mut rec: Rec) {
        let mut log = lock(&self.log);
        rec.seq = (100_000_000_000_000_000_000u128 + 10 * (log.len() as u128 + 1)).to_string();
        log.push(rec);
    }

    /// Users holding a like in `bucket` before `end` records of the stream: the initial like
    /// and the changes.
    pub fn truth_before(&self, bucket: u8, end: usize) -> i64 {
        let log = lock(&self.log);
        let mut held: BTreeSet<&UserId> = BTreeSet::new();
        if bucket == self.buckets[1] {
            held.insert(&self.users[2]);
        }
        for r in log[..end].iter().filter(|r| r.control.is_none()) {
            if bucket_of(&r.user) == bucket {
                if r.insert {
                    held.insert(&r.user);
                } else {
                    held.remove(&r.user);
                }
            }
        }
        held.len() as i64
    }

    /// Where `job`'s end fence in `bucket` sits in the stream.
    pub fn end_fence_at(&self, job: &str, bucket: u8) -> Option<usize> {
        let key = likes_core::control::fence_key(job, Phase::End);
        lock(&self.log)
            .iter()
            .position(|r| r.control.as_ref() == Some(&(bucket, key.clone())))
    }

    /// Everything the tables hold that the protocol reads: the fingerprint's part.
    pub fn snapshot(&self, h: &mut impl Hasher) {
        let mut item = self.counts.read_post_now(&self.post).unwrap_or_default();
        item.updated_at = None;
        format!("{item:?}").hash(h);
        self.likes.pairs().hash(h);
        for b in self.buckets {
            let pb = self.row(b);
            let mut controls = now(self.likes.recount_items(&pb)).unwrap_or_default();
            controls.sort();
            controls.hash(h);
            for (_, job) in JOBS {
                let w = self.counts.window_now(&pb, job);
                let last: BTreeMap<_, _> = w.last.into_iter().collect();
                (last, w.entries).hash(h);
            }
        }
        // The stream in order: the aggregator, and the truth, read it so.
        for r in lock(&self.log).iter() {
            (r.insert, r.user.to_string(), &r.control, &r.kind).hash(h);
        }
        self.anomalies.load(Ordering::SeqCst).hash(h);
        self.checkpoint.load(Ordering::SeqCst).hash(h);
    }

    /// The window entries recorded, every job's.
    pub fn window_entries(&self) -> u64 {
        let rows = self.buckets.map(|b| self.row(b));
        rows.iter()
            .flat_map(|pb| JOBS.map(|(_, job)| self.counts.window_now(pb, job).entries))
            .sum()
    }

    pub fn log_len(&self) -> usize {
        lock(&self.log).len()
    }

    /// The control items of `job` left in `bucket`.
    pub fn controls_of(&self, job: &str, bucket: u8) -> Vec<String> {
        let items = now(self.likes.recount_items(&self.row(bucket))).unwrap_or_default();
        let own = [format!("~fence#{job}#"), format!("~w#{job}#")];
        items
            .into_iter()
            .filter(|k| own.iter().any(|p| k.starts_with(p.as_str())))
            .collect()
    }

    pub fn row(&self, bucket: u8) -> PostBucket {
        PostBucket {
            post: self.post.clone(),
            bucket,
        }
    }
}

/// What the jobs ended with so far.
pub fn lock_ended(t: &Tables) -> Vec<Ending> {
    lock(&t.ended).clone()
}

/// Three users: two in one bucket, one in another.
fn users() -> ([UserId; 3], [u8; 2]) {
    let ids = (0..).map(|n| UserId::parse(&format!("user-{n}")).expect("an id"));
    let mut a: Vec<UserId> = Vec::new();
    let mut b: Option<UserId> = None;
    for u in ids {
        match a.first().map(bucket_of) {
            None => a.push(u),
            Some(x) if bucket_of(&u) == x && a.len() < 2 => a.push(u),
            Some(x) if bucket_of(&u) != x && b.is_none() => b = Some(u),
            _ => {}
        }
        if a.len() == 2 {
            if let Some(b) = b.take() {
                let buckets = [bucket_of(&a[0]), bucket_of(&b)];
                return ([a[0].clone(), a[1].clone(), b], buckets);
            }
        }
    }
    unreachable!("ids are endless")
}

/// What a world holds and does.
#[derive(Debug, Clone, Copy)]
pub struct Scope {
    /// The writer's history: (user, like or unlike). Users 0 and 1 are in bucket A (drifted),
    /// user 2 in bucket B, where they like from before the history.
    pub changes: &'static [(usize, bool)],
    /// The buckets (0: A, 1: B) each job recounts; the second job takes the lease over.
    pub jobs: &'static [&'static [usize]],
    /// Delivery faults in a run.
    pub faults: usize,
}

/// A new world at its start: the tables loaded, every actor at its first gate.
pub fn world(scope: &Scope) -> (Tables, Actors) {
    let (users, buckets) = users();
    let likes = Arc::new(MemoryLikes::default());
    let counts = MemoryCounts::recording_into(&likes);
    let t = Tables {
        post: PostId::parse("post").expect("an id"),
        buckets,
        users,
        likes,
        counts,
        log: Arc::default(),
        checkpoint: Arc::default(),
        ended: Arc::default(),
        anomalies: Arc::default(),
    };
    // Bucket B's like from before the history, counted; bucket A's count one too high.
    let old = now(t.likes.like(
        &t.post,
        &t.users[2],
        "2026-01-01T00:00:00Z",
        &WriteToken::random(),
    ));
    assert!(matches!(old, Ok(true)));
    let first = Seq::parse("1").expect("a seq");
    let write = |bucket, delta| BucketWrite {
        bucket,
        delta,
        kinds: Vec::new(),
        first,
        last: first,
        last_created: 0,
        window: None,
        records: 0,
    };
    let loaded = now(t
        .counts
        .apply(&t.post, &[write(buckets[0], DRIFT), write(buckets[1], 1)]));
    assert!(loaded.is_ok());
    let turns = Scheduler::default();
    let mut actors: Vec<Actor> = vec![
        Box::pin(actors::writer(t.clone(), turns.gate(WRITER), scope.changes)),
        Box::pin(actors::aggregator(
            t.clone(),
            turns.gate(AGGREGATOR),
            turns.clone(),
            scope.faults,
        )),
    ];
    for (i, recounts) in scope.jobs.iter().enumerate() {
        let (actor, name) = JOBS[i];
        let bs = recounts.iter().map(|&b| buckets[b]).collect();
        actors.push(Box::pin(actors::job(
            t.clone(),
            turns.gate(actor),
            name,
            bs,
            i > 0,
        )));
    }
    (t, Actors::new(turns, actors))
}

/// The fingerprint of a world: its tables and every actor's trace and whether it runs.
pub fn fingerprint(t: &Tables, a: &Actors) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    t.snapshot(&mut h);
    // What the monitors saw is part of the state: a broken state must not merge with a sound one.
    a.turns.findings().len().hash(&mut h);
    for actor in 0..2 + JOBS.len() {
        (
            a.turns.trace(actor),
            a.running().contains(&actor),
            a.turns.choosing(actor),
        )
            .hash(&mut h);
    }
    h.finish()
}
