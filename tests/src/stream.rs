//! Stream-side helpers: Lambda-format DynamoDB stream events, a fault-injecting Counts store,
//! an in-memory Counts store with DynamoDB's condition semantics, and a simulator of the event
//! source mapping (in-order batches, checkpoints, bisects, duplicate deliveries).

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;

use aws_lambda_events::dynamodb::Event;
use count_aggregator::Aggregator;
use likes_core::{
    bucket_of, ApplyOutcome, CountRow, CountsStore, PostBucket, PostId, SeqNo, StoreError, UserId,
};
use serde_json::json;

/// One stream record as the aggregator sees it (KEYS_ONLY).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rec {
    pub insert: bool,
    pub post: PostId,
    pub user: UserId,
    pub seq: String,
}

impl Rec {
    pub fn new(insert: bool, post: PostId, user: UserId, seq: impl Into<String>) -> Self {
        Self {
            insert,
            post,
            user,
            seq: seq.into(),
        }
    }

    pub fn row(&self) -> PostBucket {
        PostBucket {
            post: self.post,
            bucket: bucket_of(&self.user),
        }
    }
}

/// The record as Lambda delivers it from a DynamoDB stream.
pub fn record_json(r: &Rec) -> serde_json::Value {
    json!({
        "eventID": uuid::Uuid::new_v4().simple().to_string(),
        "eventName": if r.insert { "INSERT" } else { "REMOVE" },
        "eventVersion": "1.1",
        "eventSource": "aws:dynamodb",
        "awsRegion": "us-east-1",
        "dynamodb": {
            "ApproximateCreationDateTime": 1_764_000_000.0,
            "Keys": {
                "post_bucket": { "S": format!("{}#{}", r.post, bucket_of(&r.user)) },
                "user_id": { "S": r.user.to_string() }
            },
            "SequenceNumber": r.seq,
            "SizeBytes": 120,
            "StreamViewType": "KEYS_ONLY"
        },
        "eventSourceARN": "arn:aws:dynamodb:us-east-1:123456789012:table/likes/stream/2026-11-30T00:00:00.000"
    })
}

pub fn event_json(records: &[serde_json::Value]) -> Event {
    serde_json::from_value(json!({ "Records": records })).expect("valid DynamoDB stream event")
}

pub fn event(records: &[Rec]) -> Event {
    event_json(&records.iter().map(record_json).collect::<Vec<_>>())
}

/// Sequence numbers `base + i` as decimal strings (base may be 21 to 40 digits).
pub fn seqs(base: u128, n: usize) -> Vec<String> {
    (0..n as u128).map(|i| (base + i).to_string()).collect()
}

/// Faults to inject into the next calls.
#[derive(Debug, Default, Clone)]
pub struct FaultPlan {
    /// Writes to these rows fail before reaching the store.
    pub fail_rows: HashSet<PostBucket>,
    /// Writes to these rows reach the store, but the caller is told they failed (a lost
    /// response: the case that makes redelivery dangerous).
    pub lose_response_rows: HashSet<PostBucket>,
    /// Every write after this many successful ones fails (a function crashing midway).
    pub fail_writes_after: Option<usize>,
}

/// Wraps a Counts store: counts calls and injects faults.
pub struct FaultyCounts<C> {
    pub inner: C,
    pub writes: AtomicUsize,
    pub reads: AtomicUsize,
    plan: Mutex<(FaultPlan, usize)>,
}

impl<C> FaultyCounts<C> {
    pub fn new(inner: C) -> Self {
        Self {
            inner,
            writes: AtomicUsize::new(0),
            reads: AtomicUsize::new(0),
            plan: Mutex::new((FaultPlan::default(), 0)),
        }
    }

    pub fn set_plan(&self, plan: FaultPlan) {
        *self.plan.lock().expect("plan lock") = (plan, 0);
    }

    pub fn clear(&self) {
        self.set_plan(FaultPlan::default());
    }
}

enum Fault {
    None,
    Fail,
    LoseResponse,
}

impl<C: CountsStore> CountsStore for FaultyCounts<C> {
    async fn apply(
        &self,
        row: PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        self.writes.fetch_add(1, Ordering::SeqCst);
        let fault = {
            let mut guard = self.plan.lock().expect("plan lock");
            let (plan, done) = &mut *guard;
            if plan.fail_rows.contains(&row) || plan.fail_writes_after.is_some_and(|n| *done >= n) {
                Fault::Fail
            } else {
                *done += 1;
                if plan.lose_response_rows.contains(&row) {
                    Fault::LoseResponse
                } else {
                    Fault::None
                }
            }
        };
        match fault {
            Fault::Fail => Err(StoreError::Unavailable("injected write failure".into())),
            Fault::LoseResponse => {
                self.inner
                    .apply(row, delta, first_seq, last_seq, now)
                    .await?;
                Err(StoreError::Unavailable("injected lost response".into()))
            }
            Fault::None => self.inner.apply(row, delta, first_seq, last_seq, now).await,
        }
    }

    async fn read_row(&self, row: PostBucket) -> Result<Option<CountRow>, StoreError> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.read_row(row).await
    }

    async fn post_count(&self, post: PostId) -> Result<i64, StoreError> {
        self.inner.post_count(post).await
    }
}

/// In-memory Counts store with DynamoDB's conditional-update semantics, for fast property runs.
#[derive(Default)]
pub struct MemoryCounts {
    rows: Mutex<HashMap<PostBucket, CountRow>>,
}

impl CountsStore for MemoryCounts {
    async fn apply(
        &self,
        row: PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let mut rows = self.rows.lock().expect("rows lock");
        let entry = rows.entry(row).or_insert(CountRow {
            like_count: 0,
            hwm: None,
            updated_at: None,
        });
        if entry.hwm.as_ref().is_some_and(|h| h >= first_seq) {
            return Ok(ApplyOutcome::Stale);
        }
        entry.like_count += delta;
        entry.hwm = Some(last_seq.clone());
        entry.updated_at = Some(now.to_owned());
        Ok(ApplyOutcome::Applied {
            like_count: entry.like_count,
        })
    }

    async fn read_row(&self, row: PostBucket) -> Result<Option<CountRow>, StoreError> {
        Ok(self.rows.lock().expect("rows lock").get(&row).cloned())
    }

    async fn post_count(&self, post: PostId) -> Result<i64, StoreError> {
        Ok(self
            .rows
            .lock()
            .expect("rows lock")
            .iter()
            .filter(|(k, _)| k.post == post)
            .map(|(_, r)| r.like_count)
            .sum())
    }
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
pub async fn simulate<C: CountsStore>(
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
            Delivery::Clean | Delivery::Redeliver(_) => {}
        }
        agg.store().set_plan(plan);
        let report = agg.process(&event(batch)).await;
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
                    .position(|r| r.seq == cp.raw())
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

/// A like/unlike history applied to a model of the Likes table: the stream records it produces
/// (only state changes produce records) and the final like count per post.
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

pub fn history_to_records(
    ops: &[(usize, usize, bool)],
    users: &[UserId],
    posts: &[PostId],
    space: SeqSpace,
) -> (Vec<Rec>, HashMap<PostId, i64>) {
    let seq_base = space.start;
    let mut liked: HashSet<(usize, usize)> = HashSet::new();
    let mut records = Vec::new();
    let mut seq = seq_base;
    for &(u, p, like) in ops {
        let changed = if like {
            liked.insert((u, p))
        } else {
            liked.remove(&(u, p))
        };
        if changed {
            records.push(Rec::new(like, posts[p], users[u], space.spell(seq)));
            // Real sequence numbers grow with gaps; so do these.
            seq += 1 + (seq % 7);
        }
    }
    let mut expected: HashMap<PostId, i64> = posts.iter().map(|p| (*p, 0)).collect();
    for (_, p) in liked {
        *expected.entry(posts[p]).or_default() += 1;
    }
    (records, expected)
}
