//! The events function's stores in memory (suppression, milestones) with the conditions'
//! semantics, and an event bus that keeps what it accepted and refuses what it is told to.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use super::poisoned;
use crate::ids::PostId;
use crate::store::events::{
    BusEntry, EventBus, MilestoneState, MilestoneStore, Pair, PairState, SuppressionStore,
};
use crate::store::StoreError;

/// The suppression items. A clone is the same table.
#[derive(Debug, Default, Clone)]
pub struct MemorySuppression {
    items: Arc<Mutex<HashMap<Pair, (PairState, i64)>>>,
}

impl MemorySuppression {
    /// A pair's state and when it expires.
    pub fn get_now(&self, pair: &Pair) -> Option<(PairState, i64)> {
        self.items.lock().ok()?.get(pair).cloned()
    }
}

/// What the condition of a pair's write compares: its current window's like and unlike.
fn version(s: &PairState) -> Option<(&crate::seq::SeqNo, Option<&crate::seq::SeqNo>)> {
    s.current
        .as_ref()
        .map(|e| (&e.notified, e.retracted.as_ref()))
}

impl SuppressionStore for MemorySuppression {
    async fn read_pairs(&self, pairs: &[Pair]) -> Result<HashMap<Pair, PairState>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(pairs
            .iter()
            .filter_map(|p| items.get(p).map(|(s, _)| (p.clone(), s.clone())))
            .collect())
    }

    async fn write_pair(
        &self,
        pair: &Pair,
        seen: &PairState,
        new: &PairState,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let stored = items.get(pair).map(|(s, _)| s.clone()).unwrap_or_default();
        if version(&stored) != version(seen) {
            return Ok(false);
        }
        items.insert(pair.clone(), (new.clone(), expires_at));
        Ok(true)
    }
}

/// The milestone items. A clone is the same table.
#[derive(Debug, Default, Clone)]
pub struct MemoryMilestones {
    items: Arc<Mutex<HashMap<PostId, MilestoneState>>>,
}

impl MemoryMilestones {
    pub fn get_now(&self, post: &PostId) -> Option<MilestoneState> {
        self.items.lock().ok()?.get(post).cloned()
    }
}

impl MilestoneStore for MemoryMilestones {
    async fn read_milestones(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, MilestoneState>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(posts
            .iter()
            .filter_map(|p| items.get(p).map(|s| (p.clone(), s.clone())))
            .collect())
    }

    async fn record_milestone(
        &self,
        post: &PostId,
        new: &MilestoneState,
    ) -> Result<bool, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let higher = items.get(post).is_none_or(|s| s.announced < new.announced);
        if higher {
            items.insert(post.clone(), new.clone());
        }
        Ok(higher)
    }
}

/// What the bus does to the next calls: counters, used up one by one.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BusFaults {
    /// The next this-many entries are refused (`ThrottlingException`), whatever their call.
    pub refuse_entries: usize,
    /// The next this-many calls fail as a whole; nothing of them is accepted.
    pub fail_calls: usize,
    /// The next this-many calls are accepted, but their answer is lost (the caller sees an
    /// error: it cannot know its entries went through).
    pub lose_answers: usize,
}

/// An event bus that keeps every entry it accepted, in order. A clone is the same bus.
#[derive(Debug, Default, Clone)]
pub struct MemoryBus {
    accepted: Arc<Mutex<Vec<BusEntry>>>,
    faults: Arc<Mutex<BusFaults>>,
    calls: Arc<Mutex<usize>>,
}

impl MemoryBus {
    pub fn set_faults(&self, faults: BusFaults) {
        if let Ok(mut f) = self.faults.lock() {
            *f = faults;
        }
    }

    /// Every entry accepted so far, in order.
    pub fn accepted(&self) -> Vec<BusEntry> {
        self.accepted.lock().map(|a| a.clone()).unwrap_or_default()
    }

    /// Calls made so far.
    pub fn calls(&self) -> usize {
        self.calls.lock().map(|c| *c).unwrap_or(0)
    }
}

impl EventBus for MemoryBus {
    async fn put(&self, entries: &[BusEntry]) -> Result<Vec<Option<String>>, StoreError> {
        if let Ok(mut c) = self.calls.lock() {
            *c += 1;
        }
        let mut faults = self.faults.lock().map_err(|_| poisoned())?;
        if faults.fail_calls > 0 {
            faults.fail_calls -= 1;
            return Err(StoreError::Unavailable("injected: the call failed".into()));
        }
        let mut accepted = self.accepted.lock().map_err(|_| poisoned())?;
        let mut out = Vec::with_capacity(entries.len());
        for e in entries {
            if faults.refuse_entries > 0 {
                faults.refuse_entries -= 1;
                out.push(Some("ThrottlingException".to_owned()));
            } else {
                accepted.push(e.clone());
                out.push(None);
            }
        }
        if faults.lose_answers > 0 {
            faults.lose_answers -= 1;
            return Err(StoreError::OutcomeUnknown(
                "injected: the answer was lost".into(),
            ));
        }
        Ok(out)
    }
}
