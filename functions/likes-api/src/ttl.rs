//! What an execution environment remembers of the product's decisions for a while (the count
//! of suspended users, a post's policy, a block): each entry trusted for the cache's time, the
//! stale dropped when it is full, then everything.
//!
//! An entry's age is taken on two clocks, and the older answer wins: the monotonic one (which a
//! test can pause), and the wall clock. Lambda freezes an idle execution environment, and
//! whether the monotonic clock counts the frozen time there is not documented; the wall clock
//! is set again on thaw. An environment idle for minutes so never trusts a decision it read
//! before the freeze (a suspension lifted, a home closed) for longer than the cache's time.

use std::collections::HashMap;
use std::hash::Hash;
use std::sync::Mutex;
use std::time::{Duration, SystemTime};

// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

pub struct Ttl<K, V> {
    ttl: Duration,
    capacity: usize,
    entries: Mutex<HashMap<K, (V, Read)>>,
}

/// When an entry's read was sent, on both clocks.
#[derive(Clone, Copy)]
struct Read {
    at: Instant,
    wall: SystemTime,
}

impl Read {
    fn within(&self, ttl: Duration) -> bool {
        // A wall clock set back (an NTP step) says nothing: the monotonic clock decides.
        let wall = SystemTime::now()
            .duration_since(self.wall)
            .unwrap_or(Duration::ZERO);
        self.at.elapsed() < ttl && wall < ttl
    }
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
        let (value, read) = entries.get(key)?;
        read.within(self.ttl).then(|| value.clone())
    }

    /// Keeps `value` for `key` as read at `asked` (when the read was sent: trusted from then).
    pub fn put_at(&self, key: K, value: V, asked: Instant) {
        let Ok(mut entries) = self.entries.lock() else {
            return;
        };
        if entries.len() >= self.capacity {
            let ttl = self.ttl;
            entries.retain(|_, (_, read)| read.within(ttl));
            if entries.len() >= self.capacity {
                entries.clear();
            }
        }
        let wall = SystemTime::now()
            .checked_sub(asked.elapsed())
            .unwrap_or_else(SystemTime::now);
        entries.insert(key, (value, Read { at: asked, wall }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_read_longer_ago_than_the_ttl_on_the_wall_clock_is_not_trusted() {
        let ttl = Duration::from_secs(5);
        let read = Read {
            at: Instant::now(),
            wall: SystemTime::now() - Duration::from_secs(60),
        };
        // The monotonic clock says "just now" (as after a freeze it did not count).
        assert!(!read.within(ttl));
        let fresh = Read {
            at: Instant::now(),
            wall: SystemTime::now(),
        };
        assert!(fresh.within(ttl));
        // A wall clock set back leaves the monotonic clock to decide.
        let ahead = Read {
            at: Instant::now(),
            wall: SystemTime::now() + Duration::from_secs(60),
        };
        assert!(ahead.within(ttl));
    }
}
