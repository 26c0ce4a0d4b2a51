//! The stores, as ports: small traits, one per caller, that the handlers, the aggregator, the
//! erase procedures and the admin tool are written against. The DynamoDB adapters are in
//! `likes-aws` (every expression of a table in that table's module there); the in-memory ones,
//! for tests, in [`memory`]. A caller asks only for what it uses:
//!
//! | trait | used by |
//! |---|---|
//! | [`LikesStore`] | the API: like, unlike and the Likes reads |
//! | [`ReactionsStore`] | the API: reactions (the like is one) |
//! | [`CountsRead`] | the API: counts |
//! | [`CountsLedger`] | the aggregator: guarded count updates, fences, windows |
//! | [`LikesAdmin`], [`CountsAdmin`] | the admin tool: audit, recount, backfill |
//! | [`crate::erase::EraseStore`] | the erase worker and the admin tool's erases |
//! | [`events::SuppressionStore`], [`events::MilestoneStore`], [`events::CountsProgress`], [`events::EventBus`] | the events function |

pub mod admin;
pub mod counts;
pub mod error;
pub mod events;
#[cfg(any(test, feature = "testing"))]
pub mod memory;
pub mod page;
pub mod reactions;

use std::collections::HashSet;
use std::future::Future;

use crate::bucket::PostBucket;
use crate::ids::{PostId, UserId};
use crate::write_token::WriteToken;

pub use admin::{CountsAdmin, HeldItem, LikesAdmin, Window};
pub use counts::{
    ApplyOutcome, BucketCount, BucketWrite, CountsLedger, CountsRead, Ended, FenceRecord,
    FenceWrite, LeaseState, PostCounts, RepairNote, WindowEntry,
};
pub use error::StoreError;
pub use page::Page;
pub use reactions::{Reacted, ReactionsStore};

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

    /// Which of `users` (at most 100, distinct) like the post, newest first as
    /// [`Self::likers_of_post`] orders them; eventually consistent, as that listing is.
    fn likers_among(
        &self,
        post: &PostId,
        users: &[UserId],
    ) -> impl Future<Output = Result<Vec<LikerPos>, StoreError>> + Send;

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
