//! The shared count tier: posts' counts one environment read from DynamoDB, kept where every
//! other environment finds them (a Valkey cache, `valkey`). Each environment's own count cache
//! keeps the posts its feeds show often; a post in the long tail of a feed's popularity is
//! seen by any one of a thousand environments too rarely to be kept, but by all of them often
//! enough that one read serves the rest (docs/performance.md#the-shared-count-tier).
//!
//! An entry carries when its DynamoDB read was sent, so counts taken from it are as old as that
//! read, not as old as their last copy: the environment keeps them as if it had read them then
//! (`CountCache::put_aged`), and its own rules — the feed age, the write mark after its own
//! writes — decide whether they serve. Only feed summaries use the tier: the count and
//! reactions routes keep their 1 s per environment.
//!
//! Every environment copying one entry would keep it until the same instant, then miss together
//! and read DynamoDB together. So an entry is renewed ahead: one in the last sixth of its life
//! ([`SharedCounts::refresh`]) is no answer, and the environment that asks reads DynamoDB and
//! shares a fresh one; and each copy is kept a random part of that sixth less long
//! ([`SharedCounts::spread`]), so that environments ask one after another, the first renewing
//! it for the rest.
//!
//! The tier is a cache, never a dependency: when it fails or is slow (more than [`WAIT`]), the
//! request reads DynamoDB as it would without it, and the tier is left alone for [`DOWN_FOR`].

pub mod valkey;

use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use likes_core::PostId;
use serde::{Deserialize, Serialize};
use tokio::time::Instant;

use crate::count_cache::Counts;

/// Longest a request waits for the tier: a pipeline of 100 GETs on a warm connection in the
/// same AZ takes about a millisecond; past this the DynamoDB read is the faster answer.
pub const WAIT: Duration = Duration::from_millis(100);
/// How long a failed or slow tier is left alone: every request meanwhile reads DynamoDB
/// directly instead of waiting out [`WAIT`] again.
pub const DOWN_FOR: Duration = Duration::from_secs(5);
/// A DynamoDB read that took longer is not shared: a later read has likely been shared since,
/// and a plain SET would replace it with older counts.
pub const SLOW_READ: Duration = Duration::from_secs(1);
/// An entry read further in the future than this (a writer's clock ahead) is no answer: its age
/// would be understated.
const SKEW: Duration = Duration::from_secs(1);

#[derive(Debug, thiserror::Error)]
pub enum SharedError {
    #[error("shared count tier: {0}")]
    Store(String),
    #[error("shared count tier: no answer within {WAIT:?}")]
    Slow,
}

pub type SharedCall<'a, T> = Pin<Box<dyn Future<Output = Result<T, SharedError>> + Send + 'a>>;

/// A key-value store every environment reaches: what the tier needs of Valkey.
pub trait SharedStore: Send + Sync {
    /// Each key's value, in order (None: not kept).
    fn get<'a>(&'a self, keys: &'a [String]) -> SharedCall<'a, Vec<Option<Vec<u8>>>>;
    /// Keeps each value under its key for `keep`.
    fn put<'a>(&'a self, entries: &'a [(String, String)], keep: Duration) -> SharedCall<'a, ()>;
}

/// A post's counts as the tier keeps them.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// When the DynamoDB read was sent, ms since the epoch (every environment's clock is
    /// synchronised by Lambda; a skew of a few ms ages or freshens an entry by as much).
    at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    likes: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    kinds: Option<BTreeMap<String, i64>>,
}

/// The tier's key of a post's counts (one owner of the format): one per shape, so that a
/// deployment changing its reaction kinds never swaps a like count for every kind's.
pub fn key(post: &PostId, kinds: bool) -> String {
    let shape = if kinds { "k" } else { "l" };
    format!("likes:counts:{shape}:{post}")
}

/// Whether a read sent at `at` (ms since the epoch) took longer than [`SLOW_READ`].
pub fn is_slow(at: i64) -> bool {
    now_ms().saturating_sub(at) > SLOW_READ.as_millis() as i64
}

/// The age of something read at `at` (ms since the epoch) as of `now`, or None if it was read
/// further in the future than the clocks' skew.
pub fn age_of(at: i64, now: i64) -> Option<Duration> {
    if at.saturating_sub(now) > SKEW.as_millis() as i64 {
        return None;
    }
    Some(Duration::from_millis(
        u64::try_from(now.saturating_sub(at)).unwrap_or(0),
    ))
}

/// Now, ms since the epoch.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as i64)
}

fn encode(counts: &Counts, at: i64) -> Option<String> {
    let entry = match counts {
        Counts::Likes(n) => Entry {
            at,
            likes: Some(*n),
            kinds: None,
        },
        Counts::Kinds(kinds) => Entry {
            at,
            likes: None,
            kinds: Some(kinds.as_ref().clone()),
        },
    };
    serde_json::to_string(&entry).ok()
}

/// The counts and their age, `now` being ms since the epoch; None if the value is not an entry
/// (another version's, or garbage: a cache may hold anything), is `fresh_for` old or older, or
/// was read in the future by more than the clocks' skew.
fn decode(raw: &[u8], now: i64, fresh_for: Duration) -> Option<(Counts, Duration)> {
    let entry: Entry = serde_json::from_slice(raw).ok()?;
    let age = age_of(entry.at, now)?;
    if age >= fresh_for {
        return None;
    }
    let counts = match (entry.likes, entry.kinds) {
        (Some(n), None) => Counts::Likes(n),
        (None, Some(kinds)) => Counts::Kinds(Arc::new(kinds)),
        _ => return None,
    };
    Some((counts, age))
}

/// The tier as the API uses it: what to ask, how long to keep, when to leave it alone.
pub struct SharedCounts {
    store: Arc<dyn SharedStore>,
    /// How long an entry is kept: the feed age (no feed takes it older).
    keep: Duration,
    down_until: Mutex<Option<Instant>>,
}

impl SharedCounts {
    pub fn new(store: Arc<dyn SharedStore>, keep: Duration) -> Self {
        Self {
            store,
            keep,
            down_until: Mutex::new(None),
        }
    }

    /// The last part of an entry's life in which it is renewed rather than served: a sixth.
    pub fn refresh(&self) -> Duration {
        self.keep / 6
    }

    /// How much less long than its age allows a copy is kept: random within [`Self::refresh`].
    pub fn spread(&self) -> Duration {
        self.refresh().mul_f64(fastrand::f64())
    }

    fn down(&self) -> bool {
        let Ok(until) = self.down_until.lock() else {
            return true;
        };
        until.is_some_and(|u| Instant::now() < u)
    }

    fn failed(&self, error: &SharedError) {
        tracing::warn!(%error, "shared count tier left alone for {DOWN_FOR:?}; counts read from DynamoDB");
        if let Ok(mut until) = self.down_until.lock() {
            *until = Some(Instant::now() + DOWN_FOR);
        }
    }

    /// Each key's value (None: not kept); all None when the tier is down or slow. For every
    /// entry the tier keeps, counts and posts' policies alike (`policy_tier`).
    pub async fn get_raw(&self, keys: &[String]) -> Vec<Option<Vec<u8>>> {
        let nothing = || vec![None; keys.len()];
        if keys.is_empty() || self.down() {
            return nothing();
        }
        match tokio::time::timeout(WAIT, self.store.get(keys)).await {
            Ok(Ok(got)) if got.len() == keys.len() => got,
            Ok(Ok(_)) => nothing(),
            Ok(Err(e)) => {
                self.failed(&e);
                nothing()
            }
            Err(_) => {
                self.failed(&SharedError::Slow);
                nothing()
            }
        }
    }

    /// Keeps each value under its key for `keep`, unless the tier is down; a failure leaves
    /// it alone for [`DOWN_FOR`].
    pub async fn put_raw(&self, entries: &[(String, String)], keep: Duration) {
        if entries.is_empty() || self.down() {
            return;
        }
        match tokio::time::timeout(WAIT, self.store.put(entries, keep)).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => self.failed(&e),
            Err(_) => self.failed(&SharedError::Slow),
        }
    }

    /// What the tier holds of `posts` (every kind's counts if `kinds`, else the like count),
    /// each with its age, save entries due for renewal; nothing when the tier is down or slow.
    pub async fn get(&self, posts: &[PostId], kinds: bool) -> Vec<(PostId, Counts, Duration)> {
        let keys: Vec<String> = posts.iter().map(|p| key(p, kinds)).collect();
        let got = self.get_raw(&keys).await;
        let now = now_ms();
        let fresh_for = self.keep - self.refresh();
        posts
            .iter()
            .zip(got)
            .filter_map(|(post, raw)| {
                let (counts, age) = decode(raw.as_deref()?, now, fresh_for)?;
                Some((post.clone(), counts, age))
            })
            .collect()
    }

    /// Shares what this environment read from DynamoDB, the read sent at `at` (ms since the
    /// epoch), unless it took longer than [`SLOW_READ`]. A failure costs the other
    /// environments a read each, nothing more.
    pub async fn put(&self, read: &[(PostId, Counts)], at: i64) {
        if is_slow(at) {
            return;
        }
        let entries: Vec<(String, String)> = read
            .iter()
            .filter_map(|(post, counts)| {
                let kinds = matches!(counts, Counts::Kinds(_));
                Some((key(post, kinds), encode(counts, at)?))
            })
            .collect();
        self.put_raw(&entries, self.keep).await;
    }
}

#[cfg(test)]
mod tests;
