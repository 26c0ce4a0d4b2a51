//! The key set, cached per execution environment and shared by its concurrent requests: fetched
//! on first use, refreshed when a token names a key it lacks (a rotation) — but never sooner
//! than [`REFRESH_FLOOR`] plus up to [`REFRESH_JITTER`] after the last fetch began, so a flood of
//! made-up `kid`s costs at most 30 fetches a minute, not one per request — and when it is
//! [`MAX_AGE`] old (so a key the issuer withdrew stops working in warm environments too).
//!
//! Requests that find their key never wait for a fetch (but for the one request per environment
//! that finds the set old, which refreshes it); requests that need one wait for the single fetch
//! in flight and share its result, instead of each fetching. A request whose key is
//! missing while the next fetch is not yet due is refused at once, not held until it is due: a
//! forged `kid` must not buy seconds of the function's time.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{Mutex, RwLock};
use tokio::time::Instant;

use crate::error::AuthError;
use crate::fetch::{FetchError, JwksSource};
use crate::jwks::KeySet;

/// After a fetch, the next may begin this long after it began (plus the jitter): a token signed
/// with a key published a moment ago is accepted within this plus [`REFRESH_JITTER`] plus one
/// fetch (3 s and a round trip; the fetch's deadline is 2 s), since providers such as
/// oidc-provider and Keycloak sign with a new key as soon as they publish it.
pub const REFRESH_FLOOR: Duration = Duration::from_secs(2);
/// Up to this much, drawn at random per fetch, is added to the wait before the next one: the
/// environments a flood of forged `kid`s reaches at once then do not fetch in step.
pub const REFRESH_JITTER: Duration = Duration::from_secs(1);
/// After a failed fetch, the next waits this long (plus the jitter): before any set has loaded
/// every request is refused until one succeeds, so this stays short, but an issuer that is down
/// is not asked every two seconds by every environment.
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
/// A set this old is refreshed by the next request (which uses the old set if the fetch fails):
/// a key the issuer withdrew is refused within this, plus one fetch, in a warm environment. One
/// fetch per environment per 5 minutes (under 0.01 per second even with a thousand warm
/// environments) is nothing to the issuer; API Gateway documents caching keys up to two hours.
pub const MAX_AGE: Duration = Duration::from_secs(300);

#[derive(Clone)]
struct Loaded {
    set: Arc<KeySet>,
    at: Instant,
}

#[derive(Clone)]
struct Attempt {
    failure: Option<FetchError>,
    /// When the next fetch may begin.
    next: Instant,
}

impl Attempt {
    fn due(&self) -> bool {
        Instant::now() >= self.next
    }
}

/// A random share of [`REFRESH_JITTER`] (fastrand: the SDK's retry jitter already links it).
fn jitter() -> Duration {
    REFRESH_JITTER.mul_f64(fastrand::f64())
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
            if !a.due() {
                return match (&loaded, &a.failure) {
                    // The last fetch failed a moment ago: the key may well be published, so
                    // the server's problem (503, retry), not the token's.
                    (_, Some(failure)) => Err(AuthError::Unavailable(failure.clone())),
                    // Fetched a moment ago (perhaps the fetch we waited for): the set has the
                    // kid, or the issuer does not publish it, or it is too soon to ask again
                    // (which is the point).
                    (Some(l), None) => Ok(l.set.clone()),
                    // A fetch began but never finished (its request was dropped).
                    (None, None) => Err(AuthError::Unavailable(FetchError::Request(
                        "the last fetch did not finish".into(),
                    ))),
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
        if matches!(last.as_ref(), Some(a) if !a.due()) {
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
        // Noted before the await: a request dropped mid-fetch still counts against the floor.
        *last = Some(Attempt {
            failure: None,
            next: at + REFRESH_FLOOR + jitter(),
        });
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
                *last = Some(Attempt {
                    failure: None,
                    next: at + REFRESH_FLOOR + jitter(),
                });
                Ok(set)
            }
            Err(failure) => {
                tracing::warn!(error = %failure, "JWKS fetch failed");
                *last = Some(Attempt {
                    failure: Some(failure.clone()),
                    next: at + RETRY_AFTER_FAILURE + jitter(),
                });
                Err(failure)
            }
        }
    }
}
