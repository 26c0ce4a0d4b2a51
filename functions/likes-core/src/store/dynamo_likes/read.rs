//! The Likes table's reads: did I like it, my likes, the likers of a post (its 16 buckets merged),
//! and liked-by-me for a feed.

use std::collections::{HashMap, HashSet};

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use futures::future::try_join_all;

use super::{attr_s, key, s, DynamoLikes};
use crate::bucket::PostBucket;
use crate::ids::{PostId, UserId};
use crate::schema::likes::{BY_TIME, BY_USER, LIKED_AT, PK, POST_ID, SK};
use crate::store::batch;
use crate::store::error::{build, classify_read, StoreError};
use crate::store::page::{self, BucketScan, Page};
use crate::store::{LikerPos, UserLikePos};

/// Most keys one BatchGetItem may carry.
pub use crate::store::batch::BATCH_GET_MAX;

impl DynamoLikes {
    pub(super) async fn read_liked_at(
        &self,
        post: &PostId,
        user: &UserId,
    ) -> Result<Option<String>, StoreError> {
        let [pk, sk] = key(post, user);
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
            .map_err(classify_read)?;
        Ok(out
            .item
            .and_then(|mut item| item.remove(LIKED_AT))
            .and_then(|v| v.as_s().ok().cloned()))
    }

    pub(super) async fn read_likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        after: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        let start = after.map(|pos| {
            HashMap::from([
                (SK.to_owned(), s(user.to_string())),
                (LIKED_AT.to_owned(), s(pos.liked_at)),
                (PK.to_owned(), s(pos.post_bucket.to_string())),
            ])
        });
        let want = page::fetch_size(limit);
        let mut items = Vec::with_capacity(want);
        let mut start = start;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(BY_USER)
                .key_condition_expression("#u = :u")
                .expression_attribute_names("#u", SK)
                .expression_attribute_values(":u", s(user.to_string()))
                .scan_index_forward(false)
                .limit(i32::try_from(want - items.len()).unwrap_or(i32::MAX))
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify_read)?;
            for item in out.items() {
                items.push(UserLikePos {
                    liked_at: attr_s(item, LIKED_AT)?,
                    post_bucket: PostBucket::parse(&attr_s(item, PK)?)
                        .map_err(|e| StoreError::Internal(format!("stored key: {e}")))?,
                });
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() && items.len() < want => start = Some(k),
                _ => break,
            }
        }
        Ok(page::cut(items, limit))
    }

    pub(super) async fn read_likers_of_post(
        &self,
        post: &PostId,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        let per_bucket = PostBucket::all(post)
            .map(|pb| self.bucket_likers(pb, BucketScan::new(limit, after.clone())));
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
                let [pk, sk] = key(post, user);
                keys = keys.keys(HashMap::from([pk, sk]));
            }
            let found = batch::get_all(&self.client, &self.table, keys.build().map_err(build)?);
            for item in found.await? {
                let post = PostId::parse(&attr_s(&item, POST_ID)?)
                    .map_err(|e| StoreError::Internal(format!("stored post_id: {e}")))?;
                liked.insert(post);
            }
        }
        Ok(liked)
    }

    /// One bucket's likers from the `by_time` index, read page by page until `scan` has what
    /// it needs (see [`BucketScan`] for the tie rule).
    async fn bucket_likers(
        &self,
        pb: PostBucket,
        mut scan: BucketScan,
    ) -> Result<Page<LikerPos>, StoreError> {
        let mut start: Option<HashMap<String, AttributeValue>> = None;
        let read_size = i32::try_from(page::fetch_size(scan.limit())).unwrap_or(i32::MAX);
        'pages: loop {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(BY_TIME)
                .expression_attribute_names("#pb", PK)
                .expression_attribute_values(":pb", s(pb.to_string()))
                .scan_index_forward(false)
                .limit(read_size)
                .set_exclusive_start_key(start.take());
            q = match scan.start_at() {
                Some(t) => q
                    .key_condition_expression("#pb = :pb AND #t <= :t")
                    .expression_attribute_names("#t", LIKED_AT)
                    .expression_attribute_values(":t", s(t)),
                None => q.key_condition_expression("#pb = :pb"),
            };
            let out = q.send().await.map_err(classify_read)?;
            for item in out.items() {
                let pos = LikerPos {
                    liked_at: attr_s(item, LIKED_AT)?,
                    user_id: UserId::parse(&attr_s(item, SK)?)
                        .map_err(|e| StoreError::Internal(format!("stored user_id: {e}")))?,
                };
                if !scan.offer(pos) {
                    break 'pages;
                }
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        Ok(scan.finish())
    }
}
