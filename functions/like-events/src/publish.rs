//! Putting a batch's events on the bus: invariants 2 and 8.
//!
//! Entries go out in stream order per (user, post): each pair's entries stay in one lane, a
//! lane sends its calls one after another (at most ten entries each), and lanes run
//! concurrently. A call's refused entries — and only those — are sent again, a few times with
//! a backoff; an entry still refused then is failed, and with it its record. Entries of records
//! after the lowest failed one are not sent at all (they will be redelivered and sent then),
//! nor is a call started too close to the invocation's deadline.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use likes_core::store::events::{BusEntry, EventBus, BUS_BATCH_MAX};
use tokio::time::Instant;

/// Attempts at an entry within one invocation.
const ATTEMPTS: u32 = 3;

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(50 << attempt.min(4))
}

/// One entry to put, for the record at `record` (its index in the batch).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Planned {
    pub record: usize,
    /// Entries of one lane keep their order.
    pub lane: u64,
    pub entry: BusEntry,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fate {
    Accepted,
    /// Refused every time it was tried, or its calls failed.
    Failed,
    /// Not sent: its record is after a failed one, or the deadline was near.
    Unsent,
}

#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Published {
    /// Per planned entry, in order.
    pub fates: Vec<Option<Fate>>,
    /// Entries sent again after a refusal or a failed call.
    pub retried: usize,
}

impl Published {
    pub fn count(&self, fate: Fate) -> usize {
        self.fates.iter().filter(|f| **f == Some(fate)).count()
    }

    /// The lowest record with an entry not accepted.
    pub fn lowest_unpublished(&self, planned: &[Planned]) -> Option<usize> {
        planned
            .iter()
            .zip(&self.fates)
            .filter(|(_, f)| **f != Some(Fate::Accepted))
            .map(|(p, _)| p.record)
            .min()
    }
}

/// Lanes at once, and when to stop starting calls: `reserve` (a call's and the state writes'
/// time) before the deadline.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    pub lanes: usize,
    pub deadline: Option<Instant>,
    pub reserve: Duration,
}

pub async fn publish<B: EventBus>(bus: &B, planned: &[Planned], limits: Limits) -> Published {
    let lanes = limits.lanes.max(1) as u64;
    let mut by_lane: Vec<Vec<usize>> = vec![Vec::new(); lanes as usize];
    for (i, p) in planned.iter().enumerate() {
        by_lane[(p.lane % lanes) as usize].push(i);
    }
    let lowest_failed = AtomicUsize::new(usize::MAX);
    let runs = by_lane
        .iter()
        .filter(|l| !l.is_empty())
        .map(|lane| run_lane(bus, planned, lane, limits, &lowest_failed));
    let mut out = Published {
        fates: vec![None; planned.len()],
        retried: 0,
    };
    for (fates, retried) in futures::future::join_all(runs).await {
        out.retried += retried;
        for (i, f) in fates {
            out.fates[i] = Some(f);
        }
    }
    out
}

async fn run_lane<B: EventBus>(
    bus: &B,
    planned: &[Planned],
    lane: &[usize],
    limits: Limits,
    lowest_failed: &AtomicUsize,
) -> (Vec<(usize, Fate)>, usize) {
    let mut fates = Vec::with_capacity(lane.len());
    let mut retried = 0;
    let mut queue: &[usize] = lane;
    while !queue.is_empty() {
        let late = limits
            .deadline
            .is_some_and(|d| d.saturating_duration_since(Instant::now()) < limits.reserve);
        // Entries after a failed record are redelivered anyway: do not pay for them twice.
        let floor = lowest_failed.load(Ordering::Relaxed);
        let (send, skip): (Vec<usize>, Vec<usize>) = queue
            .iter()
            .take(BUS_BATCH_MAX)
            .partition(|&&i| !late && planned[i].record <= floor);
        queue = &queue[send.len() + skip.len()..];
        fates.extend(skip.into_iter().map(|i| (i, Fate::Unsent)));
        let mut pending = send;
        for attempt in 0..ATTEMPTS {
            if pending.is_empty() {
                break;
            }
            if attempt > 0 {
                retried += pending.len();
                tokio::time::sleep(backoff(attempt)).await;
            }
            let entries: Vec<BusEntry> =
                pending.iter().map(|&i| planned[i].entry.clone()).collect();
            pending = match bus.put(&entries).await {
                Ok(answers) if answers.len() == pending.len() => {
                    let mut refused = Vec::new();
                    for (&i, answer) in pending.iter().zip(answers) {
                        match answer {
                            None => fates.push((i, Fate::Accepted)),
                            Some(code) => {
                                tracing::warn!(
                                    code,
                                    record = planned[i].record,
                                    "an event was refused"
                                );
                                refused.push(i);
                            }
                        }
                    }
                    refused
                }
                Ok(_) => {
                    tracing::warn!(
                        entries = pending.len(),
                        "PutEvents answered for other entries"
                    );
                    pending
                }
                Err(e) => {
                    tracing::warn!(error = %e, entries = pending.len(), "PutEvents failed");
                    pending
                }
            };
        }
        for i in pending {
            lowest_failed.fetch_min(planned[i].record, Ordering::Relaxed);
            fates.push((i, Fate::Failed));
        }
    }
    (fates, retried)
}
