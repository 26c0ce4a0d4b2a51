//! The reactions port: what the API asks of the Likes table beyond the like (docs/reactions.md).
//! The like is the kind `like`, stored as it always was, so a [`ReactionsStore`] is a
//! [`LikesStore`] too and answers the like's routes unchanged.

use std::collections::HashMap;
use std::future::Future;

use super::{LikerPos, LikesStore, Page, StoreError};
use crate::ids::{PostId, UserId};
use crate::reaction::{Kind, Kinds};
use crate::write_token::WriteToken;

/// What a reaction in `single` mode did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reacted {
    /// Whether this request changed the user's reaction (as `changed` for likes).
    pub changed: bool,
    /// The kind it replaced, if it replaced one.
    pub replaced: Option<Kind>,
}

pub trait ReactionsStore: LikesStore {
    /// `multi` mode: adds the user's reaction of `kind`, with a like's guarantees (`like` is
    /// [`LikesStore::like`]). `Ok(true)` if this request made it.
    fn react(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes the user's reaction of `kind` (either mode). `Ok(true)` if this request did.
    fn unreact(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        token: &WriteToken,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// `single` mode: makes `kind` the user's one reaction to the post, replacing any other in
    /// one transaction — there is never a moment with two, or with none.
    fn react_only(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> impl Future<Output = Result<Reacted, StoreError>> + Send;

    /// The user's reactions to the post, read with strong consistency, in kind order.
    fn reactions_of(
        &self,
        post: &PostId,
        user: &UserId,
    ) -> impl Future<Output = Result<Vec<Kind>, StoreError>> + Send;

    /// For each of `posts` (at most 100, distinct) the user reacted to, with which of `kinds`;
    /// strongly consistent. Posts without any are absent.
    fn reacted_among(
        &self,
        user: &UserId,
        posts: &[PostId],
        kinds: &Kinds,
    ) -> impl Future<Output = Result<HashMap<PostId, Vec<Kind>>, StoreError>> + Send;

    /// What the user holds (of `kinds`) among everything they made at or after `since` (a
    /// `time` timestamp), from the user's own indexes: eventually consistent, as an index
    /// trails its table. `None` when more than `cap` likes or reactions were made since: the
    /// caller reads the posts' keys instead. `SummaryMine=fast`'s read (docs/api.md).
    fn held_since(
        &self,
        user: &UserId,
        since: &str,
        kinds: &Kinds,
        cap: usize,
    ) -> impl Future<Output = Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError>> + Send;

    /// Who reacted to the post with `kind`, merged over its 16 buckets, newest first, paged as
    /// [`LikesStore::likers_of_post`] (which this is, for `like`).
    fn reactors_of_post(
        &self,
        post: &PostId,
        kind: &Kind,
        limit: usize,
        after: Option<LikerPos>,
    ) -> impl Future<Output = Result<Page<LikerPos>, StoreError>> + Send;
}
