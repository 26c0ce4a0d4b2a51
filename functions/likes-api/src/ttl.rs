//! What an execution environment remembers of the product's decisions for a while (the count
//! of suspended users, a post's policy, a block): each entry trusted for the cache's time, the
//! stale dropped when it is full, then everything.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::Duration;

// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

pub struct Ttl<K, V> {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, (V, Instant)>>,
}

impl<K: Eq + Hash, V: Clone> Ttl<K, V> {
    pub fn new(ttl: Duration, capacity: usize) -> Self {
        Self {
            ttl,
            capacity,
            entries: Mutex::default(),
        }
    }

    /// The value kept for `key`, if read within the cache's time.
    pub fn get(&self, key: &K) -> Option<V> {
        let entries = self.entries.lock().ok()?;
        let (value, at) = entries.get(key)?;
        (at.elapsed() < self.ttl).then(|| value.clone())
    }

    /// Keeps `value` for `key` as read at `asked` (when the read was sent: trusted from then).
    pub fn put_at(&self, key: K, value: V, asked: Instant) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= self.capacity {
            let ttl = self.ttl;
            entries.retain(|_, (_, at)| at.elapsed() < ttl);
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        entries.insert(key, (value, asked));
    }
}
