//! What the admin tool reads and writes beyond the API and the aggregator: the recount's
//! fences, windows, lease and correction, the audit's exact counts, the backfill's scans.
//! Written as ports so that the admin flows run on the in-memory stores as on DynamoDB.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::sync::atomic::AtomicU64;

use crate::bucket::PostBucket;
use crate::control::Phase;
use crate::ids::PostId;

use super::{CountsLedger, StoreError};

/// What taking a recount's lease on a post found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Lease {
    /// Taken: the job holds it until the time it asked for.
    Taken,
    /// Another job holds it until `until` (epoch seconds).
    Held { job: String, until: i64 },
}

/// The Likes table, as the admin tool sees it.
pub trait LikesAdmin: Send + Sync {
    /// The bucket's likes, counted with a consistent read (control items excluded).
    fn count_bucket(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<i64, StoreError>> + Send;

    /// The users who like in the bucket, read consistently.
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

    /// `job`'s window on the bucket as the aggregator recorded it: each user who changed inside
    /// it, and whether their last change was a like. Read consistently.
    fn window(
        &self,
        bucket: &PostBucket,
        job: &str,
    ) -> impl Future<Output = Result<HashMap<String, bool>, StoreError>> + Send;

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

/// The Counts table, as the admin tool sees it.
pub trait CountsAdmin: CountsLedger {
    /// Takes `post`'s recount lease for `job` until `until` (epoch seconds) if nobody holds it,
    /// or its holder's lease ended before `now`.
    fn acquire_lease(
        &self,
        post: &PostId,
        job: &str,
        until: i64,
        now: i64,
    ) -> impl Future<Output = Result<Lease, StoreError>> + Send;

    /// Extends `job`'s lease to `until`; false if another job holds it now.
    fn renew_lease(
        &self,
        post: &PostId,
        job: &str,
        until: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Gives `job`'s lease up (nothing if another job holds it).
    fn release_lease(
        &self,
        post: &PostId,
        job: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// A recount's correction: adds `diff` to the bucket's count and forgets the end noted for
    /// `job`, once, only while that end is the one noted. False if it was not (settled already,
    /// or another job's end is noted).
    fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Every post id with a Counts item, as stored.
    fn counted_posts(&self) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;
}
