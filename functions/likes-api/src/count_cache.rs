//! A small in-process cache of post counts: a viral post's counts are read by every feed, and
//! its Counts item is one partition (≤ 3,000 read units/s). Counts are eventually consistent
//! anyway, so an answer up to the TTL (at most 1 s) old costs nothing a client can see. One
//! cache per execution environment, for the like count and every kind's alike; off unless
//! configured (`LIKES_COUNT_CACHE_MS`, read by `likes_aws::env`; the tests read their own
//! writes).
//!
//! A feed summary may take older counts: up to its own age (`LIKES_SUMMARY_COUNTS_MS`, at most
//! [`MAX_FEED_AGE`]), since a feed shows many posts and most are read once per environment in a
//! while — the read bill's largest part (docs/performance.md). Except for a post this
//! environment wrote within that age: its counts keep the TTL, so that the writer's own feed
//! shows the new count as soon as the aggregator has it, not a feed age later.
//!
//! An entry outlives its age (until evicted) for one use: when DynamoDB cannot serve the
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
/// Longest age a feed summary's counts may have: a feed refreshed a minute later shows new ones.
pub const MAX_FEED_AGE: Duration = Duration::from_secs(60);
/// Oldest counts shown when the post's item cannot be read: a minute-old count of a viral
/// post is still the right order of magnitude; an older one is not shown at all.
pub const MAX_STALE: Duration = Duration::from_secs(60);
/// Posts remembered at most. Past that, expired entries go, then the least recently used
/// eighth: a flood of requests for fresh posts (one caller's summaries of made-up ids) cannot
/// push out the hot posts that feeds keep reading.
/// A feed age of 60 s keeps ~40,000 posts live per environment under the bench's feed model
/// (docs/performance.md); an entry is ~150 bytes, so the bound is ~8 MB.
const CAPACITY: usize = 50_000;
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

/// How old an answer may be: a route's (the TTL) or a feed summary's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Age {
    Route,
    Feed,
}

#[derive(Debug)]
struct Entry {
    stored: Instant,
    /// None: only a write mark, no counts read yet.
    counts: Option<Counts>,
    /// When this environment last wrote a like or reaction of the post.
    written: Option<Instant>,
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
    feed_age: Duration,
    entries: Mutex<Entries>,
}

impl CountCache {
    /// A cache whose feed summaries take counts as old as its routes' (`ttl`).
    pub fn new(ttl: Duration) -> Self {
        let ttl = ttl.min(MAX_TTL);
        Self {
            ttl,
            feed_age: ttl,
            entries: Mutex::default(),
        }
    }

    /// Feed summaries take counts up to `age` old (at least the TTL, at most [`MAX_FEED_AGE`]).
    pub fn with_feed_age(mut self, age: Duration) -> Self {
        if !self.ttl.is_zero() {
            self.feed_age = age.clamp(self.ttl, MAX_FEED_AGE);
        }
        self
    }

    pub fn ttl(&self) -> Duration {
        self.ttl
    }

    pub fn feed_age(&self) -> Duration {
        self.feed_age
    }

    fn max_age(&self, age: Age) -> Duration {
        match age {
            Age::Route => self.ttl,
            Age::Feed => self.feed_age,
        }
    }

    /// The post's like count, if read within `age` (by either kind of read).
    pub fn likes(&self, post: &PostId, age: Age) -> Option<i64> {
        self.get(post, self.max_age(age), true).map(|c| c.likes())
    }

    /// Every kind's count of the post, if read within `age`.
    pub fn kinds(&self, post: &PostId, age: Age) -> Option<Arc<BTreeMap<String, i64>>> {
        self.get(post, self.max_age(age), true)?.kinds().cloned()
    }

    /// This environment is writing a like or reaction of the post: for a feed age from now its
    /// counts are kept for the TTL only.
    pub fn written(&self, post: &PostId) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        self.update(
            post,
            |entry| entry.written = Some(now),
            || Entry {
                stored: now,
                counts: None,
                written: Some(now),
                used: 0,
            },
        );
    }

    /// The last counts read of the post, at most [`MAX_STALE`] old: what to show, marked,
    /// when the item cannot be read now.
    pub fn last(&self, post: &PostId) -> Option<Counts> {
        self.get(post, MAX_STALE, false)
    }

    /// The post's counts if read within `max_age`, or within the TTL if `fresh_after_writes`
    /// and this environment wrote the post within a feed age.
    fn get(&self, post: &PostId, max_age: Duration, fresh_after_writes: bool) -> Option<Counts> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut entries = self.entries.lock().ok()?;
        entries.tick += 1;
        let tick = entries.tick;
        let entry = entries.map.get_mut(post)?;
        entry.used = tick;
        let written_lately =
            fresh_after_writes && entry.written.is_some_and(|w| w.elapsed() < self.feed_age);
        let max_age = if written_lately {
            max_age.min(self.ttl)
        } else {
            max_age
        };
        if entry.stored.elapsed() < max_age {
            entry.counts.clone()
        } else {
            None
        }
    }

    pub fn put(&self, post: &PostId, counts: Counts) {
        if self.ttl.is_zero() {
            return;
        }
        let now = Instant::now();
        let update = |entry: &mut Entry| {
            entry.stored = now;
            entry.counts = Some(counts.clone());
        };
        self.update(post, update, || Entry {
            stored: now,
            counts: Some(counts.clone()),
            written: None,
            used: 0,
        });
    }

    /// Changes the post's entry, or makes one (making room first if the cache is full).
    fn update(&self, post: &PostId, change: impl FnOnce(&mut Entry), make: impl FnOnce() -> Entry) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        entries.tick += 1;
        let tick = entries.tick;
        if let Some(entry) = entries.map.get_mut(post) {
            change(entry);
            entry.used = tick;
            return;
        }
        if entries.map.len() >= CAPACITY {
            let age = self.feed_age;
            entries.map.retain(|_, e| {
                e.stored.elapsed() < age || e.written.is_some_and(|w| w.elapsed() < age)
            });
            if entries.map.len() >= CAPACITY {
                evict_least_used(&mut entries.map);
            }
        }
        let mut entry = make();
        entry.used = tick;
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
        assert_eq!(
            (off.likes(&post, Age::Route), off.last(&post)),
            (None, None)
        );
        let cache = CountCache::new(Duration::from_millis(50));
        assert_eq!(cache.likes(&post, Age::Route), None);
        cache.put(&post, Counts::Likes(3));
        tokio::time::advance(Duration::from_millis(49)).await;
        assert_eq!(cache.likes(&post, Age::Route), Some(3), "kept for its TTL");
        tokio::time::advance(Duration::from_millis(1)).await;
        assert_eq!(
            cache.likes(&post, Age::Route),
            None,
            "gone once its TTL has passed"
        );
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
                    cache.likes(&hot, Age::Route),
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
        assert_eq!(cache.likes(&hot, Age::Route), Some(42));
    }

    /// Kind counts are answered only from a read of every kind; either read answers the like
    /// count.
    #[tokio::test(start_paused = true)]
    async fn kinds_come_from_a_read_of_every_kind_only() {
        let cache = CountCache::new(Duration::from_secs(1));
        let post = PostId::new_random();
        cache.put(&post, Counts::Likes(4));
        assert_eq!(
            (
                cache.likes(&post, Age::Route),
                cache.kinds(&post, Age::Route)
            ),
            (Some(4), None)
        );
        let kinds = Arc::new(BTreeMap::from([
            (LIKE.to_owned(), 5),
            ("love".to_owned(), 2),
        ]));
        cache.put(&post, Counts::Kinds(Arc::clone(&kinds)));
        assert_eq!(
            (
                cache.likes(&post, Age::Route),
                cache.kinds(&post, Age::Route)
            ),
            (Some(5), Some(kinds))
        );
    }
}
