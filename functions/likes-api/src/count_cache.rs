//! A small in-process cache of post counts: a viral post's counts are read by every feed, and
//! its Counts item is one partition (≤ 3,000 read units/s). Counts are eventually consistent
//! anyway, so an answer up to the TTL (at most 1 s) old costs nothing a client can see. One
//! cache per execution environment, for the like count and every kind's alike; off unless
//! configured (`LIKES_COUNT_CACHE_MS`, read by `likes_aws::env`; the tests read their own
//! writes). Nothing invalidates an entry early: the environment's own likes reach the count
//! through the stream, not at once, whether the entry is there or not.
//!
//! An entry outlives its TTL (until evicted) for one use: when DynamoDB cannot serve the
//! post's item, the last counts read (at most [`MAX_STALE`] old) are shown, marked, rather
//! than nothing (`counts.rs`).

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// tokio's clock: the real one on Lambda, and one a test can pause and advance exactly.
use tokio::time::Instant;

use likes_core::reaction::LIKE;
use likes_core::PostId;

/// Longest TTL accepted: counts must not look stuck.
pub const MAX_TTL: Duration = Duration::from_secs(1);
/// Oldest counts shown when the post's item cannot be read: a minute-old count of a viral
/// post is still the right order of magnitude; an older one is not shown at all.
pub const MAX_STALE: Duration = Duration::from_secs(60);
/// Posts remembered at most. Past that, expired entries go, then the least recently used
/// eighth: a flood of requests for fresh posts (one caller's summaries of made-up ids) cannot
/// push out the hot posts that feeds keep reading.
const CAPACITY: usize = 10_000;
const EVICT: usize = CAPACITY / 8;

/// What one read of a post's Counts item gave.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Counts {
    /// The like count alone: a like-only summary, or `GET …/likes/count`.
    Likes(i64),
    /// Every kind's count, the like's included (`PostCounts::kind_totals`): a deployment with
    /// reaction kinds. Shared, so that a hit copies no map.
    Kinds(Arc<BTreeMap<String, i64>>),
}

impl Counts {
    pub fn likes(&self) -> i64 {
        match self {
            Counts::Likes(n) => *n,
            Counts::Kinds(kinds) => kinds.get(LIKE).copied().unwrap_or(0),
        }
    }

    /// Every kind's count, if this is what was read.
    pub fn kinds(&self) -> Option<&Arc<BTreeMap<String, i64>>> {
        match self {
            Counts::Likes(_) => None,
            Counts::Kinds(kinds) => Some(kinds),
        }
    }
}

#[derive(Debug)]
struct Entry {
    stored: Instant,
    counts: Counts,
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

    /// The post's like count, if read within the TTL (by either kind of read).
    pub fn likes(&self, post: &PostId) -> Option<i64> {
        self.get(post, self.ttl).map(|c| c.likes())
    }

    /// Every kind's count of the post, if read within the TTL.
    pub fn kinds(&self, post: &PostId) -> Option<Arc<BTreeMap<String, i64>>> {
        self.get(post, self.ttl)?.kinds().cloned()
    }

    /// The last counts read of the post, at most [`MAX_STALE`] old: what to show, marked,
    /// when the item cannot be read now.
    pub fn last(&self, post: &PostId) -> Option<Counts> {
        self.get(post, MAX_STALE)
    }

    fn get(&self, post: &PostId, max_age: Duration) -> Option<Counts> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut entries = self.entries.lock().ok()?;
        entries.tick += 1;
        let tick = entries.tick;
        let entry = entries.map.get_mut(post)?;
        entry.used = tick;
        (entry.stored.elapsed() < max_age).then(|| entry.counts.clone())
    }

    pub fn put(&self, post: &PostId, counts: Counts) {
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
            counts,
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
        off.put(&post, Counts::Likes(3));
        assert_eq!((off.likes(&post), off.last(&post)), (None, None));
        let cache = CountCache::new(Duration::from_millis(50));
        assert_eq!(cache.likes(&post), None);
        cache.put(&post, Counts::Likes(3));
        tokio::time::advance(Duration::from_millis(49)).await;
        assert_eq!(cache.likes(&post), Some(3), "kept for its TTL");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(cache.likes(&post), None, "gone once its TTL has passed");
        assert_eq!(
            cache.last(&post),
            Some(Counts::Likes(3)),
            "kept as the last read"
        );
        tokio::time::advance(MAX_STALE - Duration::from_millis(50)).await;
        assert_eq!(
            cache.last(&post),
            None,
            "never shown once older than MAX_STALE"
        );
        assert_eq!(CountCache::new(Duration::from_secs(60)).ttl(), MAX_TTL);
        for _ in 0..CAPACITY + 10 {
            cache.put(&PostId::new_random(), Counts::Likes(1));
        }
        assert!(cache.entries.lock().unwrap().map.len() <= CAPACITY);
    }

    /// A flood of fresh posts (three times the capacity, within one TTL) never evicts a post
    /// that is being read, nor empties the cache.
    #[tokio::test(start_paused = true)]
    async fn a_flood_of_fresh_posts_keeps_the_hot_ones() {
        let cache = CountCache::new(Duration::from_secs(1));
        let hot = PostId::new_random();
        cache.put(&hot, Counts::Likes(42));
        for i in 0..CAPACITY * 3 {
            cache.put(&PostId::new_random(), Counts::Likes(1));
            if i % 100 == 0 {
                assert_eq!(
                    cache.likes(&hot),
                    Some(42),
                    "the hot post was evicted at {i}"
                );
            }
            let size = cache.entries.lock().unwrap().map.len();
            assert!(
                i < CAPACITY || size > CAPACITY / 2,
                "the cache was emptied at {i}: {size}"
            );
        }
        assert_eq!(cache.likes(&hot), Some(42));
    }

    /// Kind counts are answered only from a read of every kind; either read answers the like
    /// count.
    #[tokio::test(start_paused = true)]
    async fn kinds_come_from_a_read_of_every_kind_only() {
        let cache = CountCache::new(Duration::from_secs(1));
        let post = PostId::new_random();
        cache.put(&post, Counts::Likes(4));
        assert_eq!((cache.likes(&post), cache.kinds(&post)), (Some(4), None));
        let kinds = Arc::new(BTreeMap::from([
            (LIKE.to_owned(), 5),
            ("love".to_owned(), 2),
        ]));
        cache.put(&post, Counts::Kinds(Arc::clone(&kinds)));
        assert_eq!(
            (cache.likes(&post), cache.kinds(&post)),
            (Some(5), Some(kinds))
        );
    }
}
