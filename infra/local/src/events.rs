//! Like events, played locally: the events function (`like-events`) invoked by its own stream
//! mapping as Lambda invokes it (the function's answer serialised, a panic or an invocation
//! past its timeout a function error), and the feed behind `GET /_local/events`: every event the
//! emulator's bus accepted, as a rule matching all of them would deliver it, kept here (the most
//! recent [`FEED_SIZE`]) for a person watching and for the tests.
//!
//! The feed is kept as the bus answers, not read back through a rule and a queue: the
//! emulator's `ReceiveMessage` looks at every message waiting on each call, so a queue read ten
//! at a time fell behind any burst and slowed every request behind it (3,634 messages waiting
//! after 1,000 requests). What EventBridge's rules deliver is tested on the emulator by the events
//! function's own tests (`functions/like-events/tests/events/events.rs`).

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use like_events::{BatchReport, LikeEvents};
use likes_core::store::events::{
    BusEntry, CountsProgress, EventBus, MilestoneStore, SuppressionStore,
};
use likes_core::StoreError;
use serde_json::{json, Value};

use crate::esm::function::{in_process, Function, FunctionError};

/// Where the events mapping sends what it gave up (the template's `LikeEventsFailureQueue`).
pub const EVENTS_FAILURE_QUEUE: &str = "likes-events-failures";
/// Events kept for `GET /_local/events`.
pub const FEED_SIZE: usize = 1000;

/// The sums of the events function's batch reports over the invocations it answered.
#[derive(Debug, Default)]
pub struct EventTotals {
    pub records: AtomicU64,
    pub published: AtomicU64,
    pub failed_entries: AtomicU64,
    pub notifications: AtomicU64,
    pub retractions: AtomicU64,
    pub milestones: AtomicU64,
    pub deferred_milestones: AtomicU64,
    pub unknown: AtomicU64,
}

impl EventTotals {
    fn add(&self, r: &BatchReport) {
        let add = |a: &AtomicU64, n: usize| a.fetch_add(n as u64, Ordering::Relaxed);
        add(&self.records, r.records);
        add(&self.published, r.published);
        add(&self.failed_entries, r.failed_entries);
        add(&self.notifications, r.notifications);
        add(&self.retractions, r.retractions);
        add(&self.milestones, r.milestones);
        add(&self.deferred_milestones, r.deferred_milestones);
        add(&self.unknown, r.unknown);
    }

    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BTreeMap::from([
            ("records", get(&self.records)),
            ("published", get(&self.published)),
            ("failed_entries", get(&self.failed_entries)),
            ("notifications", get(&self.notifications)),
            ("retractions", get(&self.retractions)),
            ("milestones", get(&self.milestones)),
            ("deferred_milestones", get(&self.deferred_milestones)),
            ("unknown", get(&self.unknown)),
        ])
    }
}

pub struct EventsFunction<S, M, C, B> {
    pub function: LikeEvents<S, M, C, B>,
    pub totals: EventTotals,
}

impl<S, M, C, B> Function for EventsFunction<S, M, C, B>
where
    S: SuppressionStore,
    M: MilestoneStore,
    C: CountsProgress,
    B: EventBus,
{
    async fn invoke(&self, payload: String, timeout: Duration) -> Result<String, FunctionError> {
        in_process(timeout, |deadline| async move {
            let report = self.function.process_json(&payload, Some(deadline)).await;
            report.map(|report| {
                self.totals.add(&report);
                tracing::info!(
                    records = report.records,
                    published = report.published,
                    notifications = report.notifications,
                    retractions = report.retractions,
                    milestones = report.milestones,
                    "events batch"
                );
                report.response()
            })
        })
        .await
    }
}

/// The most recent events the bus delivered to `likes-events`, oldest first.
#[derive(Debug, Default)]
pub struct EventFeed(Mutex<VecDeque<Value>>);

impl EventFeed {
    pub fn snapshot(&self) -> Vec<Value> {
        self.0
            .lock()
            .map(|f| f.iter().cloned().collect())
            .unwrap_or_default()
    }

    fn push(&self, event: Value) {
        if let Ok(mut f) = self.0.lock() {
            if f.len() == FEED_SIZE {
                f.pop_front();
            }
            f.push_back(event);
        }
    }
}

/// The local bus: the emulator's EventBridge, and every entry it accepted kept in the feed.
pub struct FeedingBus<B> {
    pub bus: B,
    pub feed: Arc<EventFeed>,
    /// The account and region in the feed's envelopes, as the emulator's would say.
    pub region: String,
    next: AtomicU64,
}

impl<B> FeedingBus<B> {
    pub fn new(bus: B, feed: Arc<EventFeed>, region: impl Into<String>) -> Self {
        FeedingBus {
            bus,
            feed,
            region: region.into(),
            next: AtomicU64::new(0),
        }
    }

    /// The event as EventBridge delivers it to a rule's target.
    fn envelope(&self, entry: &BusEntry) -> Value {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        let time = if entry.time_secs > 0 {
            chrono::DateTime::from_timestamp(entry.time_secs, 0).unwrap_or_else(chrono::Utc::now)
        } else {
            chrono::Utc::now()
        };
        json!({
            "version": "0",
            "id": format!("local-{n:012}"),
            "detail-type": entry.detail_type,
            "source": likes_aws::eventbridge::SOURCE,
            "account": "123456789012",
            "time": time.to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
            "region": self.region,
            "resources": [],
            "detail": serde_json::from_str::<Value>(&entry.detail).unwrap_or(Value::Null),
        })
    }
}

impl<B: EventBus> EventBus for FeedingBus<B> {
    async fn put(&self, entries: &[BusEntry]) -> Result<Vec<Option<String>>, StoreError> {
        let answers = self.bus.put(entries).await?;
        for (entry, refused) in entries.iter().zip(&answers) {
            if refused.is_none() {
                self.feed.push(self.envelope(entry));
            }
        }
        Ok(answers)
    }
}
