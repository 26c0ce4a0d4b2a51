//! A suspended user's writes refused (`403 suspended`; `likes_core::moderation`), at no cost
//! per like while nobody is suspended: each execution environment reads the count of suspended
//! users at most once per `GATE_TTL`, and only while it is above zero the caller's own state
//! (cached per user as long). A suspension is so refused everywhere within two `GATE_TTL`s of
//! being recorded; the worker's last sweep waits that out (`SUSPENSION_SETTLE`).

use std::sync::Arc;

use likes_core::moderation::{Suspensions, GATE_TTL};
use likes_core::{StoreError, UserId};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

use crate::ttl::Ttl;

/// Users whose state an environment remembers; past that, the stale go, then all.
const USERS: usize = 10_000;

pub struct Gate {
    store: Arc<dyn Suspensions>,
    count: Ttl<(), i64>,
    users: Ttl<UserId, bool>,
}

impl Gate {
    pub fn new(store: Arc<dyn Suspensions>) -> Self {
        Self {
            store,
            count: Ttl::new(GATE_TTL, 1),
            users: Ttl::new(GATE_TTL, USERS),
        }
    }

    /// Whether `user`'s writes are refused.
    pub async fn refuses(&self, user: &UserId) -> Result<bool, StoreError> {
        if self.suspended_count().await? <= 0 {
            return Ok(false);
        }
        if let Some(suspended) = self.users.get(user) {
            return Ok(suspended);
        }
        let asked = Instant::now();
        let suspended = self.store.is_suspended(user).await?;
        self.users.put_at(user.clone(), suspended, asked);
        Ok(suspended)
    }

    async fn suspended_count(&self) -> Result<i64, StoreError> {
        if let Some(n) = self.count.get(&()) {
            return Ok(n);
        }
        let asked = Instant::now();
        let n = self.store.suspended_count().await?;
        self.count.put_at((), n, asked);
        Ok(n)
    }
}
