//! A small in-process cache of post counts: a viral post's count is read by every feed, and
//! its item is one partition (≤ 3,000 read units/s). Counts are eventually consistent anyway,
//! so an answer up to the TTL (at most 1 s) old costs nothing a client can see. One cache per
//! execution environment; off unless configured (`LIKES_COUNT_CACHE_MS`, read by
//! `likes_aws::env`; the tests read their own writes).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

// tokio's clock: the real one on Lambda, and one a test can pause and advance exactly.
use tokio::time::Instant;

use likes_core::PostId;

/// Longest TTL accepted: counts must not look stuck.
pub const MAX_TTL: Duration = Duration::from_secs(1);
/// Posts remembered at most; past that, expired entries go, and if none had, all go.
const CAPACITY: usize = 10_000;

#[derive(Debug, Default)]
pub struct CountCache {
    ttl: Duration,
    entries: Mutex<HashMap<PostId, (Instant, i64)>>,
}

impl CountCache {
    pub fn new(ttl: Duration) -> Self {
        Self {
            ttl: ttl.min(MAX_TTL),
            entries: Mutex::default(),
        }
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn get(&self, post: &PostId) -> Option<i64> {
        if self.ttl.is_zero() {
            return None;
        }
        let entries = self.entries.lock().ok()?;
        let (at, n) = entries.get(post)?;
        (at.elapsed() < self.ttl).then_some(*n)
    }

    pub fn put(&self, post: &PostId, count: i64) {
        if self.ttl.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= CAPACITY && !entries.contains_key(post) {
            let ttl = self.ttl;
            entries.retain(|_, (at, _)| at.elapsed() < ttl);
            if entries.len() >= CAPACITY {
                entries.clear();
            }
        }
        entries.insert(post.clone(), (Instant::now(), count));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An entry is kept for exactly its TTL, then gone; the TTL is capped; the cache is bounded.
    #[tokio::test(start_paused = true)]
    async fn remembers_for_the_ttl_only_and_is_bounded() {
        let post = PostId::new_random();
        let off = CountCache::new(Duration::ZERO);
        off.put(&post, 3);
        assert_eq!(off.get(&post), None);
        let cache = CountCache::new(Duration::from_millis(50));
        assert_eq!(cache.get(&post), None);
        cache.put(&post, 3);
        tokio::time::advance(Duration::from_millis(49)).await;
        assert_eq!(cache.get(&post), Some(3), "kept for its TTL");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.get(&post), None, "gone once its TTL has passed");
        assert_eq!(CountCache::new(Duration::from_secs(60)).ttl(), MAX_TTL);
        for _ in 0..CAPACITY + 10 {
            cache.put(&PostId::new_random(), 1);
        }
        assert!(cache.entries.lock().unwrap().len() <= CAPACITY);
    }
}
