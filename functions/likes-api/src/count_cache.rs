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
/// Posts remembered at most. Past that, expired entries go, then the least recently used
/// eighth: a flood of requests for fresh posts (one caller's summaries of made-up ids) cannot
/// push out the hot posts that feeds keep reading.
const CAPACITY: usize = 10_000;
const EVICT: usize = CAPACITY / 8;

#[derive(Debug)]
struct Entry {
    stored: Instant,
    count: i64,
    /// When it was last read or written, in the cache's own ticks.
    used: u64,
}

#[derive(Debug, Default)]
struct Entries {
    map: HashMap<PostId, Entry>,
    tick: u64,
}

#[derive(Debug, Default)]
pub struct CountCache {
    ttl: Duration,
    entries: Mutex<Entries>,
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
        let mut entries = self.entries.lock().ok()?;
        entries.tick += 1;
        let tick = entries.tick;
        let entry = entries.map.get_mut(post)?;
        entry.used = tick;
        (entry.stored.elapsed() < self.ttl).then_some(entry.count)
    }

    pub fn put(&self, post: &PostId, count: i64) {
        if self.ttl.is_zero() {
            return;
        }
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.map.len() >= CAPACITY && !entries.map.contains_key(post) {
            let ttl = self.ttl;
            entries.map.retain(|_, e| e.stored.elapsed() < ttl);
            if entries.map.len() >= CAPACITY {
                evict_least_used(&mut entries.map);
            }
        }
        entries.tick += 1;
        let used = entries.tick;
        let entry = Entry {
            stored: Instant::now(),
            count,
            used,
        };
        entries.map.insert(post.clone(), entry);
    }
}

/// Drops the `EVICT` least recently used entries (one selection, not a sort: amortised over
/// the `EVICT` inserts that follow).
fn evict_least_used(map: &mut HashMap<PostId, Entry>) {
    let mut uses: Vec<u64> = map.values().map(|e| e.used).collect();
    let (_, cut, _) = uses.select_nth_unstable(EVICT - 1);
    let cut = *cut;
    map.retain(|_, e| e.used > cut);
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
        assert!(cache.entries.lock().unwrap().map.len() <= CAPACITY);
    }

    /// A flood of fresh posts (three times the capacity, within one TTL) never evicts a post
    /// that is being read, nor empties the cache.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_fresh_posts_keeps_the_hot_ones() {
        let cache = CountCache::new(Duration::from_secs(1));
        let hot = PostId::new_random();
        cache.put(&hot, 42);
        for i in 0..CAPACITY * 3 {
            cache.put(&PostId::new_random(), 1);
            if i % 100 == 0 {
                assert_eq!(cache.get(&hot), Some(42), "the hot post was evicted at {i}");
            }
            let size = cache.entries.lock().unwrap().map.len();
            assert!(
                i < CAPACITY || size > CAPACITY / 2,
                "the cache was emptied at {i}: {size}"
            );
        }
        assert_eq!(cache.get(&hot), Some(42));
    }
}
