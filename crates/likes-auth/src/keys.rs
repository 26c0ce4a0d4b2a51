//! The key set, cached per execution environment and shared by its concurrent requests: fetched
//! on first use, refreshed when a token names a key it lacks (a rotation) — but at most once a
//! minute, so a stream of made-up `kid`s cannot turn every request into a fetch — and when it is
//! an hour old (so a key the issuer withdrew stops working in warm environments too).
//!
//! Requests that find their key never wait for a fetch; requests that need one wait for the
//! single fetch in flight and share its result, instead of each fetching.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;

use crate::error::AuthError;
use crate::fetch::{FetchError, JwksSource};
use crate::jwks::KeySet;

/// Once a set is loaded, at most one fetch this often (for an unknown `kid` or an old set).
pub const MIN_REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// Before any set has loaded, a failed fetch is retried this soon: every request is refused
/// until one succeeds, so waiting a minute would turn a blip into a minute of 503s.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// A set this old is refreshed by the next request (which uses the old set if the fetch fails).
/// API Gateway documents caching keys for up to two hours; an hour keeps us inside that.
pub const MAX_AGE: Duration = Duration::from_secs(3600);

#[derive(Clone)]
struct Loaded {
    set: Arc<KeySet>,
    at: Instant,
}

#[derive(Clone)]
struct Attempt {
    at: Instant,
    failure: Option<FetchError>,
}

/// The cache. Without a source (keys given inline) it never fetches.
pub(crate) struct KeyCache {
    source: Option<Box<dyn JwksSource>>,
    /// Read by every request, written only after a fetch; never held across an await.
    loaded: RwLock<Option<Loaded>>,
    /// The last fetch attempt; held for the whole of a fetch, so fetches never overlap.
    attempts: Mutex<Option<Attempt>>,
}

/// Why a request wants a fetch.
enum Need {
    /// No set yet, or the set lacks the token's `kid`.
    Missing,
    /// The set has the `kid` but is older than [`MAX_AGE`].
    Stale(Loaded),
}

impl KeyCache {
    pub(crate) fn fetched(source: Box<dyn JwksSource>) -> Self {
        Self {
            source: Some(source),
            loaded: RwLock::new(None),
            attempts: Mutex::new(None),
        }
    }

    pub(crate) fn inline(set: KeySet) -> Self {
        Self {
            source: None,
            loaded: RwLock::new(Some(Loaded {
                set: Arc::new(set),
                at: Instant::now(),
            })),
            attempts: Mutex::new(None),
        }
    }

    /// The key set to look `kid` up in: fetched or refreshed first when that is due.
    pub(crate) async fn set_for(&self, kid: &str) -> Result<Arc<KeySet>, AuthError> {
        let loaded = self.loaded.read().await.clone();
        let need = match loaded {
            Some(l) if l.set.contains(kid) => {
                if self.source.is_none() || l.at.elapsed() < MAX_AGE {
                    return Ok(l.set);
                }
                Need::Stale(l)
            }
            _ => Need::Missing,
        };
        let Some(source) = self.source.as_deref() else {
            return Err(AuthError::UnknownKey);
        };
        match need {
            Need::Missing => self.fetch_for(source).await,
            Need::Stale(old) => Ok(self.refresh_stale(old, source).await),
        }
    }

    /// Fetches the set now if none is loaded (and a fetch is due): for a function's start-up.
    pub(crate) async fn prefetch(&self) -> Result<(), AuthError> {
        let Some(source) = self.source.as_deref() else {
            return Ok(());
        };
        if self.loaded.read().await.is_some() {
            return Ok(());
        }
        self.fetch_for(source).await.map(|_| ())
    }

    /// No set yet, or no `kid` in it: fetch if one is due, waiting for a fetch in flight.
    async fn fetch_for(&self, source: &dyn JwksSource) -> Result<Arc<KeySet>, AuthError> {
        let mut last = self.attempts.lock().await;
        // Read after the lock: the fetch we may have waited for is in it.
        let loaded = self.loaded.read().await.clone();
        if let Some(a) = last.as_ref() {
            let interval = if loaded.is_some() {
                MIN_REFRESH_INTERVAL
            } else {
                RETRY_AFTER_FAILURE
            };
            if a.at.elapsed() < interval {
                return match (&loaded, &a.failure) {
                    // Fetched within the minute (perhaps the fetch we waited for): the set
                    // has the kid, or the issuer does not publish it, or it is too soon to
                    // ask again (which is the point).
                    (Some(l), _) => Ok(l.set.clone()),
                    (None, Some(failure)) => Err(AuthError::Unavailable(failure.clone())),
                    // Unreachable: a success leaves a set loaded. Refuse rather than assume.
                    (None, None) => Err(AuthError::UnknownKey),
                };
            }
        }
        match self.fetch(source, &mut last).await {
            Ok(set) => Ok(set),
            Err(failure) => Err(AuthError::Unavailable(failure)),
        }
    }

    /// The set has the key but is old: refresh it unless another request is already fetching
    /// (then use the old set rather than wait); if the fetch fails, keep the old set, because
    /// refusing every token while the issuer is down would be worse than an hour-old set.
    async fn refresh_stale(&self, old: Loaded, source: &dyn JwksSource) -> Arc<KeySet> {
        let Ok(mut last) = self.attempts.try_lock() else {
            return old.set;
        };
        if let Some(l) = self.loaded.read().await.as_ref() {
            if l.at > old.at {
                return l.set.clone();
            }
        }
        if matches!(last.as_ref(), Some(a) if a.at.elapsed() < MIN_REFRESH_INTERVAL) {
            return old.set;
        }
        self.fetch(source, &mut last).await.unwrap_or(old.set)
    }

    /// One fetch, recorded as the last attempt; a good set replaces the cached one.
    async fn fetch(
        &self,
        source: &dyn JwksSource,
        last: &mut Option<Attempt>,
    ) -> Result<Arc<KeySet>, FetchError> {
        let at = Instant::now();
        let result = source.fetch().await.and_then(|body| {
            KeySet::parse(&body).map_err(|e| FetchError::Unreadable(e.to_string()))
        });
        match result {
            Ok(set) => {
                tracing::info!(keys = set.len(), skipped = set.skipped(), "JWKS fetched");
                let set = Arc::new(set);
                *self.loaded.write().await = Some(Loaded {
                    set: set.clone(),
                    at,
                });
                *last = Some(Attempt { at, failure: None });
                Ok(set)
            }
            Err(failure) => {
                tracing::warn!(error = %failure, "JWKS fetch failed");
                *last = Some(Attempt {
                    at,
                    failure: Some(failure.clone()),
                });
                Err(failure)
            }
        }
    }
}
