//! The two stores, as traits the handlers are written against, and their DynamoDB
//! implementations. Every DynamoDB expression for a table lives in that table's module; the
//! paging rules that do not depend on DynamoDB live in [`page`], where they are tested alone.

pub mod dynamo_counts;
pub mod dynamo_likes;
pub mod error;
#[cfg(feature = "testing")]
pub mod memory;
pub mod page;

use std::collections::HashSet;
use std::future::Future;

use crate::bucket::PostBucket;
use crate::ids::{PostId, UserId};
use crate::seq::SeqNo;
use crate::token::WriteToken;

pub use dynamo_counts::DynamoCounts;
pub use dynamo_likes::DynamoLikes;
pub use error::StoreError;
pub use page::Page;

/// The source of truth for who likes what. Every write is conditional, so the database — not
/// application code — decides whether a like is new; concurrent identical requests cannot both
/// report a change.
pub trait LikesStore: Send + Sync {
    /// Records a like. `Ok(true)` if this request made it (it is new, or — for a request the
    /// client named — an earlier attempt of this same request made it), `Ok(false)` if the
    /// user already liked the post. `Err(OutcomeUnknown)` when it cannot be known.
    fn like(
        &self,
        post: &PostId,
        user: &UserId,
        liked_at: &str,
        token: &WriteToken,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes a like. `Ok(true)` if this request removed it, `Ok(false)` if there was none.
    fn unlike(
        &self,
        post: &PostId,
        user: &UserId,
        token: &WriteToken,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The time of the user's like, read with strong consistency (read-your-writes).
    fn liked_at(
        &self,
        post: &PostId,
        user: &UserId,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;

    /// The user's likes, newest first, strictly after `after` (exclusive), at most `limit`.
    fn likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        after: Option<UserLikePos>,
    ) -> impl Future<Output = Result<Page<UserLikePos>, StoreError>> + Send;

    /// The post's likers, merged over its 16 buckets, newest first (ties: higher `user_id`
    /// first), strictly after `after`, at most `limit`.
    fn likers_of_post(
        &self,
        post: &PostId,
        limit: usize,
        after: Option<LikerPos>,
    ) -> impl Future<Output = Result<Page<LikerPos>, StoreError>> + Send;

    /// Which of `posts` (at most 100, distinct) the user likes, read with strong consistency.
    fn liked_among(
        &self,
        user: &UserId,
        posts: &[PostId],
    ) -> impl Future<Output = Result<HashSet<PostId>, StoreError>> + Send;
}

/// One entry of "which posts did U like": also the position a cursor resumes after.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserLikePos {
    pub liked_at: String,
    pub post_bucket: PostBucket,
}

/// One entry of "who liked P": also the position a cursor resumes after. Ordered newest first,
/// then by descending user id, a total order across all 16 buckets.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct LikerPos {
    pub liked_at: String,
    pub user_id: UserId,
}

/// Result of a guarded counter update.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyOutcome {
    /// The delta was applied; the row's count is now this.
    Applied { like_count: i64 },
    /// The row's high-water mark is at or past `first_seq`: some of the records were applied by
    /// an earlier delivery. Nothing was written.
    AlreadyApplied,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CountRow {
    pub like_count: i64,
    pub hwm: Option<SeqNo>,
    pub updated_at: Option<String>,
}

pub trait CountsStore: Send + Sync {
    /// `ADD like_count :delta SET hwm = :last, updated_at = :now`
    /// `IF attribute_not_exists(hwm) OR hwm < :first` — atomically.
    fn apply(
        &self,
        row: &PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> impl Future<Output = Result<ApplyOutcome, StoreError>> + Send;

    /// The row, read with strong consistency (the aggregator's dedup decision depends on it).
    fn read_row(
        &self,
        row: &PostBucket,
    ) -> impl Future<Output = Result<Option<CountRow>, StoreError>> + Send;

    /// Sum of the post's rows, eventually consistent.
    fn post_count(&self, post: &PostId) -> impl Future<Output = Result<i64, StoreError>> + Send;
}

/// A shared borrow of a Counts store is one too: the aggregator and the API can then work on
/// the same store in a test, or one process.
impl<T: CountsStore> CountsStore for &T {
    fn apply(
        &self,
        row: &PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> impl Future<Output = Result<ApplyOutcome, StoreError>> + Send {
        (**self).apply(row, delta, first_seq, last_seq, now)
    }

    fn read_row(
        &self,
        row: &PostBucket,
    ) -> impl Future<Output = Result<Option<CountRow>, StoreError>> + Send {
        (**self).read_row(row)
    }

    fn post_count(&self, post: &PostId) -> impl Future<Output = Result<i64, StoreError>> + Send {
        (**self).post_count(post)
    }
}
