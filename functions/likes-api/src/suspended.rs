//! A suspended user's writes refused (`403 suspended`; `likes_core::moderation`), at no cost
//! per like while nobody is suspended: each execution environment reads the count of suspended
//! users at most once per `GATE_TTL`, and only while it is above zero the caller's own state
//! (cached per user as long). A suspension is so refused everywhere within two `GATE_TTL`s of
//! being recorded; the worker's last sweep waits that out (`SUSPENSION_SETTLE`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use likes_core::moderation::{Suspensions, GATE_TTL};
use likes_core::{StoreError, UserId};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

/// Users whose state an environment remembers; past that, the stale go, then all.
const USERS: usize = 10_000;

pub struct Gate {
    store: Arc<dyn Suspensions>,
    count: Mutex<Option<(i64, Instant)>>,
    users: Mutex<HashMap<UserId, (bool, Instant)>>,
}

impl Gate {
    pub fn new(store: Arc<dyn Suspensions>) -> Self {
        Self {
            store,
            count: Mutex::default(),
            users: Mutex::default(),
        }
    }

    /// Whether `user`'s writes are refused.
    pub async fn refuses(&self, user: &UserId) -> Result<bool, StoreError> {
        if self.suspended_count().await? <= 0 {
            return Ok(false);
        }
        let cached = self
            .users
            .lock()
            .ok()
            .and_then(|u| u.get(user).copied())
            .filter(|(_, at)| at.elapsed() < GATE_TTL);
        if let Some((suspended, _)) = cached {
            return Ok(suspended);
        }
        let suspended = self.store.is_suspended(user).await?;
        if let Ok(mut users) = self.users.lock() {
            if users.len() >= USERS {
                users.retain(|_, (_, at)| at.elapsed() < GATE_TTL);
                if users.len() >= USERS {
                    users.clear();
                }
            }
            users.insert(user.clone(), (suspended, Instant::now()));
        }
        Ok(suspended)
    }

    async fn suspended_count(&self) -> Result<i64, StoreError> {
        let cached = self
            .count
            .lock()
            .ok()
            .and_then(|c| *c)
            .filter(|(_, at)| at.elapsed() < GATE_TTL);
        if let Some((n, _)) = cached {
            return Ok(n);
        }
        let n = self.store.suspended_count().await?;
        if let Ok(mut count) = self.count.lock() {
            *count = Some((n, Instant::now()));
        }
        Ok(n)
    }
}
