//! The counts a read route shows: from the count cache when read within its TTL, otherwise
//! from one read of the rest (each post's Counts item once, whatever the number of kinds).
//!
//! A post whose item DynamoDB cannot serve — its key still unprocessed after the batch's
//! rounds, or the whole read throttled — is shown with the last counts this environment read
//! (at most `count_cache::MAX_STALE` old), or with none, and marked `count_unavailable`: a viral
//! post's throttled partition costs that post's counts, not every feed that shows it a 503.
//! What the caller holds ("mine") is a strong read of another table and still fails the
//! request: it cannot be guessed.
//!
//! A feed summary's misses go to the shared count tier first, when there is one
//! (`shared_counts`), and what DynamoDB then gives is shared for the other environments.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use likes_core::store::counts::PartialCounts;
use likes_core::{CountsRead, PostId, ReactionsStore, StoreError};
use serde_json::{Map, Value};

use crate::count_cache::{Age, CountCache, Counts};
use crate::shared_counts::{self, SharedCounts};
use crate::App;

/// Every kind's count of a post, as the cache shares it.
pub(crate) type KindCounts = Arc<BTreeMap<String, i64>>;

/// A post's counts as an answer shows them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Shown<T> {
    /// Read by this request, or within the cache's TTL.
    Fresh(T),
    /// This request could not read them: the last counts read, older than the TTL.
    Stale(T),
    /// This request could not read them, and none were read in the last `MAX_STALE`.
    Unavailable,
}

impl<T> Shown<T> {
    pub(crate) fn value(&self) -> Option<&T> {
        match self {
            Shown::Fresh(v) | Shown::Stale(v) => Some(v),
            Shown::Unavailable => None,
        }
    }

    /// Adds the marker to an answer (an item of a summary, or a post's reactions) that shows
    /// counts this request could not read.
    pub(crate) fn mark(&self, answer: &mut Map<String, Value>) {
        if !matches!(self, Shown::Fresh(_)) {
            answer.insert("count_unavailable".to_owned(), Value::Bool(true));
        }
    }
}

/// A count value the cache holds: the like count, or every kind's.
trait Cached: Clone + Default {
    /// Every kind's counts (the shared tier keeps the two shapes apart).
    const KINDS: bool;
    /// Read within `age`.
    fn fresh(cache: &CountCache, post: &PostId, age: Age) -> Option<Self>;
    /// Of the last read, whatever it was of (a like count is no answer for every kind).
    fn of(counts: &Counts) -> Option<Self>;
    fn into_counts(self) -> Counts;
}

impl Cached for i64 {
    const KINDS: bool = false;
    fn fresh(cache: &CountCache, post: &PostId, age: Age) -> Option<Self> {
        cache.likes(post, age)
    }
    fn of(counts: &Counts) -> Option<Self> {
        Some(counts.likes())
    }
    fn into_counts(self) -> Counts {
        Counts::Likes(self)
    }
}

impl Cached for KindCounts {
    const KINDS: bool = true;
    fn fresh(cache: &CountCache, post: &PostId, age: Age) -> Option<Self> {
        cache.kinds(post, age)
    }
    fn of(counts: &Counts) -> Option<Self> {
        counts.kinds().cloned()
    }
    fn into_counts(self) -> Counts {
        Counts::Kinds(self)
    }
}

/// One request's counts: those the cache answered, and the posts left to read.
struct Lookup<T> {
    shown: HashMap<PostId, Shown<T>>,
    misses: Vec<PostId>,
}

/// What a lookup shows, and the counts it read from DynamoDB (what the shared tier is given).
struct Settled<T> {
    shown: HashMap<PostId, Shown<T>>,
    read: Vec<(PostId, Counts)>,
}

impl<T: Cached> Lookup<T> {
    fn new(cache: &CountCache, ids: &[PostId], age: Age) -> Self {
        let mut lookup = Lookup {
            shown: HashMap::with_capacity(ids.len()),
            misses: Vec::new(),
        };
        for post in ids {
            match T::fresh(cache, post, age) {
                Some(v) => {
                    lookup.shown.insert(post.clone(), Shown::Fresh(v));
                }
                None => lookup.misses.push(post.clone()),
            }
        }
        lookup
    }

    /// Takes the misses' counts from the shared tier where the cache's rules let them serve a
    /// feed (kept as read when the tier's read was, less a spread: `CountCache::put_aged`,
    /// `SharedCounts::spread`), leaving the rest.
    async fn through_shared(&mut self, cache: &CountCache, shared: &SharedCounts) {
        if self.misses.is_empty() {
            return;
        }
        for (post, counts, age) in shared.get(&self.misses, T::KINDS).await {
            cache.put_aged(&post, counts, age + shared.spread());
        }
        for post in std::mem::take(&mut self.misses) {
            match T::fresh(cache, &post, Age::Feed) {
                Some(v) => {
                    self.shown.insert(post, Shown::Fresh(v));
                }
                None => self.misses.push(post),
            }
        }
    }

    /// Adds what the read of the misses gave, caching each post read (one without an item
    /// counts 0). Only a store bug fails: a throttled or unreachable read leaves its posts
    /// unread.
    fn settle(
        mut self,
        cache: &CountCache,
        got: Result<PartialCounts<T>, StoreError>,
    ) -> Result<Settled<T>, StoreError> {
        let mut got = match got {
            Ok(got) => got,
            Err(StoreError::Unavailable(detail)) => {
                tracing::warn!(%detail, posts = self.misses.len(), "counts unreadable; shown marked");
                PartialCounts {
                    read: HashMap::new(),
                    unread: self.misses.clone(),
                }
            }
            Err(e) => return Err(e),
        };
        if !got.unread.is_empty() {
            let unread = got.unread.len();
            tracing::warn!(unread, "counts left unprocessed (throttled); shown marked");
        }
        let unread: HashSet<&PostId> = got.unread.iter().collect();
        let mut read = Vec::new();
        for post in self.misses {
            let shown = if unread.contains(&post) {
                let last = cache.last(&post).and_then(|c| T::of(&c));
                last.map_or(Shown::Unavailable, Shown::Stale)
            } else {
                let v = got.read.remove(&post).unwrap_or_default();
                let counts = v.clone().into_counts();
                cache.put(&post, counts.clone());
                read.push((post.clone(), counts));
                Shown::Fresh(v)
            };
            self.shown.insert(post, shown);
        }
        Ok(Settled {
            shown: self.shown,
            read,
        })
    }
}

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// The like counts of `ids` (distinct): one batch read of those the cache lacks (as old
    /// as a feed takes them).
    pub(crate) async fn like_counts(
        &self,
        ids: &[PostId],
    ) -> Result<HashMap<PostId, Shown<i64>>, StoreError> {
        let mut lookup = Lookup::<i64>::new(&self.cache, ids, Age::Feed);
        if let Some(shared) = &self.shared {
            lookup.through_shared(&self.cache, shared).await;
        }
        let sent = shared_counts::now_ms();
        let got = match lookup.misses.as_slice() {
            [] => Ok(PartialCounts::all(HashMap::new())),
            misses => self.counts.post_counts_partial(misses).await,
        };
        self.shared_settle(lookup.settle(&self.cache, got)?, sent)
            .await
    }

    /// Gives the shared tier what a feed's lookup read from DynamoDB, the read sent at `sent`.
    async fn shared_settle<T>(
        &self,
        settled: Settled<T>,
        sent: i64,
    ) -> Result<HashMap<PostId, Shown<T>>, StoreError> {
        if let Some(shared) = &self.shared {
            shared.put(&settled.read, sent).await;
        }
        Ok(settled.shown)
    }

    /// Every kind's counts of `ids` (distinct): one batch read of those the cache lacks (as
    /// old as a feed takes them).
    pub(crate) async fn kind_counts_of(
        &self,
        ids: &[PostId],
    ) -> Result<HashMap<PostId, Shown<KindCounts>>, StoreError> {
        let mut lookup = Lookup::<KindCounts>::new(&self.cache, ids, Age::Feed);
        if let Some(shared) = &self.shared {
            lookup.through_shared(&self.cache, shared).await;
        }
        let sent = shared_counts::now_ms();
        let got = match lookup.misses.as_slice() {
            [] => Ok(PartialCounts::all(HashMap::new())),
            misses => self.counts.kind_counts_partial(misses).await.map(arced),
        };
        self.shared_settle(lookup.settle(&self.cache, got)?, sent)
            .await
    }

    /// Every kind's counts of one post: its item's `GetItem`, unless the cache has them.
    pub(crate) async fn kind_counts_of_post(
        &self,
        post: &PostId,
    ) -> Result<Shown<KindCounts>, StoreError> {
        let ids = std::slice::from_ref(post);
        let lookup = Lookup::<KindCounts>::new(&self.cache, ids, Age::Route);
        let got = match lookup.misses.as_slice() {
            [] => Ok(PartialCounts::all(HashMap::new())),
            _ => self.counts.kind_counts(post).await.map(|counts| {
                PartialCounts::all(HashMap::from([(post.clone(), Arc::new(counts))]))
            }),
        };
        let mut shown = lookup.settle(&self.cache, got)?.shown;
        Ok(shown.remove(post).unwrap_or(Shown::Unavailable))
    }
}

fn arced(got: PartialCounts<BTreeMap<String, i64>>) -> PartialCounts<KindCounts> {
    PartialCounts {
        read: got
            .read
            .into_iter()
            .map(|(p, c)| (p, Arc::new(c)))
            .collect(),
        unread: got.unread,
    }
}
