//! The aggregator's property: whatever Lambda does to the delivery — duplicates, checkpoint
//! retries, bisects, failed writes, lost responses — each post's count ends equal to the likes
//! that exist. Random cases and their check, shared by the in-memory run (many cases, no
//! emulator) and the emulator run (fewer: ~150 writes/s).

use count_aggregator::Aggregator;
use likes_core::{CountsLedger, CountsRead, PostId, UserId};
use proptest::prelude::*;

use crate::stream::{history_to_records, simulate, Delivery, FaultyCounts, SeqSpace};

#[derive(Debug, Clone)]
pub struct Case {
    pub ops: Vec<(usize, usize, bool)>,
    pub seq_space: SeqSpace,
    pub batch_size: usize,
    pub deliveries: Vec<Delivery>,
    pub concurrency: usize,
}

const USERS: usize = 7;
const POSTS: usize = 3;

/// One delivery of a batch, as the event source mapping may make it: the faults the models
/// draw from.
pub fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        3 => Just(Delivery::Clean),
        2 => (0usize..20).prop_map(Delivery::FailRow),
        2 => (0usize..20).prop_map(Delivery::LoseResponse),
        2 => (0usize..6).prop_map(Delivery::Crash),
        2 => (0usize..20).prop_map(Delivery::Redeliver),
        1 => Just(Delivery::FailReads),
    ]
}

pub fn case(max_ops: usize) -> impl Strategy<Value = Case> {
    (
        prop::collection::vec((0..USERS, 0..POSTS, prop::bool::weighted(0.6)), 1..max_ops),
        prop_oneof![
            Just(SeqSpace::DIGITS_21),
            Just(SeqSpace::CROSSING_22),
            Just(SeqSpace::DIGITS_40),
        ],
        1usize..16,
        prop::collection::vec(delivery(), 0..12),
        prop_oneof![Just(1usize), Just(4usize)],
    )
        .prop_map(
            |(ops, seq_space, batch_size, deliveries, concurrency)| Case {
                ops,
                seq_space,
                batch_size,
                deliveries,
                concurrency,
            },
        )
}

pub async fn run_case<C: CountsLedger + CountsRead>(
    store: C,
    case: &Case,
) -> Result<(), TestCaseError> {
    let users: Vec<UserId> = (0..USERS).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..POSTS).map(|_| PostId::new_random()).collect();
    let (records, expected) = history_to_records(&case.ops, &users, &posts, case.seq_space);
    let agg = Aggregator::with_concurrency(FaultyCounts::new(store), case.concurrency);
    let outcome = simulate(&agg, &records, case.batch_size, &case.deliveries).await;
    prop_assert_eq!(outcome.anomalies, 0);
    for post in &posts {
        let got = agg.store().post_count(post).await.expect("count");
        prop_assert_eq!(
            got,
            expected[post],
            "post {} after {} invocations",
            post,
            outcome.invocations
        );
    }
    Ok(())
}
