//! The posts' policies in force (`likes_core::policy`): likes refused on a post whose author
//! turned them off (`403 likes_disabled`), counts shown only to the author where the author
//! keeps them (`like_count: null`, `count_hidden: true`), likers listed only to the author
//! where they are private (`403 likers_private`).
//!
//! At no cost while no post has a policy: each execution environment reads the count of posts
//! with one at most once per `POLICY_TTL`, and only while it is above zero each post's policy
//! (cached per post as long; a summary's through the shared tier when there is one, so that the
//! fleet, not each environment, reads a post once per `POLICY_TTL`: `policy_tier`). Both reads are strong and each is trusted from before it was sent,
//! so a change is followed everywhere within `POLICY_TTL` and a read's time: within 5 s.
//!
//! A read that fails refuses a write (503) but never shows what a policy may hide: a count then
//! answers hidden, a list of likers 503.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::future::join_all;
use likes_core::policy::{Audience, Defaults, InForce, Policies, Policy};
use likes_core::{CountsRead, PostId, ReactionsStore, StoreError, UserId};
use serde_json::{json, Map, Value};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

use crate::policy_tier;
use crate::shared_counts::{is_slow, now_ms, SharedCounts};
use crate::ttl::Ttl;
use crate::{App, Failure};

/// How long an environment trusts what it read: the count of posts with a policy, and a post's.
pub const POLICY_TTL: Duration = Duration::from_millis(2_500);
/// Posts whose policy an environment remembers.
const POSTS: usize = 50_000;

pub struct PolicyGate {
    store: Option<Arc<dyn Policies>>,
    defaults: Defaults,
    count: Ttl<(), i64>,
    posts: Ttl<PostId, Option<likes_core::policy::Policy>>,
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
            count: Ttl::new(POLICY_TTL, 1),
            posts: Ttl::new(POLICY_TTL, POSTS),
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
        if let Some(policy) = self.posts.get(post) {
            return Ok(InForce::of(policy, self.defaults));
        }
        let asked = Instant::now();
        let policy = store.policy(post).await?;
        self.posts.put_at(post.clone(), policy.clone(), asked);
        Ok(InForce::of(policy, self.defaults))
    }

    /// The post's policy in force for showing counts: one that could not be read hides them.
    pub async fn for_counts(&self, post: &PostId) -> InForce {
        match self.in_force(post).await {
            Ok(policy) => policy,
            Err(e) => {
                tracing::warn!(post_id = %post, error = %e, "a post's policy unread: its counts hidden");
                closed()
            }
        }
    }

    /// Each post's policy in force for showing counts, read at once (the count first, once):
    /// with a shared tier, those this environment lacks from it first (`policy_tier`).
    pub async fn for_counts_all(
        &self,
        posts: &[PostId],
        shared: Option<&SharedCounts>,
    ) -> Vec<InForce> {
        let Some(store) = &self.store else {
            return vec![InForce::of(None, self.defaults); posts.len()];
        };
        match self.policy_count(store.as_ref()).await {
            Ok(n) if n <= 0 => vec![InForce::of(None, self.defaults); posts.len()],
            Ok(_) => self.all_in_force(store.as_ref(), posts, shared).await,
            Err(e) => {
                tracing::warn!(error = %e, "the posts' policies unread: the summary's counts hidden");
                vec![closed(); posts.len()]
            }
        }
    }

    /// Each post's policy: this environment's if it has it; the tier's if it keeps one, trusted
    /// from the read that put it there; else one strong read each, at once, then shared. A post
    /// whose policy cannot be read shows no counts.
    async fn all_in_force(
        &self,
        store: &dyn Policies,
        posts: &[PostId],
        shared: Option<&SharedCounts>,
    ) -> Vec<InForce> {
        let mut known: HashMap<PostId, Option<Policy>> = HashMap::new();
        let mut missing = Vec::new();
        for post in posts {
            match self.posts.get(post) {
                Some(policy) => {
                    known.insert(post.clone(), policy);
                }
                None => missing.push(post.clone()),
            }
        }
        if let Some(shared) = shared {
            missing = self.take_from_tier(shared, missing, &mut known).await;
        }
        let (sent, asked) = (now_ms(), Instant::now());
        let reads = join_all(missing.iter().map(|p| store.policy(p))).await;
        let mut entries = Vec::new();
        for (post, read) in missing.into_iter().zip(reads) {
            match read {
                Ok(policy) => {
                    if let Some(value) = policy_tier::encode(policy.as_ref(), sent) {
                        entries.push((policy_tier::key(&post), value));
                    }
                    self.posts.put_at(post.clone(), policy.clone(), asked);
                    known.insert(post, policy);
                }
                Err(e) => {
                    tracing::warn!(post_id = %post, error = %e, "a post's policy unread: its counts hidden");
                }
            }
        }
        if let (Some(shared), false) = (shared, is_slow(sent)) {
            shared.put_raw(&entries, POLICY_TTL).await;
        }
        posts
            .iter()
            .map(|p| match known.get(p) {
                Some(policy) => InForce::of(policy.clone(), self.defaults),
                None => closed(),
            })
            .collect()
    }

    /// Takes what the tier keeps of `missing` into `known` (and this environment's cache, kept
    /// as read then, less the clocks' skew and a spread); returns the posts left to read.
    async fn take_from_tier(
        &self,
        shared: &SharedCounts,
        missing: Vec<PostId>,
        known: &mut HashMap<PostId, Option<Policy>>,
    ) -> Vec<PostId> {
        let keys: Vec<String> = missing.iter().map(policy_tier::key).collect();
        let got = shared.get_raw(&keys).await;
        let now = now_ms();
        let renew = POLICY_TTL / 6;
        let fresh_for = POLICY_TTL - policy_tier::CLOCK_SKEW - renew;
        let mut unread = Vec::new();
        for (post, raw) in missing.into_iter().zip(got) {
            match raw
                .as_deref()
                .and_then(|r| policy_tier::decode(r, now, fresh_for))
            {
                Some((policy, age)) => {
                    let older = age + policy_tier::CLOCK_SKEW + renew.mul_f64(fastrand::f64());
                    if let Some(asked) = Instant::now().checked_sub(older) {
                        self.posts.put_at(post.clone(), policy.clone(), asked);
                    }
                    known.insert(post, policy);
                }
                None => unread.push(post),
            }
        }
        unread
    }

    async fn policy_count(&self, store: &dyn Policies) -> Result<i64, StoreError> {
        if let Some(n) = self.count.get(&()) {
            return Ok(n);
        }
        let asked = Instant::now();
        let n = store.policy_count().await?;
        self.count.put_at((), n, asked);
        Ok(n)
    }
}

/// What a post whose policy could not be read shows: no count to anyone.
fn closed() -> InForce {
    let hidden = Defaults {
        counts: Audience::Author,
        likers: Audience::Author,
    };
    InForce::of(None, hidden)
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

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// The post's count as `me` may see it, and whether the answer is `me`'s alone to keep
    /// (the count of a post whose author keeps it: the author's answer must not reach a shared
    /// cache, nor anyone else's).
    pub(crate) async fn count_as_shown(
        &self,
        post: &PostId,
        me: &UserId,
    ) -> Result<(Value, bool), Failure> {
        let policy = self.policies.for_counts(post).await;
        if policy.counts == Audience::Public {
            return Ok((self.count(post).await?, false));
        }
        if policy.shows_counts_to(me) {
            return Ok((self.count(post).await?, true));
        }
        let mut hidden = json!({ "post_id": post, "like_count": null });
        if let Some(answer) = hidden.as_object_mut() {
            hide_counts(answer);
        }
        Ok((hidden, true))
    }

    /// The post's reactions as `me` may see them: the counts hidden where the author keeps them.
    pub(crate) async fn reactions_as_shown(&self, post: &PostId, me: &UserId) -> crate::Answer {
        let (answer, policy) = futures::join!(
            self.post_reactions(post, me),
            self.policies.for_counts(post)
        );
        let mut answer = answer?;
        if let (false, Some(a)) = (policy.shows_counts_to(me), answer.as_object_mut()) {
            hide_counts(a);
        }
        Ok(answer)
    }
}
