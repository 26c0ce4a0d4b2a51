//! The Likes table: every DynamoDB expression that touches it lives in this module.
//!
//! Item: `post_bucket` (S, partition key `"{post_id}#{bucket}"`), `user_id` (S, sort key),
//! `post_id` (S), `liked_at` (S, see [`crate::time`]).

use std::future::Future;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;

use crate::bucket::PostBucket;
use crate::error::StoreError;
use crate::ids::{PostId, UserId};
use crate::schema::likes::{LIKED_AT, PK, POST_ID, SK};
use crate::store_error::classify;

/// The source of truth for who likes what. Every write is conditional, so the database — not
/// application code — decides whether a like is new; concurrent identical requests cannot both
/// report a change.
pub trait LikesStore: Send + Sync {
    /// Records a like. `Ok(true)` if it is new, `Ok(false)` if the user already liked the post.
    fn like(
        &self,
        post: PostId,
        user: UserId,
        liked_at: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Removes a like. `Ok(true)` if there was one, `Ok(false)` if there was not.
    fn unlike(
        &self,
        post: PostId,
        user: UserId,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// The time of the user's like, read with strong consistency (read-your-writes).
    fn liked_at(
        &self,
        post: PostId,
        user: UserId,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + Send;
}

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

fn key(post: PostId, user: &UserId) -> [(String, AttributeValue); 2] {
    [
        (
            PK.to_owned(),
            s(PostBucket::for_like(post, user).to_string()),
        ),
        (SK.to_owned(), s(user.to_string())),
    ]
}

impl LikesStore for DynamoLikes {
    async fn like(&self, post: PostId, user: UserId, liked_at: &str) -> Result<bool, StoreError> {
        let [pk, sk] = key(post, &user);
        let res = self
            .client
            .put_item()
            .table_name(&self.table)
            .item(pk.0, pk.1)
            .item(sk.0, sk.1)
            .item(POST_ID, s(post.to_string()))
            .item(LIKED_AT, s(liked_at))
            // INSERT … ON CONFLICT DO NOTHING: the condition is checked atomically with the write.
            .condition_expression("attribute_not_exists(#sk)")
            .expression_attribute_names("#sk", SK)
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn unlike(&self, post: PostId, user: UserId) -> Result<bool, StoreError> {
        let [pk, sk] = key(post, &user);
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(pk.0, pk.1)
            .key(sk.0, sk.1)
            // Without the condition a delete of a missing item also succeeds, and the caller
            // could not tell whether anything changed.
            .condition_expression("attribute_exists(#sk)")
            .expression_attribute_names("#sk", SK)
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(false)
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn liked_at(&self, post: PostId, user: UserId) -> Result<Option<String>, StoreError> {
        let [pk, sk] = key(post, &user);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(pk.0, pk.1)
            .key(sk.0, sk.1)
            .consistent_read(true)
            .projection_expression("#t")
            .expression_attribute_names("#t", LIKED_AT)
            .send()
            .await
            .map_err(classify)?;
        Ok(out
            .item
            .and_then(|mut item| item.remove(LIKED_AT))
            .and_then(|v| v.as_s().ok().cloned()))
    }
}
