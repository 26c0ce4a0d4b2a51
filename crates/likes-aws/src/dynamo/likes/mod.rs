//! The Likes table: every DynamoDB expression that touches it lives in this module and its
//! parts — `write` (like, unlike), `read` (the API's reads), `windows` (the aggregator's recount
//! windows), `admin` (the admin tool's counts, fences and scans) and `erase`.
//!
//! Like item: `post_bucket` (S, partition key `"{post_id}#{bucket}"`), `user_id` (S, sort key),
//! `post_id` (S), `liked_at` (S, see `likes_core::time`), `tok` (S, the token of the request that
//! wrote it). Control items share the partition under sort keys starting with `~`
//! (`likes_core::control`): they have no `liked_at`, so no index and no listing sees them.
//! Named requests' markers go to their own table when the deployment has one
//! ([`DynamoLikes::with_markers`]).

mod admin;
mod erase;
mod hide;
mod item;
mod reactions;
mod read;
mod recent;
mod single;
pub(crate) mod windows;
mod write;

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_core::reaction::sort_key;
use likes_core::{
    Kind, LikerPos, LikesStore, Page, PostBucket, PostId, StoreError, UserId, UserLikePos,
    WriteToken,
};

use super::s;
use super::schema::likes::{PK, SK};

#[derive(Clone, Debug)]
pub struct DynamoLikes {
    client: Client,
    table: String,
    /// Where named requests' markers go (`MARKERS_TABLE_NAME`); without one, into the like's
    /// own partition under `~op#` keys (`likes_core::control::marker_key`).
    markers: Option<String>,
}

impl DynamoLikes {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            markers: None,
        }
    }

    /// Markers in their own table: a user flipping a like with named requests then fills no
    /// post's partition (whose item collection the LSI caps at 10 GB) and no stream.
    pub fn with_markers(mut self, table: Option<impl Into<String>>) -> Self {
        self.markers = table.map(Into::into);
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

/// The key of an item of `bucket` whose sort key is `sort_key` (a user id or a control key).
fn item_key(bucket: &PostBucket, sort_key: impl Into<String>) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PK.to_owned(), s(bucket.to_string())),
        (SK.to_owned(), s(sort_key)),
    ])
}

/// The key of `user`'s like of `post`.
fn like_key(post: &PostId, user: &UserId) -> HashMap<String, AttributeValue> {
    item_key(&PostBucket::for_like(post, user), user.as_str())
}

/// The key of `user`'s reaction of `kind` to `post` (for `like`, the like's).
fn reaction_key(post: &PostId, user: &UserId, kind: &Kind) -> HashMap<String, AttributeValue> {
    item_key(&PostBucket::for_like(post, user), sort_key(user, kind))
}

impl LikesStore for DynamoLikes {
    async fn like(
        &self,
        post: &PostId,
        user: &UserId,
        liked_at: &str,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let like = Kind::like();
        let request = write::Request {
            post,
            user,
            kind: &like,
            token,
        };
        self.write_like(&request, liked_at).await
    }

    async fn unlike(
        &self,
        post: &PostId,
        user: &UserId,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let like = Kind::like();
        let request = write::Request {
            post,
            user,
            kind: &like,
            token,
        };
        self.write_unlike(&request).await
    }

    async fn liked_at(&self, post: &PostId, user: &UserId) -> Result<Option<String>, StoreError> {
        self.read_liked_at(post, user).await
    }

    async fn likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        after: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        self.read_likes_of_user(user, limit, after).await
    }

    async fn likers_of_post(
        &self,
        post: &PostId,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        self.read_likers_of_post(post, limit, after).await
    }

    async fn likers_among(
        &self,
        post: &PostId,
        users: &[UserId],
    ) -> Result<Vec<LikerPos>, StoreError> {
        self.read_likers_among(post, users).await
    }

    async fn liked_among(
        &self,
        user: &UserId,
        posts: &[PostId],
    ) -> Result<HashSet<PostId>, StoreError> {
        self.read_liked_among(user, posts).await
    }
}

fn attr_s(item: &HashMap<String, AttributeValue>, name: &str) -> Result<String, StoreError> {
    match item.get(name) {
        Some(AttributeValue::S(v)) => Ok(v.clone()),
        other => Err(StoreError::Internal(format!(
            "stored item: {name} is missing or not a string ({other:?})"
        ))),
    }
}
