//! What like events cost per million likes, for each `PublishedEvents` setting: measured by
//! running a like/unlike workload through the real events function (`like-events`) on
//! counting in-memory stores, then priced — EventBridge per event published, the
//! EventStateTable's write and read units, the Counts reads for milestones, and the function's
//! invocations. DynamoDB and Lambda prices are `cost`'s; EventBridge's is stated here, its one
//! place. An estimate, not a bill.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::events::{
    BusEntry, CountsProgress, EventBus, MilestoneState, MilestoneStore, Pair, PairState,
    SuppressionStore,
};
use likes_core::store::memory::{MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression};
use likes_core::{
    bucket_of, BucketWrite, CountsLedger, PostBucket, PostCounts, PostId, Seq, StoreError, UserId,
};
use likes_sim::rng::SplitMix;
use likes_sim::stream::{batch, StreamRecord};

use crate::cost::{lambda, Capacity};

/// EventBridge, $ per million events put on a custom bus (each 64 KB of an entry is one event;
/// ours are under 1 KB). <https://aws.amazon.com/eventbridge/pricing/>
pub const EVENTBRIDGE: f64 = 1.00;

/// The function's memory (the template's global), and the time a round trip to DynamoDB or
/// EventBridge is modelled at: an invocation reads the pairs, reads counts and milestones, puts
/// its entries (lanes in parallel, each lane's calls in turn) and writes the state.
const EVENTS_MB: f64 = 256.0;
const ROUND_TRIP_MS: f64 = 10.0;
/// The workload: this many records, on this many posts and users; 1 in 5 changes is an unlike
/// (within the window: the toggles notifications must not repeat).
const RECORDS: usize = 100_000;
const POSTS: u64 = 2_000;
const USERS: u64 = 50_000;

/// Units and calls, counted.
#[derive(Debug, Default)]
struct Counted {
    entries: AtomicUsize,
    put_calls: AtomicUsize,
    state_writes: AtomicUsize,
    state_reads: AtomicUsize,
    counts_reads: AtomicUsize,
}

#[derive(Clone)]
struct Counting<T> {
    inner: T,
    n: Arc<Counted>,
}

fn add(a: &AtomicUsize, n: usize) {
    a.fetch_add(n, Ordering::Relaxed);
}

impl<T: SuppressionStore> SuppressionStore for Counting<T> {
    async fn read_pairs(
        &self,
        pairs: &[Pair],
    ) -> Result<std::collections::HashMap<Pair, PairState>, StoreError> {
        // A consistent read of an item under 4 KB: one read unit a key, found or not.
        add(&self.n.state_reads, pairs.len());
        self.inner.read_pairs(pairs).await
    }
    async fn write_pair(
        &self,
        p: &Pair,
        seen: &PairState,
        new: &PairState,
        e: i64,
    ) -> Result<bool, StoreError> {
        add(&self.n.state_writes, 1);
        self.inner.write_pair(p, seen, new, e).await
    }
}

impl<T: MilestoneStore> MilestoneStore for Counting<T> {
    async fn read_milestones(
        &self,
        posts: &[PostId],
    ) -> Result<std::collections::HashMap<PostId, MilestoneState>, StoreError> {
        add(&self.n.state_reads, posts.len());
        self.inner.read_milestones(posts).await
    }
    async fn record_milestone(&self, p: &PostId, s: &MilestoneState) -> Result<bool, StoreError> {
        add(&self.n.state_writes, 1);
        self.inner.record_milestone(p, s).await
    }
}

impl<T: CountsProgress> CountsProgress for Counting<T> {
    async fn progress(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        add(&self.n.counts_reads, 1);
        self.inner.progress(post).await
    }
}

impl<T: EventBus> EventBus for Counting<T> {
    async fn put(&self, entries: &[BusEntry]) -> Result<Vec<Option<String>>, StoreError> {
        add(&self.n.put_calls, 1);
        add(&self.n.entries, entries.len());
        self.inner.put(entries).await
    }
}

/// What one setting used per like, at `per_batch` records an invocation.
struct Usage {
    events: f64,
    write_units: f64,
    read_units: f64,
    invocations: f64,
    ms: f64,
}

async fn measure(published: Published, per_batch: usize) -> Usage {
    let n = Arc::new(Counted::default());
    let counts = MemoryCounts::default();
    let rules = EventRules {
        published,
        count_wait: Duration::ZERO,
        ..EventRules::default()
    };
    let f = LikeEvents {
        suppression: Counting {
            inner: MemorySuppression::default(),
            n: Arc::clone(&n),
        },
        milestones: Counting {
            inner: MemoryMilestones::default(),
            n: Arc::clone(&n),
        },
        counts: Counting {
            inner: counts.clone(),
            n: Arc::clone(&n),
        },
        bus: Counting {
            inner: MemoryBus::default(),
            n: Arc::clone(&n),
        },
        settings: Settings::from(rules),
    };
    let posts: Vec<PostId> = (0..POSTS)
        .map(|i| PostId::parse(&format!("p{i}")).unwrap())
        .collect();
    let users: Vec<UserId> = (0..USERS)
        .map(|i| UserId::parse(&format!("u{i}")).unwrap())
        .collect();
    let mut rng = SplitMix(21);
    let mut liked: Vec<(usize, usize)> = Vec::new();
    let mut is_liked = std::collections::HashSet::new();
    let mut records = Vec::with_capacity(RECORDS);
    let mut seq = 100_000_000_000_000_000_000u128;
    for i in 0..RECORDS {
        seq += 1;
        let t = 1_796_061_600.0 + i as f64 / 100.0;
        let (insert, (u, p)) = match (rng.below(5), liked.is_empty()) {
            (0, false) => {
                let pair = liked.swap_remove(rng.below(liked.len() as u64) as usize);
                is_liked.remove(&pair);
                (false, pair)
            }
            _ => {
                // One post in twenty gets half the likes: the hot posts' milestones.
                let p = match rng.below(2) {
                    0 => rng.below(POSTS / 20),
                    _ => rng.below(POSTS),
                } as usize;
                let u = rng.below(USERS) as usize;
                if !is_liked.insert((u, p)) {
                    continue;
                }
                liked.push((u, p));
                (true, (u, p))
            }
        };
        let row = PostBucket::for_like(&posts[p], &users[u]);
        let name = if insert { "INSERT" } else { "REMOVE" };
        records.push((
            StreamRecord::likes(name, &row.to_string(), users[u].as_str(), &seq.to_string())
                .created(t)
                .to_json(),
            (p, u, insert, seq),
        ));
    }
    let mut invocations = 0usize;
    let mut ms = 0.0;
    for chunk in records.chunks(per_batch) {
        // The aggregator counted the batch first (its mapping's window is the shorter).
        for (_, (p, u, insert, seq)) in chunk {
            let s = seq.to_string();
            let seq = Seq::parse(&s).unwrap();
            let w = BucketWrite {
                kinds: Vec::new(),
                bucket: bucket_of(&users[*u]),
                delta: if *insert { 1 } else { -1 },
                first: seq,
                last: seq,
                last_created: 0,
                window: None,
                records: 1,
            };
            let _ = counts.apply(&posts[*p], &[w]).await;
        }
        let calls_before = n.put_calls.load(Ordering::Relaxed);
        let text = batch(chunk.iter().map(|(j, _)| j.clone()).collect()).to_string();
        let _ = f.process_json(&text, None).await;
        invocations += 1;
        let calls = n.put_calls.load(Ordering::Relaxed) - calls_before;
        let lanes = rules.concurrency as f64;
        let rounds = match published {
            Published::None => 0.0,
            _ => 3.0 + (calls as f64 / lanes).ceil(),
        };
        ms += 1.0 + rounds * ROUND_TRIP_MS;
    }
    let likes = records.iter().filter(|(_, (_, _, i, _))| *i).count() as f64;
    let per = |a: &AtomicUsize| a.load(Ordering::Relaxed) as f64 / likes;
    Usage {
        events: per(&n.entries),
        write_units: per(&n.state_writes),
        read_units: per(&n.state_reads) + per(&n.counts_reads),
        invocations: invocations as f64 / likes,
        ms: ms / invocations as f64,
    }
}

/// The cost table: per setting, $ per million likes and what it is made of, at a quiet
/// shard's batches (every record its own invocation) and a busy one's (500 records).
pub async fn lines() -> Vec<String> {
    let mut out = vec![format!(
        "like events, $ per million likes ({RECORDS} records, 1 in 5 an unlike; EventBridge ${EVENTBRIDGE:.2}/M events, state on-demand, λ {EVENTS_MB} MB at {ROUND_TRIP_MS} ms per round trip):"
    )];
    for per_batch in [1usize, 500] {
        for (name, published) in [
            ("none", Published::None),
            ("notifications", Published::Notifications),
            ("all", Published::All),
        ] {
            let u = measure(published, per_batch).await;
            let events = u.events * EVENTBRIDGE;
            let writes = u.write_units * Capacity::OnDemand.write_unit();
            let reads = u.read_units * Capacity::OnDemand.read_unit();
            let function = u.invocations * lambda(EVENTS_MB, u.ms);
            out.push(format!(
                "  {per_batch:>3} record(s)/batch, {name:<13} ${:.3} = EventBridge ({:.3} events) ${events:.3} + state writes ({:.3} WU) ${writes:.3} + reads ({:.3} RU) ${reads:.3} + λ ({:.3} invocations, {:.0} ms) ${function:.3}",
                events + writes + reads + function,
                u.events,
                u.write_units,
                u.read_units,
                u.invocations,
                u.ms,
            ));
        }
    }
    out
}
