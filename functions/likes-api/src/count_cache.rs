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
//! environment wrote: counts read before, or within [`WRITE_MARK`] after, its write may not
//! hold it yet, so they keep the TTL; the writer's own feed shows the new count as soon as
//! the aggregator has it, not a feed age later. The first read past the mark holds it, and
//! serves the feed age until the environment's next write of the post. (The mark is set as a
//! write starts and again as it ends: its retries, then the aggregator's lag.)
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
/// Oldest counts shown when the post's item cannot be read: a count two minutes old of a
/// viral post is still the right order of magnitude; an older one is not shown at all. Past
/// [`MAX_FEED_AGE`], so that a summary served at the longest feed age still has its last
/// counts to fall back on when DynamoDB refuses the read that would renew them.
pub const MAX_STALE: Duration = Duration::from_secs(120);
/// How long after this environment's write of a post a read of its counts may still miss it:
/// the aggregator's lag on a healthy stream (Lambda polls a shard four times a second, the
/// mapping waits up to 1 s to fill a batch, one batch takes well under a second) with room to
/// spare. Short, so that a post this environment writes now and then serves the feed age
/// between its writes; one it writes every few seconds (a hot one) is read once per TTL.
pub const WRITE_MARK: Duration = Duration::from_secs(5);
/// Posts remembered at most. Past that, entries no read can use go, then the least recently
/// used, down to seven eighths: a flood of requests for fresh posts (one caller's summaries of
/// made-up ids) cannot push out the hot posts that feeds keep reading, and the next eighth of
/// inserts scans nothing.
/// A feed age of 60 s keeps ~40,000 posts live per environment under the bench's feed model
/// (~72,000 with a flatter popularity, Zipf 0.8; docs/performance.md); an entry is ~150 bytes,
/// so the bound is ~15 MB.
const CAPACITY: usize = 100_000;
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

impl Entry {
    /// Its counts were read before this environment's last write of the post, or so soon
    /// after that the aggregator may not have counted it yet.
    fn may_miss_a_write(&self) -> bool {
        self.written.is_some_and(|w| self.stored < w + WRITE_MARK)
    }

    /// Its write mark may still hold a read to the TTL: a read from now on may come within it,
    /// and counts read within it may yet arrive from the shared tier, backdated (`put_aged`),
    /// for as long as a feed takes counts. Evicted sooner, such counts would serve a feed age
    /// here and hide this environment's own write.
    fn marking(&self) -> bool {
        self.written
            .is_some_and(|w| w.elapsed() < WRITE_MARK + MAX_FEED_AGE)
    }
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

    /// This environment is writing a like or reaction of the post: counts read before
    /// [`WRITE_MARK`] from now are kept for the TTL only.
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
    /// and they were read before this environment's last write of the post was surely counted.
    fn get(&self, post: &PostId, max_age: Duration, fresh_after_writes: bool) -> Option<Counts> {
        if self.ttl.is_zero() {
            return None;
        }
        let mut entries = self.entries.lock().ok()?;
        entries.tick += 1;
        let tick = entries.tick;
        let entry = entries.map.get_mut(post)?;
        entry.used = tick;
        let max_age = if fresh_after_writes && entry.may_miss_a_write() {
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

    /// Counts another environment read `age` ago (the shared tier's), kept as if read then:
    /// they serve no longer than this cache's rules allow from that read (a feed age, or the
    /// TTL when read before or just after this environment's own write of the post). Never
    /// over counts this environment read since.
    pub fn put_aged(&self, post: &PostId, counts: Counts, age: Duration) {
        if self.ttl.is_zero() {
            return;
        }
        let Some(stored) = Instant::now().checked_sub(age) else {
            return;
        };
        let kept = counts.clone();
        let update = |entry: &mut Entry| {
            if entry.counts.is_none() || entry.stored < stored {
                entry.stored = stored;
                entry.counts = Some(kept);
            }
        };
        self.update(post, update, || Entry {
            stored,
            counts: Some(counts),
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
            // Counts past MAX_STALE serve nothing, and a mark past WRITE_MARK + MAX_FEED_AGE
            // marks nothing (any read from now on, or backdated copy of one, holds the write).
            entries.map.retain(|_, e| {
                let counts = e.counts.is_some() && e.stored.elapsed() < MAX_STALE;
                counts || e.marking()
            });
            let over = entries.map.len().saturating_sub(CAPACITY - EVICT);
            if over > 0 {
                evict_least_used(&mut entries.map, over);
            }
        }
        let mut entry = make();
        entry.used = tick;
        entries.map.insert(post.clone(), entry);
    }
}

/// Drops the `n` least recently used entries (one selection, not a sort: amortised over the
/// `EVICT` or more inserts that follow before the cache is full again), never one whose write
/// mark still marks: dropped, a read within the mark would be served for a feed age.
fn evict_least_used(map: &mut HashMap<PostId, Entry>, n: usize) {
    let mut uses: Vec<u64> = map
        .values()
        .filter(|e| !e.marking())
        .map(|e| e.used)
        .collect();
    let Some(last) = n.min(uses.len()).checked_sub(1) else {
        return;
    };
    let (_, cut, _) = uses.select_nth_unstable(last);
    let cut = *cut;
    map.retain(|_, e| e.used > cut || e.marking());
}

#[cfg(test)]
mod tests;
