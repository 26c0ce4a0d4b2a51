//! The events function under the delivery faults Lambda's mapping and EventBridge make —
//! in-order batches, redelivery from checkpoints, bisects after function errors, duplicate
//! deliveries, refused entries, failed calls, lost answers, failed state writes — over random
//! histories of likes and reactions, against an independent model of what must be published
//! (suppression per (user, post, kind), milestones on the like count, every event its record's
//! kind). In-memory stores (pure logic: no emulator); the aggregator counts ahead of each
//! batch.

use crate::common;

use common::world::{count_ahead, records_of_kinds, Rec, World};

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::events::{Pair, PairState, SuppressionStore};
use likes_core::store::memory::{
    BusFaults, MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression,
};
use likes_core::{PostId, StoreError, UserId};
use likes_sim::stream::batch;
use proptest::prelude::*;
use serde_json::Value;

const W: u64 = 100;
/// The kinds the histories use: the like and one reaction.
const KINDS: [&str; 2] = ["like", "love"];

/// (user, post, kind, add?, pause).
type Op = (usize, usize, &'static str, bool, i64);

/// The suppression store, with its writes failing on request.
#[derive(Default, Clone)]
struct Flaky {
    inner: MemorySuppression,
    fail: std::sync::Arc<AtomicBool>,
}

impl SuppressionStore for Flaky {
    async fn read_pairs(&self, pairs: &[Pair]) -> Result<HashMap<Pair, PairState>, StoreError> {
        self.inner.read_pairs(pairs).await
    }
    async fn write_pair(
        &self,
        p: &Pair,
        seen: &PairState,
        new: &PairState,
        e: i64,
    ) -> Result<bool, StoreError> {
        if self.fail.load(Ordering::Relaxed) {
            return Err(StoreError::Unavailable("injected".into()));
        }
        self.inner.write_pair(p, seen, new, e).await
    }
}

#[derive(Debug, Clone, Copy)]
enum Delivery {
    Clean,
    Refuse(usize),
    FailCalls(usize),
    LoseAnswers(usize),
    /// The function errors after running: Lambda bisects and retries.
    Crash,
    /// After success, delivered again from the n-th record.
    Redeliver(usize),
    FailWrites,
}

fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        3 => Just(Delivery::Clean),
        2 => (1usize..12).prop_map(Delivery::Refuse),
        1 => (1usize..4).prop_map(Delivery::FailCalls),
        2 => (1usize..3).prop_map(Delivery::LoseAnswers),
        2 => Just(Delivery::Crash),
        2 => (0usize..20).prop_map(Delivery::Redeliver),
        1 => Just(Delivery::FailWrites),
    ]
}

/// What must be published: per record its change; the model's notifications and retractions
/// (by record index); per post the milestones of every count the batches could read.
fn expected_notifications(recs: &[Rec]) -> (BTreeSet<usize>, BTreeMap<usize, usize>) {
    let mut open: HashMap<(usize, usize, &str), (usize, i64, bool)> = HashMap::new();
    let (mut notified, mut retracted) = (BTreeSet::new(), BTreeMap::new());
    for (i, r) in recs.iter().enumerate() {
        let key = (r.user, r.post, r.kind);
        match (r.insert, open.get(&key).copied()) {
            (true, Some((_, at, _))) if r.t < at + W as i64 => {}
            (true, _) => {
                open.insert(key, (i, r.t, false));
                notified.insert(i);
            }
            (false, Some((n, at, false))) if r.t < at + W as i64 => {
                open.insert(key, (n, at, true));
                retracted.insert(i, n);
            }
            (false, _) => {}
        }
    }
    (notified, retracted)
}

async fn run_case(ops: &[Op], size: usize, deliveries: &[Delivery]) -> Result<(), TestCaseError> {
    let w = World {
        posts: (0..2).map(|_| PostId::new_random()).collect(),
        users: (0..5).map(|_| UserId::new_random()).collect(),
    };
    let recs = records_of_kinds(ops);
    let bus = MemoryBus::default();
    let counts = MemoryCounts::default();
    let suppression = Flaky::default();
    let f = LikeEvents {
        suppression: suppression.clone(),
        milestones: MemoryMilestones::default(),
        counts: counts.clone(),
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published: Published::All,
            window: Duration::from_secs(W),
            count_wait: Duration::ZERO,
            concurrency: 3,
        }),
    };
    let (mut at, mut limit, mut n) = (0, size, 0);
    while at < recs.len() {
        prop_assert!(n < 10_000, "does not converge");
        let end = (at + limit).min(recs.len());
        let part = &recs[at..end];
        let d = deliveries.get(n).copied().unwrap_or(Delivery::Clean);
        n += 1;
        count_ahead(&counts, &w, part).await;
        match d {
            Delivery::Refuse(k) => bus.set_faults(BusFaults {
                refuse_entries: k,
                ..BusFaults::default()
            }),
            Delivery::FailCalls(k) => bus.set_faults(BusFaults {
                fail_calls: k,
                ..BusFaults::default()
            }),
            Delivery::LoseAnswers(k) => bus.set_faults(BusFaults {
                lose_answers: k,
                ..BusFaults::default()
            }),
            Delivery::FailWrites => suppression.fail.store(true, Ordering::Relaxed),
            _ => {}
        }
        let text = batch(part.iter().map(|r| w.json(r)).collect()).to_string();
        let report = f.process_json(&text, None).await.expect("a stream event");
        bus.set_faults(BusFaults::default());
        suppression.fail.store(false, Ordering::Relaxed);
        if matches!(d, Delivery::Crash) {
            limit = (part.len() / 2).max(1);
            continue;
        }
        limit = size;
        at = match (report.checkpoint, d) {
            (Some(cp), _) => {
                at + part
                    .iter()
                    .position(|r| r.seq == cp)
                    .expect("names a record of the batch")
            }
            (None, Delivery::Redeliver(k)) => at + k % part.len(),
            (None, _) => end,
        };
    }
    let details: Vec<(String, Value)> = bus
        .accepted()
        .into_iter()
        .map(|e| {
            (
                e.detail_type.to_owned(),
                serde_json::from_str(&e.detail).expect("JSON"),
            )
        })
        .collect();
    let by_type = |t: &str| -> BTreeMap<String, Value> {
        details
            .iter()
            .filter(|(dt, _)| dt == t)
            .map(|(_, d)| (d["event_id"].as_str().unwrap().to_owned(), d.clone()))
            .collect()
    };
    let seq_index: HashMap<&str, usize> = recs
        .iter()
        .enumerate()
        .map(|(i, r)| (r.seq.as_str(), i))
        .collect();
    let indexes = |m: &BTreeMap<String, Value>| -> BTreeSet<usize> {
        m.values()
            .map(|d| seq_index[d["sequence_number"].as_str().unwrap()])
            .collect()
    };
    // Every change once by id, each id its record's.
    let changes: BTreeMap<String, Value> = by_type("LikeAdded")
        .into_iter()
        .chain(by_type("LikeRemoved"))
        .collect();
    prop_assert_eq!(changes.len(), recs.len());
    prop_assert_eq!(indexes(&changes).len(), recs.len());
    // Every event names its record's kind (a milestone is announced for a like).
    for (_, d) in &details {
        let r = &recs[seq_index[d["sequence_number"].as_str().unwrap()]];
        prop_assert_eq!(d["kind"].as_str(), Some(r.kind), "{}", d);
    }
    let (notified, retracted) = expected_notifications(&recs);
    let notes = by_type("LikeNotification");
    prop_assert_eq!(notes.len(), notified.len());
    prop_assert_eq!(indexes(&notes), notified);
    let retractions = by_type("LikeRetraction");
    prop_assert_eq!(
        indexes(&retractions),
        retracted.keys().copied().collect::<BTreeSet<_>>()
    );
    for d in retractions.values() {
        let i = seq_index[d["sequence_number"].as_str().unwrap()];
        let n = &notes[d["retracts"].as_str().unwrap()];
        prop_assert_eq!(
            seq_index[n["sequence_number"].as_str().unwrap()],
            retracted[&i]
        );
    }
    // Milestones: every one of the final like count's, none beyond the highest it reached.
    let milestones = by_type("LikeMilestone");
    for (p, post) in w.posts.iter().enumerate() {
        let (mut now, mut high) = (0i64, 0i64);
        for r in recs.iter().filter(|r| r.post == p && r.kind == "like") {
            now += if r.insert { 1 } else { -1 };
            high = high.max(now);
        }
        // Each milestone once: by distinct event ids (a redelivery may publish one id again,
        // which consumers drop; two ids for one milestone would be announced twice).
        let mut ids_of: BTreeMap<u64, usize> = BTreeMap::new();
        for d in milestones
            .values()
            .filter(|d| d["post_id"] == post.as_str())
        {
            *ids_of.entry(d["milestone"].as_u64().unwrap()).or_default() += 1;
        }
        prop_assert!(
            ids_of.values().all(|n| *n == 1),
            "a milestone announced under several ids: {:?}",
            ids_of
        );
        let got: BTreeSet<u64> = ids_of.keys().copied().collect();
        let fin = like_events::milestones::between(0, like_events::milestones::reached(now));
        prop_assert!(
            fin.iter().all(|m| got.contains(m)),
            "{:?} lacks {:?}",
            got,
            fin
        );
        prop_assert!(
            got.iter().all(|m| *m as i64 <= high),
            "{:?} beyond {}",
            got,
            high
        );
    }
    Ok(())
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(
        (
            0usize..5,
            0usize..2,
            prop::sample::select(KINDS.to_vec()),
            prop::bool::weighted(0.6),
            0i64..40,
        ),
        1..60,
    )
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn what_is_published_is_the_models_under_any_delivery(
        ops in ops(),
        size in 1usize..12,
        deliveries in prop::collection::vec(delivery(), 0..12),
    ) {
        // Paused time: the bus's retry pauses pass at once.
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().start_paused(true).build().unwrap();
        rt.block_on(run_case(&ops, size, &deliveries))?;
    }
}

/// A like → unlike → like → unlike → like toggle in one batch and across batches: one
/// notification, one retraction.
#[tokio::test(start_paused = true)]
async fn toggling_notifies_once_and_retracts_once() {
    let ops: Vec<Op> = (0..5).map(|i| (0, 0, "like", i % 2 == 0, 1)).collect();
    for size in [1, 2, 5] {
        run_case(&ops, size, &[]).await.expect("the model's events");
    }
}

/// The same toggle of a like and of a love by one user, interleaved: each kind notifies once
/// and retracts once (per (user, post) alone, the love would be suppressed by the like).
#[tokio::test(start_paused = true)]
async fn toggling_a_like_and_a_love_notifies_each_once() {
    let ops: Vec<Op> = (0..10)
        .map(|i| (0, 0, KINDS[i % 2], (i / 2) % 2 == 0, 1))
        .collect();
    for size in [1, 3, 10] {
        run_case(&ops, size, &[]).await.expect("the model's events");
    }
}
