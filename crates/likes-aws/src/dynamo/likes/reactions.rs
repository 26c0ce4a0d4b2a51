//! The reactions port on the Likes table: the like's write path for every kind (`write`),
//! `single` mode's replacement (`single`), and the reads of kinds.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::KeysAndAttributes;
use futures::future::try_join_all;
use likes_core::reaction::Held;
use likes_core::store::page::{self, BucketScan};
use likes_core::{
    Kind, Kinds, LikerPos, LikesStore, Page, PostBucket, PostId, Reacted, ReactionsStore,
    StoreError, UserId, WriteToken,
};

use super::read::Listing;
use super::write::Request;
use super::{attr_s, reaction_key, DynamoLikes};
use crate::dynamo::calls::{self, BATCH_GET_MAX};
use crate::dynamo::classify::build;
use crate::dynamo::schema::likes::{BY_KIND, KIND_KEY, POST_ID, REACTED_AT, SK};

/// The kinds of the sort keys `keys`, in kind order; a key of a kind outside the grammar (not
/// written by this API) is an error, not dropped.
fn kinds_of(keys: impl IntoIterator<Item = String>) -> Result<Vec<Kind>, StoreError> {
    let mut kinds = Vec::new();
    for sk in keys {
        if let Some(kind) = Held::of(&sk).kind() {
            kinds.push(
                Kind::parse(kind)
                    .map_err(|e| StoreError::Internal(format!("stored key {sk:?}: {e}")))?,
            );
        }
    }
    kinds.sort();
    Ok(kinds)
}

impl ReactionsStore for DynamoLikes {
    async fn react(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let request = Request {
            post,
            user,
            kind,
            token,
        };
        self.write_like(&request, at).await
    }

    async fn unreact(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let request = Request {
            post,
            user,
            kind,
            token,
        };
        self.write_unlike(&request).await
    }

    async fn react_only(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> Result<Reacted, StoreError> {
        let request = Request {
            post,
            user,
            kind,
            token,
        };
        self.write_only(&request, at).await
    }

    async fn reactions_of(&self, post: &PostId, user: &UserId) -> Result<Vec<Kind>, StoreError> {
        let held = self
            .held_items(&PostBucket::for_like(post, user), user)
            .await?;
        kinds_of(held.into_iter().map(|(sk, _)| sk))
    }

    async fn reacted_among(
        &self,
        user: &UserId,
        posts: &[PostId],
        kinds: &Kinds,
    ) -> Result<HashMap<PostId, Vec<Kind>>, StoreError> {
        if kinds.like_only() {
            // As before reactions: one BatchGetItem of the likes' keys.
            let liked = self.liked_among(user, posts).await?;
            return Ok(liked
                .into_iter()
                .map(|post| (post, vec![Kind::like()]))
                .collect());
        }
        let keys: Vec<_> = posts
            .iter()
            .flat_map(|post| kinds.iter().map(move |kind| reaction_key(post, user, kind)))
            .collect();
        let mut found: HashMap<PostId, Vec<String>> = HashMap::new();
        for chunk in keys.chunks(BATCH_GET_MAX) {
            let batch = KeysAndAttributes::builder()
                .consistent_read(true)
                .projection_expression("#p, #sk")
                .expression_attribute_names("#p", POST_ID)
                .expression_attribute_names("#sk", SK)
                .set_keys(Some(chunk.to_vec()))
                .build()
                .map_err(build)?;
            for item in calls::get_all(&self.client, &self.table, batch).await? {
                let post = PostId::parse(&attr_s(&item, POST_ID)?)
                    .map_err(|e| StoreError::Internal(format!("stored post_id: {e}")))?;
                found.entry(post).or_default().push(attr_s(&item, SK)?);
            }
        }
        found
            .into_iter()
            .map(|(post, keys)| Ok((post, kinds_of(keys)?)))
            .collect()
    }

    async fn held_since(
        &self,
        user: &UserId,
        since: &str,
        kinds: &Kinds,
        cap: usize,
    ) -> Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError> {
        self.read_held_since(user, since, kinds, cap).await
    }

    async fn reactors_of_post(
        &self,
        post: &PostId,
        kind: &Kind,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        if kind.is_like() {
            return self.likers_of_post(post, limit, after).await;
        }
        let per_bucket = PostBucket::all(post).map(|pb| {
            let listing = Listing {
                index: BY_KIND,
                hash: (KIND_KEY, likes_core::reaction::kind_key(&pb, kind)),
                time: REACTED_AT,
            };
            self.bucket_listing(listing, BucketScan::new(limit, after.clone()))
        });
        Ok(page::merge(try_join_all(per_bucket).await?, limit))
    }
}
