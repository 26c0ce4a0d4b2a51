//! What the admin tool reads and writes beyond the API and the aggregator: the recount's
//! fences, windows, lease and correction, the audit's exact counts, the backfill's scans.
//! Written as ports so that the admin flows run on the in-memory stores as on DynamoDB.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicU64;

use crate::bucket::PostBucket;
use crate::control::Phase;
use crate::ids::{PostId, UserId};
use crate::reaction::Kind;

use super::{CountsLedger, LeaseState, RepairNote, StoreError};

/// A like or a reaction as a scan finds it: where, whose, which kind, and when it was made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeldItem {
    pub bucket: PostBucket,
    pub user: UserId,
    pub kind: Kind,
    /// `liked_at` or `reacted_at`, as stored.
    pub at: String,
}

/// The Likes table, as the admin tool sees it.
pub trait LikesAdmin: Send + Sync {
    /// The bucket's likes, counted with a consistent read (control items and other kinds
    /// excluded).
    fn count_bucket(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<i64, StoreError>> + Send;

    /// The bucket's count of every kind held in it (`like` included, when any), with a
    /// consistent read.
    fn count_kinds(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<BTreeMap<String, i64>, StoreError>> + Send;

    /// The sort keys of the bucket's likes and reactions (`{user}`, `{user}#{kind}`), read
    /// consistently: who holds what.
    fn bucket_users(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<HashSet<String>, StoreError>> + Send;

    /// Writes one of a recount job's fences into the bucket: its stream record is the fence.
    fn put_fence(
        &self,
        bucket: &PostBucket,
        job: &str,
        phase: Phase,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// `job`'s window on the bucket as the aggregator recorded it, read consistently.
    fn window(
        &self,
        bucket: &PostBucket,
        job: &str,
    ) -> impl Future<Output = Result<Window, StoreError>> + Send;

    /// The sort keys of every fence and window entry in the bucket, whatever their job.
    fn recount_items(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Deletes control items of the bucket (never a like: other keys are refused).
    fn delete_controls(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One segment of `total` of a consistent parallel scan: the (user, post) pairs in it that
    /// hold more than one kind, each with its kinds (control items and foreign keys left out).
    /// Only those are kept in memory: a table of any size scans in little. `held` counts every
    /// like and reaction seen.
    fn scan_several(
        &self,
        segment: u32,
        total: u32,
        held: &AtomicU64,
    ) -> impl Future<Output = Result<Vec<Vec<HeldItem>>, StoreError>> + Send;

    /// One segment of `total` of a parallel scan: the post ids that have likes in it, as
    /// stored (an id outside the grammar is the caller's to report); `likes` counts the likes
    /// seen.
    fn scan_posts(
        &self,
        segment: u32,
        total: u32,
        likes: &AtomicU64,
    ) -> impl Future<Output = Result<BTreeSet<String>, StoreError>> + Send;
}

/// A recount job's window on one bucket, as read back.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Window {
    /// Each item (a user's like, `{user}#{kind}` a reaction) that changed inside the window,
    /// and whether its last change put it (rather than removed it).
    pub last: HashMap<String, bool>,
    /// How many entries were read (one per change).
    pub entries: u64,
    /// Their sort keys, for the job to delete when it is done.
    pub keys: Vec<String>,
}

impl Window {
    /// The window of the entries read: `(sort key, liked)` pairs, any order; keys that are not
    /// `job`'s entries are left out.
    pub fn of<'a>(job: &str, read: impl IntoIterator<Item = (&'a str, bool)>) -> Self {
        let mut last: HashMap<String, (&'a str, bool)> = HashMap::new();
        let mut keys = Vec::new();
        for (key, liked) in read {
            let Some((user, seq)) = crate::control::window_change(job, key) else {
                continue;
            };
            keys.push(key.to_owned());
            // A `SeqKey` is fixed width: string order is the changes' order.
            if last.get(user).is_none_or(|(s, _)| *s < seq) {
                last.insert(user.to_owned(), (seq, liked));
            }
        }
        Self {
            last: last.into_iter().map(|(u, (_, l))| (u, l)).collect(),
            entries: keys.len() as u64,
            keys,
        }
    }
}

/// The Counts table, as the admin tool sees it. A post's recount lease lives on the post's own
/// item (`PostCounts::lease`), so that the aggregator's fences and the job's correction can be
/// conditional on it.
pub trait CountsAdmin: CountsLedger {
    /// Takes `post`'s recount lease for `job`, to be renewed within `term_secs`: if nobody
    /// holds it (`seen` is `None`), or if it is still exactly as `seen` (the holder stopped
    /// renewing). False if it changed.
    fn take_lease(
        &self,
        post: &PostId,
        job: &str,
        term_secs: u64,
        seen: Option<&LeaseState>,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Renews `job`'s lease (its beat moves on); false if another job holds it now.
    fn renew_lease(
        &self,
        post: &PostId,
        job: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Gives `job`'s lease up (nothing if another job holds it).
    fn release_lease(
        &self,
        post: &PostId,
        job: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A recount's correction: adds `diff` to the bucket's count and each of `kinds`' diffs to
    /// its kind's (every kind noted at the end is named, 0 or not), and forgets the end noted
    /// for `job`, once, only while that end is the one noted and `job` holds the post's lease.
    /// False if not (settled already, another job's end, or the lease lost).
    fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
        kinds: &[(String, i64)],
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Every post id with a Counts item, as stored (repair notes are not posts).
    fn counted_posts(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Every repair note the aggregator left, read consistently (a note written after the
    /// read belongs to a batch still being retried, and is found by the next run).
    fn repair_notes(&self) -> impl Future<Output = Result<Vec<RepairNote>, StoreError>> + Send;

    /// Removes `note`, only if the post was not noted again since; false if it was.
    fn clear_note(
        &self,
        note: &RepairNote,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
}
