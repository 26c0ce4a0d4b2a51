//! A batch's wall time when every Counts write takes 5 ms, by concurrency: what the default
//! concurrency is chosen by.

use std::time::{Duration, Instant};

use count_aggregator::{Aggregator, Settings};
use likes_core::store::memory::MemoryCounts;
use likes_sim::faulty_counts::{FaultPlan, FaultyCounts};

/// (concurrency, posts written, wall time) for one batch.
pub async fn wall_time(text: &str, concurrency: usize) -> (usize, usize, Duration) {
    let store = FaultyCounts::with_plan(
        MemoryCounts::default(),
        FaultPlan {
            write_delay: Some(Duration::from_millis(5)),
            ..FaultPlan::default()
        },
    );
    let settings = Settings {
        concurrency,
        ..Settings::default()
    };
    let agg = Aggregator::with_settings(store, settings);
    let started = Instant::now();
    let report = agg.process_json(text, None).await.expect("a batch");
    (concurrency, report.posts, started.elapsed())
}
