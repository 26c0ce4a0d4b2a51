//! The posts' policies in force (`likes_core::policy`): likes refused on a post whose author
//! turned them off (`403 likes_disabled`), counts shown only to the author where the author
//! keeps them (`like_count: null`, `count_hidden: true`), likers listed only to the author
//! where they are private (`403 likers_private`).
//!
//! At no cost while no post has a policy: each execution environment reads the count of posts
//! with one at most once per `POLICY_TTL`, and only while it is above zero each post's policy
//! (cached per post as long). A change takes effect everywhere within two `POLICY_TTL`s.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::try_join_all;
use likes_core::policy::{Defaults, InForce, Policies, Policy};
use likes_core::{PostId, StoreError};
use serde_json::{Map, Value};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

/// How long an environment trusts what it read: the count of posts with a policy, and a post's.
pub const POLICY_TTL: Duration = Duration::from_millis(2_500);
/// Posts whose policy an environment remembers; past that, the stale go, then all.
const POSTS: usize = 50_000;

type Cached<T> = Mutex<Option<(T, Instant)>>;

pub struct PolicyGate {
    store: Option<Arc<dyn Policies>>,
    defaults: Defaults,
    count: Cached<i64>,
    posts: Mutex<HashMap<PostId, (Option<Policy>, Instant)>>,
}

impl Default for PolicyGate {
    fn default() -> Self {
        Self::new(None, Defaults::default())
    }
}

impl PolicyGate {
    pub fn new(store: Option<Arc<dyn Policies>>, defaults: Defaults) -> Self {
        Self {
            store,
            defaults,
            count: Mutex::default(),
            posts: Mutex::default(),
        }
    }

    /// The post's policy in force.
    pub async fn in_force(&self, post: &PostId) -> Result<InForce, StoreError> {
        let Some(store) = &self.store else {
            return Ok(InForce::of(None, self.defaults));
        };
        if self.policy_count(store.as_ref()).await? <= 0 {
            return Ok(InForce::of(None, self.defaults));
        }
        let cached = self
            .posts
            .lock()
            .ok()
            .and_then(|p| p.get(post).cloned())
            .filter(|(_, at)| at.elapsed() < POLICY_TTL);
        if let Some((policy, _)) = cached {
            return Ok(InForce::of(policy, self.defaults));
        }
        let policy = store.policy(post).await?;
        if let Ok(mut posts) = self.posts.lock() {
            if posts.len() >= POSTS {
                posts.retain(|_, (_, at)| at.elapsed() < POLICY_TTL);
                if posts.len() >= POSTS {
                    posts.clear();
                }
            }
            posts.insert(post.clone(), (policy.clone(), Instant::now()));
        }
        Ok(InForce::of(policy, self.defaults))
    }

    /// Each post's policy in force, read at once (the count first, once).
    pub async fn in_force_all(&self, posts: &[PostId]) -> Result<Vec<InForce>, StoreError> {
        let any = match &self.store {
            Some(store) => self.policy_count(store.as_ref()).await? > 0,
            None => false,
        };
        if !any {
            return Ok(vec![InForce::of(None, self.defaults); posts.len()]);
        }
        try_join_all(posts.iter().map(|p| self.in_force(p))).await
    }

    async fn policy_count(&self, store: &dyn Policies) -> Result<i64, StoreError> {
        let cached = self
            .count
            .lock()
            .ok()
            .and_then(|c| *c)
            .filter(|(_, at)| at.elapsed() < POLICY_TTL);
        if let Some((n, _)) = cached {
            return Ok(n);
        }
        let n = store.policy_count().await?;
        if let Ok(mut count) = self.count.lock() {
            *count = Some((n, Instant::now()));
        }
        Ok(n)
    }
}

/// An answer's counts hidden, as a post whose counts are its author's alone shows them to
/// anyone else: `like_count` and every kind's count null, `count_hidden: true`.
pub fn hide_counts(answer: &mut Map<String, Value>) {
    for field in ["like_count", "reactions", "counts", "total"] {
        if answer.contains_key(field) {
            answer.insert(field.to_owned(), Value::Null);
        }
    }
    // What was hidden cannot be unavailable too.
    answer.remove("count_unavailable");
    answer.insert("count_hidden".to_owned(), Value::Bool(true));
}
