//! The aggregator's delivery property (`likes_harness::props`) against an in-memory
//! Counts store with DynamoDB's condition semantics: many cases, no emulator (`make unit`).

use likes_harness::props::{case, run_case};
use likes_harness::stream::MemoryCounts;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn in_memory_counts_converge_under_any_delivery(c in case(80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_case(MemoryCounts::default(), &c))?;
    }
}

/// Invariants 5 and 6 against the invocation's deadline: with every write taking 0.5 s and 3 s
/// left, the batch answers before the deadline, having applied what it started, and reports the
/// lowest record of the posts it did not start; the redelivery applies the rest exactly once.
#[tokio::test(start_paused = true)]
async fn a_slow_store_never_runs_the_batch_past_its_deadline() {
    use count_aggregator::{Aggregator, Settings};
    use likes_harness::stream::{event, Deliver, Rec};
    use std::time::Duration;
    use tokio::time::Instant;

    let posts: Vec<likes_core::PostId> = (0..1000)
        .map(|_| likes_core::PostId::new_random())
        .collect();
    let user = likes_core::UserId::new_random();
    let recs: Vec<Rec> = posts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            Rec::new(
                true,
                p,
                &user,
                (100_000_000_000_000_000_000u128 + i as u128).to_string(),
            )
        })
        .collect();
    // Every write takes 0.5 s: a DynamoDB brownout.
    let store = likes_sim::faulty_counts::FaultyCounts::with_plan(
        MemoryCounts::default(),
        likes_sim::faulty_counts::FaultPlan {
            write_delay: Some(Duration::from_millis(500)),
            ..Default::default()
        },
    );
    let settings = Settings {
        concurrency: 16,
        post_budget: Duration::from_secs(1),
    };
    let agg = Aggregator::with_settings(store, settings);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(3);
    let batch = event(&recs);
    let report = agg
        .process_json(&batch.0, Some(deadline))
        .await
        .expect("parses");
    let took = started.elapsed();
    let applied = report.posts - report.deferred_posts - report.failed_posts;
    println!(
        "deadline 3 s, 0.5 s per write, 16 at a time: {applied} of {} posts applied, answered after {took:?}",
        report.posts
    );
    // On the paused clock, exactly: the last posts started at 2.0 s end at 2.5 s, and none
    // starts after (1 s of budget left at 2.0 s, less at 2.5 s). Before its deadline.
    assert_eq!(took, Duration::from_millis(2500));
    assert!(Instant::now() <= deadline);
    // Posts start while at least the budget is left: at 0, 0.5, 1.0, 1.5 and 2.0 s.
    assert_eq!(applied, 5 * 16);
    let first_unapplied = recs
        .iter()
        .find(|r| agg.store().inner.read_post_now(&r.post).is_none())
        .expect("some post was not applied");
    assert_eq!(
        report.checkpoint.as_deref(),
        Some(first_unapplied.seq.as_str())
    );
    // Lambda redelivers from the checkpoint, this time with time enough.
    let at = recs
        .iter()
        .position(|r| r.seq == first_unapplied.seq)
        .unwrap();
    let again = agg.deliver(&event(&recs[at..])).await;
    assert_eq!(again.checkpoint, None);
    for p in &posts {
        assert_eq!(
            agg.store().inner.read_post_now(p).map(|c| c.total()),
            Some(1)
        );
    }
}
