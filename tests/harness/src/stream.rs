//! Stream-side helpers: like/unlike records as Lambda delivers them, histories turned into
//! records, and a simulator of the event source mapping (in-order batches, checkpoints,
//! bisects, duplicate deliveries) that drives the aggregator through the test kit's
//! fault-injecting store.

use std::collections::{HashMap, HashSet};

use aws_lambda_events::dynamodb::Event;
use count_aggregator::{Aggregator, BatchReport};
pub use likes_core::store::memory::MemoryCounts;
use likes_core::{bucket_of, CountsLedger, PostBucket, PostId, UserId};
pub use likes_sim::faulty_counts::{FaultPlan, FaultyCounts};
use likes_sim::stream::{batch, StreamRecord};

/// One stream record as the aggregator sees it (KEYS_ONLY).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub insert: bool,
    pub post: PostId,
    pub user: UserId,
    pub seq: String,
    /// A control item's record instead of a like's: its bucket and sort key (a recount fence).
    pub control: Option<(u8, String)>,
    /// A reaction's kind, for a reaction other than the like (sort key `{user}#{kind}`).
    pub kind: Option<String>,
}

impl Rec {
    pub fn new(insert: bool, post: &PostId, user: &UserId, seq: impl Into<String>) -> Self {
        Self {
            insert,
            post: post.clone(),
            user: user.clone(),
            seq: seq.into(),
            control: None,
            kind: None,
        }
    }

    /// A record of a reaction of `kind` (the like's own record for `like`).
    pub fn reaction(
        insert: bool,
        post: &PostId,
        user: &UserId,
        kind: &str,
        seq: impl Into<String>,
    ) -> Self {
        let mut r = Self::new(insert, post, user, seq);
        r.kind = (kind != likes_core::reaction::LIKE).then(|| kind.to_owned());
        r
    }

    /// The INSERT of a recount fence `~fence#<job>#<phase>` in bucket `bucket` of `post`.
    pub fn fence(
        post: &PostId,
        bucket: u8,
        job: &str,
        phase: &str,
        seq: impl Into<String>,
    ) -> Self {
        let mut r = Self::new(true, post, &UserId::parse("fence").expect("an id"), seq);
        r.control = Some((bucket, format!("~fence#{job}#{phase}")));
        r
    }

    pub fn row(&self) -> PostBucket {
        PostBucket {
            post: self.post.clone(),
            bucket: match &self.control {
                Some((b, _)) => *b,
                None => bucket_of(&self.user),
            },
        }
    }
}

/// The record as Lambda delivers it from a DynamoDB stream.
pub fn record_json(r: &Rec) -> serde_json::Value {
    let name = if r.insert { "INSERT" } else { "REMOVE" };
    let sort_key = match (&r.control, &r.kind) {
        (Some((_, sk)), _) => sk.clone(),
        (None, Some(kind)) => format!("{}#{kind}", r.user),
        (None, None) => r.user.to_string(),
    };
    StreamRecord::likes(name, &r.row().to_string(), &sort_key, &r.seq).to_json()
}

/// A batch's JSON text, as Lambda sends it (checked to parse as `aws_lambda_events`' type).
pub struct Batch(pub String);

pub fn event_json(records: &[serde_json::Value]) -> Batch {
    let text = batch(records.to_vec()).to_string();
    serde_json::from_str::<Event>(&text).expect("valid DynamoDB stream event");
    Batch(text)
}

pub fn event(records: &[Rec]) -> Batch {
    event_json(&records.iter().map(record_json).collect::<Vec<_>>())
}

/// Delivers a batch to an aggregator, as one invocation without a deadline.
#[allow(async_fn_in_trait)]
pub trait Deliver {
    async fn deliver(&self, batch: &Batch) -> BatchReport;
}

impl<C: CountsLedger> Deliver for Aggregator<C> {
    async fn deliver(&self, batch: &Batch) -> BatchReport {
        self.process_json(&batch.0, None)
            .await
            .expect("the batch parses")
    }
}

/// Sequence numbers `base + i` as decimal strings (base may be 21 to 40 digits).
pub fn seqs(base: u128, n: usize) -> Vec<String> {
    (0..n as u128).map(|i| (base + i).to_string()).collect()
}

/// What the simulated event source mapping does to one invocation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    /// Deliver normally.
    Clean,
    /// Writes to the row of the batch's `n`-th record fail.
    FailRow(usize),
    /// Writes to the row of the batch's `n`-th record succeed but report failure.
    LoseResponse(usize),
    /// The function errors after `n` successful writes: Lambda bisects the batch.
    Crash(usize),
    /// After success, the batch is delivered again from its `n`-th record.
    Redeliver(usize),
    /// The post items' consistent reads fail.
    FailReads,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct SimOutcome {
    pub invocations: usize,
    pub anomalies: usize,
}

/// Plays Lambda's DynamoDB event source mapping over one shard's records: batches of at most
/// `batch_size` in order, one at a time; a reported failure makes the next batch start at the
/// reported sequence number; a function error bisects the batch; `deliveries` says what goes
/// wrong on each of the first invocations (all later ones are clean).
pub async fn simulate<C: CountsLedger>(
    agg: &Aggregator<FaultyCounts<C>>,
    records: &[Rec],
    batch_size: usize,
    deliveries: &[Delivery],
) -> SimOutcome {
    let batch_size = batch_size.max(1);
    let mut out = SimOutcome::default();
    let mut checkpoint = 0;
    let mut size = batch_size;
    while checkpoint < records.len() {
        assert!(out.invocations < 10_000, "the simulation does not converge");
        let end = (checkpoint + size).min(records.len());
        let batch = &records[checkpoint..end];
        let delivery = deliveries
            .get(out.invocations)
            .copied()
            .unwrap_or(Delivery::Clean);
        out.invocations += 1;
        let row_of = |n: usize| batch[n % batch.len()].row();
        let mut plan = FaultPlan::default();
        match delivery {
            Delivery::FailRow(n) => {
                plan.fail_rows.insert(row_of(n));
            }
            Delivery::LoseResponse(n) => {
                plan.lose_response_rows.insert(row_of(n));
            }
            Delivery::Crash(n) => plan.fail_writes_after = Some(n),
            Delivery::FailReads => plan.fail_reads = true,
            Delivery::Clean | Delivery::Redeliver(_) => {}
        }
        agg.store().set_plan(plan);
        let report = agg.deliver(&event(batch)).await;
        agg.store().clear();
        out.anomalies += report.anomalies;

        if matches!(delivery, Delivery::Crash(_)) && report.checkpoint.is_some() {
            // A function error: the response is lost; Lambda splits the batch and retries the
            // first half from the same position.
            size = (batch.len() / 2).max(1);
            continue;
        }
        size = batch_size;
        match report.checkpoint {
            Some(cp) => {
                let at = batch
                    .iter()
                    .position(|r| r.seq == cp)
                    .expect("the checkpoint names a record of the batch, as received");
                checkpoint += at;
            }
            None => match delivery {
                Delivery::Redeliver(n) => checkpoint += n % batch.len(),
                _ => checkpoint = end,
            },
        }
    }
    out
}

/// How sequence numbers are spelled: `prefix` then the counter, zero-padded to `width` digits.
/// A `u128` holds 38 digits, so 40-digit numbers are a fixed prefix plus a padded counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeqSpace {
    pub prefix: &'static str,
    pub width: usize,
    pub start: u128,
}

impl SeqSpace {
    pub const DIGITS_21: SeqSpace = SeqSpace {
        prefix: "",
        width: 0,
        start: 100_000_000_000_000_000_000,
    };
    /// Starts at 21 digits and crosses to 22 within a few dozen records.
    pub const CROSSING_22: SeqSpace = SeqSpace {
        prefix: "",
        width: 0,
        start: 999_999_999_999_999_999_950,
    };
    pub const DIGITS_40: SeqSpace = SeqSpace {
        prefix: "1",
        width: 39,
        start: 0,
    };

    pub fn spell(&self, n: u128) -> String {
        format!("{}{:0width$}", self.prefix, n, width = self.width)
    }
}

/// A like/unlike history applied to a model of the Likes table: the stream records it produces
/// (only state changes produce records) and the final like count per post.
pub fn history_to_records(
    ops: &[(usize, usize, bool)],
    users: &[UserId],
    posts: &[PostId],
    space: SeqSpace,
) -> (Vec<Rec>, HashMap<PostId, i64>) {
    let (records, expected) = kinds_history_to_records(ops, &[], users, posts, space);
    let likes = expected
        .into_iter()
        .filter(|((_, kind), _)| kind == likes_core::reaction::LIKE)
        .map(|((post, _), n)| (post, n))
        .collect();
    (records, likes)
}

/// The ops of a kinds history that change what is held — (user, post, kind, added) — applied
/// to `held`, which ends as the history's final holdings.
pub fn changes(
    ops: &[(usize, usize, bool)],
    kinds: &[usize],
    held: &mut HashSet<(usize, usize, usize)>,
) -> Vec<(usize, usize, usize, bool)> {
    let mut out = Vec::new();
    for (i, &(u, p, like)) in ops.iter().enumerate() {
        let k = kinds.get(i).copied().unwrap_or(0) % KINDS.len();
        let changed = if like {
            held.insert((u, p, k))
        } else {
            held.remove(&(u, p, k))
        };
        if changed {
            out.push((u, p, k, like));
        }
    }
    out
}

/// The kinds a kinds history draws from: `kinds[i]` indexes it (the like when missing).
pub const KINDS: [&str; 3] = ["like", "love", "+1"];

/// As [`history_to_records`], with the kind of each op (`kinds[i]`, an index into [`KINDS`]):
/// the final count per (post, kind), every kind of every post present.
pub fn kinds_history_to_records(
    ops: &[(usize, usize, bool)],
    kinds: &[usize],
    users: &[UserId],
    posts: &[PostId],
    space: SeqSpace,
) -> (Vec<Rec>, HashMap<(PostId, String), i64>) {
    let seq_base = space.start;
    let mut held: HashSet<(usize, usize, usize)> = HashSet::new();
    let mut records = Vec::new();
    let mut seq = seq_base;
    for (u, p, k, like) in changes(ops, kinds, &mut held) {
        let seq_no = space.spell(seq);
        records.push(Rec::reaction(like, &posts[p], &users[u], KINDS[k], seq_no));
        // Real sequence numbers grow with gaps; so do these.
        seq += 1 + (seq % 7);
    }
    let mut expected: HashMap<(PostId, String), i64> = posts
        .iter()
        .flat_map(|p| KINDS.iter().map(move |k| ((p.clone(), (*k).to_owned()), 0)))
        .collect();
    for (_, p, k) in held {
        *expected
            .entry((posts[p].clone(), KINDS[k].to_owned()))
            .or_default() += 1;
    }
    (records, expected)
}
