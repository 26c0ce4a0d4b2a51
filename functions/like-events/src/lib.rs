//! The like events: DynamoDB stream batches of the Likes table → events on an EventBridge bus
//! (`source: "likes"`), for the services that build on likes (notifications, ranking,
//! analytics). The stream's second reader and its last: anything else reads the bus.
//!
//! Published, as the deployment chooses (`LIKES_PUBLISHED_EVENTS`): `LikeAdded` and
//! `LikeRemoved` for every change (`all` only); `LikeNotification` for the first like of a
//! (user, post, kind) within the suppression window; `LikeRetraction` when that like is removed
//! inside the window; `LikeMilestone` when a post's like count first reaches 1, 10, 100, ….
//! A reaction (a kind other than the like, `likes_core::reaction`) is announced as a like is,
//! under the same detail-types; every event's `kind` says which (`like` for a like).
//!
//! # Invariants
//!
//! Numbered once, here; code, tests and `docs/events.md` cite them by number.
//!
//! 1. **Likes and reactions, in stream order**: INSERT is a like (a reaction), REMOVE an unlike
//!    (its removal); the sort key's `#<kind>` suffix names a reaction's kind. Control items and
//!    other records are neither. A batch is one shard's, in order; a (user, post, kind)'s
//!    records are one key's, so in one shard, in commit order.
//! 2. **Partial batch responses**: the lowest record not done — one of its events not
//!    accepted by the bus, its pair's state not written, or a like held for its post's count
//!    (6) — is reported, spelled as received, as the only `batchItemFailures` entry; Lambda
//!    redelivers from it. A function error bisects the batch (the mapping's setting); a record
//!    retried too often or too old goes to the on-failure queue.
//! 3. **Stable ids, at-least-once delivery**: every event's `event_id` is derived from what it
//!    is about (`ids`): a redelivered record publishes its events again under the same ids,
//!    and a consumer deduplicates on `event_id` (EventBridge's own envelope `id` differs on
//!    every put).
//! 4. **Notifications are decided by the stream's clock, and decided again identically**: a
//!    like notifies unless its pair — (user, post, kind): a like and a love of one user on one
//!    post each notify — notified less than the window before it (records' creation times).
//!    The state kept per pair is its current window (the notifying like, its time, the
//!    retracting unlike) and the one before; it is written only after the records' events were
//!    accepted, only for records below the batch's checkpoint, and only over the
//!    state the decisions were made from (a conditional write). A redelivered record decides
//!    from that state as it first did: the record that notified notifies again, the one that
//!    retracted retracts again — suppression never swallows the event of the record being
//!    retried. This holds while a redelivery reaches back less than a window, which the
//!    mapping ensures: it gives up records older than the window (`MaximumRecordAgeInSeconds`).
//!    A decision that could not be known again is counted (`UnknownDecisions`), never guessed.
//! 5. **One retraction per notification**: the first unlike inside the window retracts it,
//!    naming the notification's `event_id`; a like again inside the window stays silent.
//! 6. **Each milestone once**: milestones are the like count's alone (reactions neither
//!    announce one nor are counted in it). A post's count is read from the aggregator's
//!    Counts item once the aggregator has counted the batch's records (`counts`), milestones
//!    above the highest announced are published, and only then is the new highest recorded,
//!    conditionally and monotonic. A count still behind after the wait holds the batch at the
//!    post's first like, redelivered from there, for at most the hold after the like's
//!    creation (`checks`): a milestone does not wait for another like. A count moving back and
//!    forth never announces one twice; the record a milestone was announced for announces it
//!    again when redelivered; a racing announcement from another shard's batch carries the
//!    same id.
//! 7. **A record that can never be read** (no sequence number, a key that is not a like's or a
//!    reaction's, a kind outside the grammar) is logged and skipped, so that it cannot block the
//!    shard.
//! 8. **Only refused entries are sent again**, a few times within the invocation; entries of
//!    records after the lowest failed one are not sent (they are redelivered), and no call is
//!    started too close to the invocation's deadline: the handler answers before it.
//! 9. **`none` costs nothing but the invocation**: nothing is read, written or published.
//!
//! # Layout
//!
//! [`records`] reads the batch (1, 7); [`suppression`] holds the notification rules (4, 5) and
//! [`milestones`] the milestone rules (6), both pure; [`counts`] learns a post's count and
//! [`checks`] runs the batch's milestone checks and holds it for a count behind; [`ids`]
//! and [`detail`] make the events (3); [`publish`] puts them on the bus (8); [`batch`] runs a
//! batch through all of them (2); [`report`] builds the response and the metrics line.

pub mod batch;
pub mod checks;
pub mod counts;
pub mod detail;
pub mod ids;
pub mod milestones;
pub mod publish;
pub mod records;
pub mod report;
pub mod suppression;

use std::time::Duration;

use likes_aws::env::EventRules;
use likes_core::store::events::{CountsProgress, EventBus, MilestoneStore, SuppressionStore};
use likes_core::stream_event::StreamEvent;
use tokio::time::Instant;

pub use crate::report::{emf_line, BatchReport};

/// How the function is tuned: its rules (`likes_aws::env::EventRules`), and the time a call
/// needs at worst (the SDK's operation timeout, 8 s, plus a margin): no `PutEvents` call is
/// started with less than twice that left before the deadline (one for the call, one for the
/// state writes after it).
#[derive(Debug, Clone, Copy)]
pub struct Settings {
    pub rules: EventRules,
    pub budget: Duration,
}

impl From<EventRules> for Settings {
    fn from(rules: EventRules) -> Self {
        Self {
            rules,
            budget: Duration::from_secs(9),
        }
    }
}

/// The function: its stores, its bus, its settings.
pub struct LikeEvents<S, M, C, B> {
    pub suppression: S,
    pub milestones: M,
    pub counts: C,
    pub bus: B,
    pub settings: Settings,
}

impl<S, M, C, B> LikeEvents<S, M, C, B>
where
    S: SuppressionStore,
    M: MilestoneStore,
    C: CountsProgress,
    B: EventBus,
{
    /// A batch given as Lambda's JSON. Fails only if the text is not a stream event at all.
    pub async fn process_json(
        &self,
        text: &str,
        deadline: Option<Instant>,
    ) -> Result<BatchReport, sonic_rs::Error> {
        let event: StreamEvent<'_> = sonic_rs::from_str(text)?;
        Ok(self.process(&event, deadline).await)
    }

    /// The Lambda handler's body: never fails as a whole; failures are reported per record.
    pub async fn process(&self, event: &StreamEvent<'_>, deadline: Option<Instant>) -> BatchReport {
        batch::run(self, event, deadline).await
    }
}
