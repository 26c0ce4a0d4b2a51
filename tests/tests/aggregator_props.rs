//! Property: whatever Lambda does to the delivery — duplicates, checkpoint retries, bisects,
//! failed writes, lost responses — each post's count ends equal to the likes that exist.
//!
//! Runs twice: against the emulator (fewer cases: ~150 writes/s) and against an in-memory store
//! with DynamoDB's condition semantics (many cases).

use count_aggregator::Aggregator;
use likes_core::{CountsStore, PostId, UserId};
use likes_integration_tests::stream::{
    history_to_records, simulate, Delivery, FaultyCounts, MemoryCounts, SeqSpace,
};
use likes_integration_tests::Tables;
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct Case {
    ops: Vec<(usize, usize, bool)>,
    seq_space: SeqSpace,
    batch_size: usize,
    deliveries: Vec<Delivery>,
    concurrency: usize,
}

const USERS: usize = 7;
const POSTS: usize = 3;

fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        3 => Just(Delivery::Clean),
        2 => (0usize..20).prop_map(Delivery::FailRow),
        2 => (0usize..20).prop_map(Delivery::LoseResponse),
        2 => (0usize..6).prop_map(Delivery::Crash),
        2 => (0usize..20).prop_map(Delivery::Redeliver),
    ]
}

fn case(max_ops: usize) -> impl Strategy<Value = Case> {
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

async fn run_case<C: CountsStore>(store: C, case: &Case) -> Result<(), TestCaseError> {
    let users: Vec<UserId> = (0..USERS).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..POSTS).map(|_| PostId::new_random()).collect();
    let (records, expected) = history_to_records(&case.ops, &users, &posts, case.seq_space);
    let agg = Aggregator::with_concurrency(FaultyCounts::new(store), case.concurrency);
    let outcome = simulate(&agg, &records, case.batch_size, &case.deliveries).await;
    prop_assert_eq!(outcome.anomalies, 0);
    for post in &posts {
        let got = agg.store().post_count(*post).await.expect("count");
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

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn in_memory_counts_converge_under_any_delivery(c in case(80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_case(MemoryCounts::default(), &c))?;
    }
}

proptest! {
    // Each case creates its own tables on the emulator and writes for real.
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]
    #[test]
    fn emulator_counts_converge_under_any_delivery(c in case(50)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let t = Tables::new().await;
            run_case(t.counts(), &c).await
        })?;
    }
}
