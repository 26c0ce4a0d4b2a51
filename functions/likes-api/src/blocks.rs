//! Blocks in force (`likes_core::block`): a blocked user's like or reaction of the blocker's
//! post refused (`403 blocked`; the author known from the post's policy), and the blocked user
//! left out of who liked or reacted to the blocker's posts when the blocker asks. Counts are
//! unchanged by a block.
//!
//! At no cost while nobody ever blocked anyone: each execution environment reads the count of
//! pairs at most once per `POLICY_TTL`, and only while it is above zero the pairs it needs
//! (cached as long): a like of a post with a known author one pair, a page of the author's own
//! likers one pair per liker listed, read at once.

use std::collections::HashSet;
use std::sync::Arc;

use futures::future::try_join_all;
use likes_core::block::Blocks;
use likes_core::{StoreError, UserId};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

use crate::policies::POLICY_TTL;
use crate::ttl::Ttl;

/// Pairs an environment remembers.
const PAIRS: usize = 50_000;

pub struct BlockGate {
    store: Option<Arc<dyn Blocks>>,
    count: Ttl<(), i64>,
    pairs: Ttl<(UserId, UserId), bool>,
}

impl Default for BlockGate {
    fn default() -> Self {
        Self::new(None)
    }
}

impl BlockGate {
    pub fn new(store: Option<Arc<dyn Blocks>>) -> Self {
        Self {
            store,
            count: Ttl::new(POLICY_TTL, 1),
            pairs: Ttl::new(POLICY_TTL, PAIRS),
        }
    }

    /// Whether `blocker` blocks `blocked`.
    pub async fn blocks(&self, blocker: &UserId, blocked: &UserId) -> Result<bool, StoreError> {
        match &self.store {
            Some(store) if self.any(store.as_ref()).await? => {
                self.pair(store.as_ref(), blocker, blocked).await
            }
            _ => Ok(false),
        }
    }

    /// Which of `users` `blocker` blocks.
    pub async fn blocked_among(
        &self,
        blocker: &UserId,
        users: impl Iterator<Item = &UserId>,
    ) -> Result<HashSet<UserId>, StoreError> {
        let Some(store) = &self.store else {
            return Ok(HashSet::new());
        };
        if !self.any(store.as_ref()).await? {
            return Ok(HashSet::new());
        }
        let users: Vec<&UserId> = users.collect();
        let blocked = users.iter().map(|u| self.pair(store.as_ref(), blocker, u));
        let blocked = try_join_all(blocked).await?;
        Ok(users
            .into_iter()
            .zip(blocked)
            .filter(|(_, b)| *b)
            .map(|(u, _)| u.clone())
            .collect())
    }

    async fn any(&self, store: &dyn Blocks) -> Result<bool, StoreError> {
        if let Some(n) = self.count.get(&()) {
            return Ok(n > 0);
        }
        let asked = Instant::now();
        let n = store.pair_count().await?;
        self.count.put_at((), n, asked);
        Ok(n > 0)
    }

    async fn pair(
        &self,
        store: &dyn Blocks,
        blocker: &UserId,
        blocked: &UserId,
    ) -> Result<bool, StoreError> {
        let key = (blocker.clone(), blocked.clone());
        if let Some(b) = self.pairs.get(&key) {
            return Ok(b);
        }
        let asked = Instant::now();
        let b = store.blocks(blocker, blocked).await?;
        self.pairs.put_at(key, b, asked);
        Ok(b)
    }
}
