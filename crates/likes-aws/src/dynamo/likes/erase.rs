//! Erasing on the Likes table: a user's likes found through the `by_user` index, a bucket read
//! page by page; conditional and batch deletes.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};
use likes_core::erase::{EraseStore, Hidden, Reactions};
use likes_core::reaction::{sort_key, Held};
use likes_core::{Kind, PostBucket, StoreError, UserId};

use super::{attr_s, item_key, DynamoLikes};
use crate::dynamo::calls;
use crate::dynamo::classify::{build, classify, classify_read};
use crate::dynamo::schema::likes::{BY_REACTOR, BY_USER, LIKED_AT, PK, REACTED_AT, REACTOR, SK};
use crate::dynamo::{failed_condition, s};

impl DynamoLikes {
    async fn delete_keys(
        &self,
        keys: impl IntoIterator<Item = HashMap<String, AttributeValue>>,
    ) -> Result<(), StoreError> {
        let mut requests = Vec::new();
        for key in keys {
            let delete = DeleteRequest::builder()
                .set_key(Some(key))
                .build()
                .map_err(build)?;
            requests.push(WriteRequest::builder().delete_request(delete).build());
        }
        calls::write_all(&self.client, &self.table, requests, 8).await
    }
}

/// A user's index: `by_user` for likes, `by_reactor` for reactions.
pub(super) struct UserIndex {
    pub name: &'static str,
    /// Its partition key attribute (the user) and sort key attribute (the time).
    pub user: &'static str,
    pub time: &'static str,
}

/// The likes' index of a user.
pub(super) const LIKES_BY_USER: UserIndex = UserIndex {
    name: BY_USER,
    user: SK,
    time: LIKED_AT,
};

/// The reactions' index of a user.
pub(super) const REACTIONS_BY_USER: UserIndex = UserIndex {
    name: BY_REACTOR,
    user: REACTOR,
    time: REACTED_AT,
};

/// Which of a user's items an index query reads, by when they were made.
#[derive(Debug, Clone, Copy)]
pub(super) enum Made<'a> {
    /// At or before this time (an erase's cut-off), or all when `None`.
    UpTo(Option<&'a str>),
    /// At or after this time (a summary's `since`), at most this many a page: past a cap,
    /// a summary stops reading.
    Since(&'a str, usize),
}

impl DynamoLikes {
    /// One page of `index` for `user` (a user id, or a hidden owner:
    /// `likes_core::control::hidden_owner`), of the items `made` selects: each item's bucket
    /// and sort key, and where the next page starts.
    pub(super) async fn user_page(
        &self,
        index: &UserIndex,
        user: &str,
        made: Made<'_>,
        from: Option<HashMap<String, AttributeValue>>,
    ) -> Result<UserPage, StoreError> {
        let mut query = self
            .client
            .query()
            .table_name(&self.table)
            .index_name(index.name)
            .expression_attribute_names("#u", index.user)
            .expression_attribute_values(":u", s(user))
            .set_exclusive_start_key(from);
        let bound = match made {
            Made::UpTo(t) => t.map(|t| ("#u = :u AND #t <= :t", t)),
            Made::Since(t, page) => {
                let page = i32::try_from(page.max(1)).unwrap_or(i32::MAX);
                query = query.limit(page);
                Some(("#u = :u AND #t >= :t", t))
            }
        };
        // A condition naming `:t` always gets its value, whatever it is: an empty bound is
        // DynamoDB's to refuse, never read as no bound (an erase's cut-off must not widen).
        query = match bound {
            Some((condition, t)) => query
                .key_condition_expression(condition)
                .expression_attribute_names("#t", index.time)
                .expression_attribute_values(":t", s(t)),
            None => query.key_condition_expression("#u = :u"),
        };
        let out = query.send().await.map_err(classify_read)?;
        let mut items = Vec::with_capacity(out.items().len());
        for item in out.items() {
            let pb = attr_s(item, PK)?;
            let bucket = PostBucket::parse(&pb)
                .map_err(|e| StoreError::Internal(format!("stored key {pb:?}: {e}")))?;
            items.push((bucket, attr_s(item, SK)?));
        }
        let next = out.last_evaluated_key.filter(|k| !k.is_empty());
        Ok((items, next))
    }
}

/// A page of a user's index: each item's bucket and sort key, and where the next page starts.
pub(super) type UserPage = (
    Vec<(PostBucket, String)>,
    Option<HashMap<String, AttributeValue>>,
);

impl EraseStore for DynamoLikes {
    /// DynamoDB's `LastEvaluatedKey`.
    type Resume = HashMap<String, AttributeValue>;

    async fn user_likes(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<PostBucket>, Option<Self::Resume>), StoreError> {
        let made = Made::UpTo(up_to);
        let (items, next) = self
            .user_page(&LIKES_BY_USER, user.as_str(), made, from)
            .await?;
        let buckets = items.into_iter().map(|(b, _)| b).collect();
        Ok((buckets, next))
    }

    async fn delete_like_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        t: &str,
    ) -> Result<bool, StoreError> {
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, user.as_str())))
            .condition_expression("#t <= :t")
            .expression_attribute_names("#t", LIKED_AT)
            .expression_attribute_values(":t", s(t))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            // Gone already, or made again after the request: not this erase's to delete.
            Err(e) if failed_condition(&e) => Ok(false),
            Err(e) => Err(classify(e)),
        }
    }

    async fn delete_likes(
        &self,
        user: &UserId,
        buckets: Vec<PostBucket>,
    ) -> Result<(), StoreError> {
        self.delete_keys(buckets.iter().map(|b| item_key(b, user.as_str())))
            .await
    }

    async fn user_reactions(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<(PostBucket, Kind)>, Option<Self::Resume>), StoreError> {
        let made = Made::UpTo(up_to);
        let (items, next) = self
            .user_page(&REACTIONS_BY_USER, user.as_str(), made, from)
            .await?;
        let mut found = Vec::with_capacity(items.len());
        for (bucket, sk) in items {
            let kind = match Held::of(&sk) {
                Held::Reaction(_, kind) => Kind::parse(kind)
                    .map_err(|e| StoreError::Internal(format!("stored key {sk:?}: {e}")))?,
                // Not written by us (`Held::Foreign`): no reaction to erase, and no reason to
                // fail the person's erase over it.
                Held::Foreign => continue,
                _ => return Err(StoreError::Internal(format!("{sk:?} is not a reaction"))),
            };
            found.push((bucket, kind));
        }
        Ok((found, next))
    }

    async fn delete_reaction_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        t: &str,
    ) -> Result<bool, StoreError> {
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, sort_key(user, kind))))
            .condition_expression("#at <= :t")
            .expression_attribute_names("#at", REACTED_AT)
            .expression_attribute_values(":t", s(t))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if failed_condition(&e) => Ok(false),
            Err(e) => Err(classify(e)),
        }
    }

    async fn delete_reactions(
        &self,
        user: &UserId,
        found: Vec<(PostBucket, Kind)>,
    ) -> Result<(), StoreError> {
        self.delete_keys(
            found
                .iter()
                .map(|(b, kind)| item_key(b, sort_key(user, kind))),
        )
        .await
    }

    async fn bucket_page(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pb = :pb")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pb", s(bucket.to_string()))
            .projection_expression("#sk")
            .consistent_read(true)
            .send()
            .await
            .map_err(classify_read)?;
        out.items().iter().map(|item| attr_s(item, SK)).collect()
    }

    async fn delete_items(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> Result<(), StoreError> {
        self.delete_keys(sort_keys.into_iter().map(|k| item_key(bucket, k)))
            .await
    }

    async fn hidden(
        &self,
        user: &UserId,
        from: Option<Hidden<Self::Resume>>,
    ) -> Result<Reactions<Hidden<Self::Resume>>, StoreError> {
        self.hidden_page(user, from).await
    }

    async fn hide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        self.hide_item(bucket, user, kind).await
    }

    async fn unhide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        self.unhide_item(bucket, user, kind).await
    }

    async fn delete_hidden(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> Result<(), StoreError> {
        self.delete_hidden_item(bucket, user, kind, up_to).await
    }
}
