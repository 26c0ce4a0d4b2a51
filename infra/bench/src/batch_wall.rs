//! A batch's wall time when every Counts write takes 5 ms, by concurrency: what the default
//! concurrency is chosen by.

use std::time::{Duration, Instant};

use count_aggregator::{Aggregator, Settings};
use likes_core::store::memory::MemoryCounts;
use likes_core::{ApplyOutcome, BucketWrite, CountsStore, PostCounts, PostId, StoreError};

pub struct SlowCounts {
    inner: MemoryCounts,
    delay: Duration,
}

impl CountsStore for SlowCounts {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        tokio::time::sleep(self.delay).await;
        self.inner.apply(post, writes, now).await
    }
    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        self.inner.read_post(post).await
    }
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        self.inner.post_count(post).await
    }
    async fn post_counts(
        &self,
        posts: &[PostId],
    ) -> Result<std::collections::HashMap<PostId, i64>, StoreError> {
        self.inner.post_counts(posts).await
    }

    async fn fence(
        &self,
        post: &likes_core::PostId,
        bucket: u8,
        fence: likes_core::FenceWrite<'_>,
        seq: likes_core::Seq<'_>,
        created: i64,
        now: &str,
    ) -> Result<likes_core::ApplyOutcome, likes_core::StoreError> {
        self.inner
            .fence(post, bucket, fence, seq, created, now)
            .await
    }

    async fn record_window(
        &self,
        bucket: &likes_core::PostBucket,
        job: &str,
        entries: &[likes_core::WindowEntry<'_>],
    ) -> Result<(), likes_core::StoreError> {
        self.inner.record_window(bucket, job, entries).await
    }
}

/// (concurrency, posts written, wall time) for one batch.
pub async fn wall_time(text: &str, concurrency: usize) -> (usize, usize, Duration) {
    let store = SlowCounts {
        inner: MemoryCounts::default(),
        delay: Duration::from_millis(5),
    };
    let settings = Settings {
        concurrency,
        ..Settings::default()
    };
    let agg = Aggregator::with_settings(store, settings);
    let started = Instant::now();
    let report = agg.process_json(text, None).await.expect("a batch");
    (concurrency, report.posts, started.elapsed())
}
