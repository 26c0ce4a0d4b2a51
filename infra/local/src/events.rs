//! Like events, played locally: the events function (`like-events`) invoked by its own stream
//! mapping as Lambda invokes it (the function's answer serialised, a panic or an invocation
//! past its timeout a function error), and the feed behind `GET /_local/events`: the SQS queue
//! `likes-events` that a rule on the local bus delivers every event to, read and kept here (the
//! most recent [`FEED_SIZE`]) for a person watching and for the tests.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use like_events::{BatchReport, LikeEvents};
use likes_core::store::events::{CountsProgress, EventBus, MilestoneStore, SuppressionStore};
use serde_json::Value;

use crate::esm::function::{in_process, Function, FunctionError};
use crate::sqs_poll;

/// The queue the local bus's rule delivers every event to.
pub const EVENTS_QUEUE: &str = "likes-events";
/// Where the events mapping sends what it gave up (the template's `LikeEventsFailureQueue`).
pub const EVENTS_FAILURE_QUEUE: &str = "likes-events-failures";
/// Events kept for `GET /_local/events`.
pub const FEED_SIZE: usize = 1000;
const POLL_PAUSE: Duration = Duration::from_millis(200);

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

    /// Reads the queue until the process stops: each message is kept, then deleted.
    pub async fn poll(&self, sqs: aws_sdk_sqs::Client, queue_url: String) {
        loop {
            let messages =
                sqs_poll::receive(&sqs, &queue_url, "the events queue", POLL_PAUSE).await;
            for m in &messages {
                let body = m.body().unwrap_or("");
                match serde_json::from_str::<Value>(body) {
                    Ok(event) => self.push(event),
                    Err(e) => tracing::warn!(error = %e, "an events message is not JSON"),
                }
                sqs_poll::delete(&sqs, &queue_url, m, "the events queue").await;
            }
        }
    }
}
