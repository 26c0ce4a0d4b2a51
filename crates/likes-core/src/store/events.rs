//! What the events function (`functions/like-events`) reads and writes: the suppression state
//! of each (user, post, kind), the highest milestone announced per post, the post's counts as
//! the aggregator left them, and the event bus. Ports, so that its rules run on the in-memory
//! stores (`memory::events`) as on DynamoDB and EventBridge (`likes-aws`).

use std::collections::HashMap;
use std::future::Future;

use crate::ids::{PostId, UserId};
use crate::reaction::Kind;
use crate::seq::SeqNo;

use super::{CountsLedger, PostCounts, StoreError};

/// One notification window of a (user, post, kind): the like (or reaction) whose record
/// notified, when it was created (stream time, epoch seconds), and the unlike (removal) whose
/// record retracted it, if one did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Epoch {
    pub notified: SeqNo,
    pub at: i64,
    pub retracted: Option<SeqNo>,
}

/// What is kept of a (user, post, kind): its current window, and the one before (a redelivered
/// batch may reach back across one window's end; never across two, see like-events'
/// invariant 4).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PairState {
    pub current: Option<Epoch>,
    pub previous: Option<Epoch>,
}

/// What notifications are suppressed per: a user's like, or reaction of one kind, on a post.
/// Still named for the (post, user) pair it was before reactions: a like's state is that
/// pair's, kept as it always was, and each other kind of the pair has its own.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Pair {
    pub post: PostId,
    pub user: UserId,
    pub kind: Kind,
}

impl Pair {
    pub fn new(post: PostId, user: UserId, kind: Kind) -> Self {
        Self { post, user, kind }
    }

    /// The user's like of the post.
    pub fn like(post: PostId, user: UserId) -> Self {
        Self::new(post, user, Kind::like())
    }
}

/// The suppression state of (user, post, kind)s.
pub trait SuppressionStore: Send + Sync {
    /// The pairs' states, read with strong consistency; a pair without one is absent.
    fn read_pairs(
        &self,
        pairs: &[Pair],
    ) -> impl Future<Output = Result<HashMap<Pair, PairState>, StoreError>> + Send;

    /// Replaces the pair's state with `new` if it is still `seen` (its current window's like
    /// and unlike), expiring at `expires_at` (epoch seconds). False if it was not.
    fn write_pair(
        &self,
        pair: &Pair,
        seen: &PairState,
        new: &PairState,
        expires_at: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// A post's announced milestones: the highest, the highest before the last announcement, and
/// the record the last announcement was made for (its bucket and sequence number), so that a
/// redelivery of that record announces the same milestones again.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MilestoneState {
    pub announced: u64,
    pub before: u64,
    pub by: Option<(u8, SeqNo)>,
}

/// The milestones announced per post.
pub trait MilestoneStore: Send + Sync {
    /// The posts' states, read with strong consistency; a post without one is absent.
    fn read_milestones(
        &self,
        posts: &[PostId],
    ) -> impl Future<Output = Result<HashMap<PostId, MilestoneState>, StoreError>> + Send;

    /// Records `new` if it is higher than what is recorded (monotonic: a count that goes down
    /// and up again never announces a milestone twice). False if it was not higher.
    fn record_milestone(
        &self,
        post: &PostId,
        new: &MilestoneState,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}

/// How far the aggregator has counted a post: its Counts item (counts and marks), read with
/// strong consistency. Every Counts ledger is one.
pub trait CountsProgress: Send + Sync {
    fn progress(
        &self,
        post: &PostId,
    ) -> impl Future<Output = Result<Option<PostCounts>, StoreError>> + Send;
}

impl<C: CountsLedger> CountsProgress for C {
    fn progress(
        &self,
        post: &PostId,
    ) -> impl Future<Output = Result<Option<PostCounts>, StoreError>> + Send {
        self.read_post(post)
    }
}

/// One event for the bus: its detail-type, its detail (a JSON object's text) and when it
/// happened (epoch seconds). The source and the bus are the adapter's.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BusEntry {
    pub detail_type: &'static str,
    pub detail: String,
    pub time_secs: i64,
}

/// The event bus: at most 10 entries a call (EventBridge's `PutEvents` limit).
pub trait EventBus: Send + Sync {
    /// Per entry, in order: `None` if it was accepted, else the error code it was refused with.
    /// `Err` when the call as a whole failed (then no entry is known to be accepted).
    fn put(
        &self,
        entries: &[BusEntry],
    ) -> impl Future<Output = Result<Vec<Option<String>>, StoreError>> + Send;
}

/// Most entries one `PutEvents` call takes.
pub const BUS_BATCH_MAX: usize = 10;
