//! The Counts side of the stores: what the API reads ([`CountsRead`]) apart from what the
//! aggregator writes ([`CountsLedger`]), and the values they carry.

use std::collections::{BTreeMap, HashMap};
use std::future::Future;

use crate::bucket::{PostBucket, BUCKETS};
use crate::ids::PostId;
use crate::seq::{Seq, SeqNo};

use super::StoreError;

/// One bucket's part of a post's counter update: the records of one `post_bucket` in a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BucketWrite<'a> {
    pub bucket: u8,
    /// Likes minus unlikes of the records.
    pub delta: i64,
    /// Reactions minus their removals, per kind other than the like, for the kinds among the
    /// records (none in a like-only deployment: its update is as it always was).
    pub kinds: Vec<(&'a str, i64)>,
    pub first: Seq<'a>,
    pub last: Seq<'a>,
    /// When the last record was created (stream `ApproximateCreationDateTime`, epoch seconds).
    pub last_created: i64,
    /// The recount window the records fall in, if any: the write then requires that window to
    /// be the bucket's open one, and counts the records as the window's entries; without, it
    /// requires none to be open.
    pub window: Option<&'a str>,
    /// How many records the write applies (one window entry each, inside a window).
    pub records: u32,
}

/// A recount's fence, applied to its bucket in stream order (`count_aggregator`'s fence docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FenceWrite<'a> {
    /// Opens `job`'s window on the bucket (replacing one left open by an abandoned job), if
    /// `job` holds the post's recount lease — the write then requires it still does; a fence of
    /// a job that does not only advances the mark.
    Begin { job: &'a str, holds_lease: bool },
    /// Closes `job`'s window, noting the bucket's count and window entries at this point for
    /// the job, and the count of each of `kinds` (the reaction kinds the bucket has, or has in
    /// the batch before the fence); with `closes` false (the window is not the job's) it only
    /// advances the mark.
    End {
        job: &'a str,
        closes: bool,
        kinds: &'a [String],
    },
}

/// A fence's stream record, as applied to its bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FenceRecord<'a> {
    pub bucket: u8,
    pub fence: FenceWrite<'a>,
    pub seq: Seq<'a>,
    /// When the record was created (stream `ApproximateCreationDateTime`, epoch seconds).
    pub created: i64,
    /// The bucket's mark, when the fence proved it ahead of the stream (a fence is a definite
    /// point of the current stream, yet it lies at or below the mark): the write then requires
    /// the mark to be this one, and sets it back to the fence.
    pub replaces_mark: Option<&'a SeqNo>,
}

/// One change within a recount job's window: every change gets its own entry, so that the job
/// can count them against what the aggregator noted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowEntry<'a> {
    pub job: &'a str,
    /// The changed item's sort key: the user for a like, `{user}#{kind}` for a reaction.
    pub user: &'a str,
    pub seq: Seq<'a>,
    pub liked: bool,
}

/// Result of a guarded counter update.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// Applied; the written buckets' counts are now these.
    Applied { counts: Vec<(u8, i64)> },
    /// Some bucket's high-water mark is at or past its `first`: some of the records were applied
    /// by an earlier delivery. Nothing was written.
    AlreadyApplied,
}

/// One bucket of a post's Counts item.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BucketCount {
    pub count: i64,
    /// The highest sequence number applied to the bucket.
    pub hwm: Option<SeqNo>,
    /// When the record at `hwm` was created (epoch seconds).
    pub hwm_created: Option<i64>,
    /// The recount job whose window is open on the bucket.
    pub window: Option<String>,
    /// When the open window's begin fence was created (epoch seconds).
    pub window_opened: Option<i64>,
    /// The window entries counted so far.
    pub window_entries: u64,
    /// The bucket's partial count of each reaction kind other than the like.
    pub kinds: BTreeMap<String, i64>,
    /// The recount job whose end fence was applied, and what was noted for it then.
    pub ended: Option<Ended>,
}

/// What a recount's end fence noted on its bucket.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ended {
    pub job: String,
    /// The bucket's count at the end fence.
    pub count: i64,
    /// How many window entries the aggregator wrote between the job's fences.
    pub entries: u64,
    /// The bucket's count of each reaction kind other than the like at the end fence.
    pub kinds: BTreeMap<String, i64>,
}

/// A post's recount lease, as held: by which job, how often renewed, and for how long each
/// renewal holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseState {
    pub job: String,
    /// Incremented at each renewal: a taker that sees it unchanged for `term_secs` knows the
    /// holder stopped, whatever either machine's clock says.
    pub beat: u64,
    pub term_secs: u64,
}

/// A post's Counts item: its 16 buckets' partial counts and high-water marks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PostCounts {
    pub buckets: [BucketCount; BUCKETS as usize],
    pub updated_at: Option<String>,
    /// The recount lease on the post, while one is held.
    pub lease: Option<LeaseState>,
}

impl PostCounts {
    pub fn total(&self) -> i64 {
        self.buckets
            .iter()
            .fold(0i64, |sum, b| sum.saturating_add(b.count))
    }

    /// The post's count of every kind seen, the like (`like`) included.
    pub fn kind_totals(&self) -> BTreeMap<String, i64> {
        let mut totals = BTreeMap::from([(crate::reaction::LIKE.to_owned(), self.total())]);
        for b in &self.buckets {
            for (kind, n) in &b.kinds {
                let sum = totals.entry(kind.clone()).or_insert(0);
                *sum = sum.saturating_add(*n);
            }
        }
        totals
    }
}

/// A post the aggregator left uncounted in a batch it reported as failing: noted before Lambda
/// can give the batch up, so that `likes-admin recount --noted` finds every post a given-up
/// batch may have left wrong, even one that never got a Counts item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RepairNote {
    pub post: PostId,
    /// When it was last noted (epoch milliseconds).
    pub noted_ms: i64,
    /// Unique to each time the post is noted: a clear must still find this one.
    pub id: String,
    /// The lowest sequence number of the post left unapplied, as received.
    pub from: String,
}

/// The counts the API serves: eventually consistent reads.
pub trait CountsRead: Send + Sync {
    /// The post's count, eventually consistent.
    fn post_count(&self, post: &PostId) -> impl Future<Output = Result<i64, StoreError>> + Send;

    /// The counts of `posts` (at most 100, distinct), eventually consistent; a post without an
    /// item is absent from the map (its count is 0).
    fn post_counts(
        &self,
        posts: &[PostId],
    ) -> impl Future<Output = Result<HashMap<PostId, i64>, StoreError>> + Send;

    /// The post's count of each kind (`PostCounts::kind_totals`), eventually consistent.
    fn kind_counts(
        &self,
        post: &PostId,
    ) -> impl Future<Output = Result<BTreeMap<String, i64>, StoreError>> + Send;

    /// The kind counts of `posts` (at most 100, distinct); a post without an item is absent.
    fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> impl Future<Output = Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError>> + Send;

    /// As [`Self::post_counts`], but the posts whose items could not be read (a throttled
    /// partition) are named instead of failing the whole read: a feed shows every other post.
    /// A store that reads all or nothing says so by this default.
    fn post_counts_partial(
        &self,
        posts: &[PostId],
    ) -> impl Future<Output = Result<PartialCounts<i64>, StoreError>> + Send {
        async move { Ok(PartialCounts::all(self.post_counts(posts).await?)) }
    }

    /// As [`Self::kind_counts_among`], partially as [`Self::post_counts_partial`].
    fn kind_counts_partial(
        &self,
        posts: &[PostId],
    ) -> impl Future<Output = Result<PartialCounts<BTreeMap<String, i64>>, StoreError>> + Send {
        async move { Ok(PartialCounts::all(self.kind_counts_among(posts).await?)) }
    }
}

/// What a batch read of counts could read: each post read that has an item (one without is
/// absent, as in [`CountsRead::post_counts`]), and the posts it could not read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartialCounts<T> {
    pub read: HashMap<PostId, T>,
    pub unread: Vec<PostId>,
}

impl<T> PartialCounts<T> {
    /// Every post read.
    pub fn all(read: HashMap<PostId, T>) -> Self {
        Self {
            read,
            unread: Vec::new(),
        }
    }
}

/// What the aggregator writes and reads to apply stream records exactly once
/// (count-aggregator's invariants).
pub trait CountsLedger: Send + Sync {
    /// For each write: `ADD c<b> :delta SET h<b> = :last, t<b> = :created`, and `updated_at`,
    /// `IF` every written bucket's mark is absent or below its `first` — atomically, one item.
    fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> impl Future<Output = Result<ApplyOutcome, StoreError>> + Send;

    /// The post's item, read with strong consistency (the aggregator's dedup depends on it).
    fn read_post(
        &self,
        post: &PostId,
    ) -> impl Future<Output = Result<Option<PostCounts>, StoreError>> + Send;

    /// Applies a fence record, `IF` its bucket's mark is below it.
    fn fence(
        &self,
        post: &PostId,
        record: &FenceRecord<'_>,
    ) -> impl Future<Output = Result<ApplyOutcome, StoreError>> + Send;

    /// Records the changes within a recount window on the bucket, before they are counted (so
    /// that a redelivery rewrites the same entries).
    fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// Closes `job`'s window on the bucket without noting anything (a window left open by a job
    /// that died); false if that window was not open.
    fn close_window(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Notes that the post's records from `from` on were left unapplied by a failing batch
    /// (replacing an earlier note of the post): a [`RepairNote`].
    fn note_unapplied(
        &self,
        post: &PostId,
        from: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}
