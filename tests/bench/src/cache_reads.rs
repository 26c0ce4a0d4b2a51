//! DynamoDB reads per 10,000 count requests of one post from one execution environment, with
//! and without the in-process count cache.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use likes_api::{App, CountCache};
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{CountsRead, PostId, StoreError};
use likes_sim::apigw::ApiEvent;

#[derive(Default)]
struct CountedReads {
    inner: MemoryCounts,
    reads: AtomicUsize,
}

impl CountsRead for CountedReads {
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.post_count(post).await
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.post_counts(posts).await
    }

    async fn kind_counts(&self, post: &PostId) -> Result<BTreeMap<String, i64>, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.kind_counts(post).await
    }

    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.kind_counts_among(posts).await
    }
}

/// (requests, store reads, seconds) for `requests` count requests at `per_second`.
pub async fn reads(ttl: Duration, requests: usize, per_second: u64) -> (usize, usize, f64) {
    let app = App::with_cache(
        MemoryLikes::default(),
        CountedReads::default(),
        CountCache::new(ttl),
    );
    let post = PostId::new_random();
    let path = format!("/posts/{post}/likes/count");
    let mut tick = tokio::time::interval(Duration::from_micros(1_000_000 / per_second.max(1)));
    let started = Instant::now();
    for _ in 0..requests {
        tick.tick().await;
        let event = ApiEvent::new("GET", &path)
            .caller("reader")
            .to_json()
            .to_string();
        let req = lambda_http::request::from_str(&event).expect("an event");
        let resp = app.handle(req).await;
        assert_eq!(resp.status(), 200);
    }
    (
        requests,
        app.counts.reads.load(Ordering::Relaxed),
        started.elapsed().as_secs_f64(),
    )
}
