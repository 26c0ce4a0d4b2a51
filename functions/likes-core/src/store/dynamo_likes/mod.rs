//! The Likes table: every DynamoDB expression that touches it lives in this module and its two
//! parts, `write` (like, unlike) and `read` (everything else).
//!
//! Like item: `post_bucket` (S, partition key `"{post_id}#{bucket}"`), `user_id` (S, sort key),
//! `post_id` (S), `liked_at` (S, see [`crate::time`]), `tok` (S, the token of the request that
//! wrote it). Control items share the partition under sort keys starting with `~` (see
//! `write` for request markers): they have no `liked_at`, so no index and no listing sees them.

mod read;
mod write;

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

pub use read::BATCH_GET_MAX;

use super::error::StoreError;
use super::page::Page;
use super::{LikerPos, LikesStore, UserLikePos};
use crate::bucket::PostBucket;
use crate::ids::{PostId, UserId};
use crate::schema::likes::{PK, SK};
use crate::token::WriteToken;

#[derive(Clone, Debug)]
pub struct DynamoLikes {
    client: Client,
    table: String,
}

impl DynamoLikes {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

fn key(post: &PostId, user: &UserId) -> [(String, AttributeValue); 2] {
    [
        (
            PK.to_owned(),
            s(PostBucket::for_like(post, user).to_string()),
        ),
        (SK.to_owned(), s(user.to_string())),
    ]
}

impl LikesStore for DynamoLikes {
    async fn like(
        &self,
        post: &PostId,
        user: &UserId,
        liked_at: &str,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write_like(post, user, liked_at, token).await
    }

    async fn unlike(
        &self,
        post: &PostId,
        user: &UserId,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write_unlike(post, user, token).await
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
