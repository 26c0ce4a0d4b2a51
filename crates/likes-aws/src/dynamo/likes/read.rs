//! The Likes table's reads for the API: did I like it, my likes, the likers of a post (its 16
//! buckets merged), and liked-by-me for a feed.

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::KeysAndAttributes;
use futures::future::try_join_all;
use likes_core::reaction::Held;
use likes_core::store::page::{self, BucketScan};
use likes_core::{LikerPos, Page, PostBucket, PostId, StoreError, UserId, UserLikePos};

use super::{attr_s, like_key, DynamoLikes};
use crate::dynamo::calls::{self, get_string, query_pages, BATCH_GET_MAX};
use crate::dynamo::classify::build;
use crate::dynamo::s;
use crate::dynamo::schema::likes::{BY_TIME, BY_USER, LIKED_AT, PK, POST_ID, SK};

/// Where a bucket's listing is read: an index, its partition (attribute and value), and its
/// time attribute (its sort key).
pub(super) struct Listing {
    pub index: &'static str,
    pub hash: (&'static str, String),
    pub time: &'static str,
}

impl DynamoLikes {
    pub(super) async fn read_liked_at(
        &self,
        post: &PostId,
        user: &UserId,
    ) -> Result<Option<String>, StoreError> {
        get_string(&self.client, &self.table, like_key(post, user), LIKED_AT).await
    }

    pub(super) async fn read_likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        after: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        let start = after.map(|pos| {
            HashMap::from([
                (SK.to_owned(), s(user.as_str())),
                (LIKED_AT.to_owned(), s(pos.liked_at)),
                (PK.to_owned(), s(pos.post_bucket.to_string())),
            ])
        });
        let want = page::fetch_size(limit);
        let mut items = Vec::with_capacity(want);
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(BY_USER)
            .key_condition_expression("#u = :u")
            .expression_attribute_names("#u", SK)
            .expression_attribute_values(":u", s(user.as_str()))
            .scan_index_forward(false)
            .limit(i32::try_from(want).unwrap_or(i32::MAX))
            .set_exclusive_start_key(start);
        query_pages(query, |out| {
            for item in out.items() {
                items.push(UserLikePos {
                    liked_at: attr_s(item, LIKED_AT)?,
                    post_bucket: PostBucket::parse(&attr_s(item, PK)?)
                        .map_err(|e| StoreError::Internal(format!("stored key: {e}")))?,
                });
            }
            Ok(items.len() < want)
        })
        .await?;
        items.truncate(want);
        Ok(page::cut(items, limit))
    }

    pub(super) async fn read_likers_of_post(
        &self,
        post: &PostId,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        let per_bucket = PostBucket::all(post).map(|pb| {
            let listing = Listing {
                index: BY_TIME,
                hash: (PK, pb.to_string()),
                time: LIKED_AT,
            };
            self.bucket_listing(listing, BucketScan::new(limit, after.clone()))
        });
        Ok(page::merge(try_join_all(per_bucket).await?, limit))
    }

    pub(super) async fn read_liked_among(
        &self,
        user: &UserId,
        posts: &[PostId],
    ) -> Result<HashSet<PostId>, StoreError> {
        let mut liked = HashSet::new();
        for chunk in posts.chunks(BATCH_GET_MAX) {
            let mut keys = KeysAndAttributes::builder()
                .consistent_read(true)
                .projection_expression("#p")
                .expression_attribute_names("#p", POST_ID);
            for post in chunk {
                keys = keys.keys(like_key(post, user));
            }
            let found = calls::get_all(&self.client, &self.table, keys.build().map_err(build)?);
            for item in found.await? {
                let post = PostId::parse(&attr_s(&item, POST_ID)?)
                    .map_err(|e| StoreError::Internal(format!("stored post_id: {e}")))?;
                liked.insert(post);
            }
        }
        Ok(liked)
    }

    /// Which of `users` like the post: one eventually consistent point read each (half a read
    /// unit), in batches of 100, newest first.
    pub(super) async fn read_likers_among(
        &self,
        post: &PostId,
        users: &[UserId],
    ) -> Result<Vec<LikerPos>, StoreError> {
        let mut likers = Vec::new();
        for chunk in users.chunks(BATCH_GET_MAX) {
            let mut keys = KeysAndAttributes::builder()
                .projection_expression("#u, #t")
                .expression_attribute_names("#u", SK)
                .expression_attribute_names("#t", LIKED_AT);
            for user in chunk {
                keys = keys.keys(like_key(post, user));
            }
            let found = calls::get_all(&self.client, &self.table, keys.build().map_err(build)?);
            for item in found.await? {
                likers.push(LikerPos {
                    liked_at: attr_s(&item, LIKED_AT)?,
                    user_id: UserId::parse(&attr_s(&item, SK)?)
                        .map_err(|e| StoreError::Internal(format!("stored user_id: {e}")))?,
                });
            }
        }
        likers.sort_by(|a, b| b.cmp(a));
        Ok(likers)
    }

    /// One bucket's likers (or reactors of one kind) from `listing`'s index, read page by page
    /// until `scan` has what it needs (see [`BucketScan`] for the tie rule).
    pub(super) async fn bucket_listing(
        &self,
        listing: Listing,
        mut scan: BucketScan,
    ) -> Result<Page<LikerPos>, StoreError> {
        let (hash_attr, hash) = listing.hash;
        let read_size = i32::try_from(page::fetch_size(scan.limit())).unwrap_or(i32::MAX);
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(listing.index)
            .expression_attribute_names("#pb", hash_attr)
            .expression_attribute_values(":pb", s(hash))
            .scan_index_forward(false)
            .limit(read_size);
        query = match scan.start_at() {
            Some(t) => query
                .key_condition_expression("#pb = :pb AND #t <= :t")
                .expression_attribute_names("#t", listing.time)
                .expression_attribute_values(":t", s(t)),
            None => query.key_condition_expression("#pb = :pb"),
        };
        query_pages(query, |out| {
            for item in out.items() {
                let sk = attr_s(item, SK)?;
                // A foreign key (`Held::Foreign`) is no one's like or reaction: not listed.
                let Some(user) = Held::of(&sk).user() else {
                    continue;
                };
                let pos = LikerPos {
                    liked_at: attr_s(item, listing.time)?,
                    user_id: UserId::parse(user)
                        .map_err(|e| StoreError::Internal(format!("stored user_id: {e}")))?,
                };
                if !scan.offer(pos) {
                    return Ok(false);
                }
            }
            Ok(true)
        })
        .await?;
        Ok(scan.finish())
    }
}
