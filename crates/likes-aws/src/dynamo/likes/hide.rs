//! A suspended user's likes and reactions out of sight and back (`likes_core::suspend`): each
//! move one `TransactWriteItems` of the item and its hidden copy (`likes_core::control`), so the
//! stream sees the item's `REMOVE` or `INSERT` and never both copies or none.
//!
//! The hidden copy keeps every attribute of the item (its time, its token) but those that
//! would show it: its sort key is the hidden key, so `by_user` indexes it under the hidden owner;
//! a reaction's `reactor` is the hidden owner too (`by_reactor`), and it has no `kind_key`
//! (`by_kind` does not list it). `by_time` still holds a hidden like: listings skip control keys.

use std::collections::HashMap;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Delete, Put, TransactWriteItem};
use likes_core::control::{hidden_key, hidden_owner, unhidden};
use likes_core::erase::{Hidden, Reactions};
use likes_core::reaction::{kind_key, sort_key, Held};
use likes_core::{Kind, PostBucket, StoreError, UserId};

use super::erase::{Made, LIKES_BY_USER, REACTIONS_BY_USER};
use super::item::Request;
use super::write::is_ccf;
use super::{item_key, DynamoLikes};
use crate::dynamo::classify::{build, classify, classify_read};
use crate::dynamo::s;
use crate::dynamo::schema::likes::{KIND_KEY, LIKED_AT, MOVED, REACTED_AT, REACTOR, SK, TOKEN};

type Item = HashMap<String, AttributeValue>;

/// The attribute holding when an item of `kind` was made.
fn made_at(kind: &Kind) -> &'static str {
    if kind.is_like() {
        LIKED_AT
    } else {
        REACTED_AT
    }
}

impl DynamoLikes {
    pub(super) async fn hidden_page(
        &self,
        user: &UserId,
        from: Option<Hidden<Item>>,
    ) -> Result<Reactions<Hidden<Item>>, StoreError> {
        let owner = hidden_owner(user);
        let (likes, resume) = match from {
            None => (true, None),
            Some(Hidden::Likes(r)) => (true, Some(r)),
            Some(Hidden::Reactions(r)) => (false, r),
        };
        let index = if likes {
            &LIKES_BY_USER
        } else {
            &REACTIONS_BY_USER
        };
        let (items, next) = self
            .user_page(index, &owner, Made::UpTo(None), resume)
            .await?;
        let mut found = Vec::with_capacity(items.len());
        for (bucket, sk) in items {
            let kind = unhidden(&sk).map(Held::of).and_then(|h| h.kind());
            // A hidden key not written by this module is no one's to move.
            let Some(Ok(kind)) = kind.map(Kind::parse) else {
                continue;
            };
            found.push((bucket, kind));
        }
        let next = match (next, likes) {
            (Some(r), true) => Some(Hidden::Likes(r)),
            (None, true) => Some(Hidden::Reactions(None)),
            (Some(r), false) => Some(Hidden::Reactions(Some(r))),
            (None, false) => None,
        };
        Ok((found, next))
    }

    /// The item under `sk` in the bucket, read strongly.
    async fn item(&self, bucket: &PostBucket, sk: &str) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, sk)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify_read)?;
        Ok(out.item)
    }

    pub(super) async fn hide_item(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        let sk = sort_key(user, kind);
        let Some(mut item) = self.item(bucket, &sk).await? else {
            return Ok(false);
        };
        let time = made_at(kind);
        let at = item.get(time).cloned();
        let tok = item.get(TOKEN).cloned();
        // A visible item carries no move id, unless an older binary's restore copied one on:
        // the delete's condition takes it as read either way.
        let was_moved = item.get(MOVED).cloned();
        item.insert(SK.to_owned(), s(hidden_key(&sk)));
        item.insert(
            MOVED.to_owned(),
            s(uuid::Uuid::new_v4().simple().to_string()),
        );
        if !kind.is_like() {
            item.insert(REACTOR.to_owned(), s(hidden_owner(user)));
            item.remove(KIND_KEY);
        }
        let moves = [
            self.delete_as_read(bucket, &sk, time, at, tok, was_moved)?,
            self.put(item, false)?,
        ];
        self.make_moves(moves).await
    }

    pub(super) async fn unhide_item(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        let sk = sort_key(user, kind);
        let hidden = hidden_key(&sk);
        let Some(mut item) = self.item(bucket, &hidden).await? else {
            return Ok(false);
        };
        let time = made_at(kind);
        let at = item.get(time).cloned();
        let tok = item.get(TOKEN).cloned();
        let moved = item.remove(MOVED);
        item.insert(SK.to_owned(), s(sk.clone()));
        if !kind.is_like() {
            item.insert(REACTOR.to_owned(), s(user.as_str()));
            item.insert(KIND_KEY.to_owned(), s(kind_key(bucket, kind)));
        }
        let moves = [
            self.put(item, true)?,
            self.delete_as_read(
                bucket,
                &hidden,
                time,
                at.clone(),
                tok.clone(),
                moved.clone(),
            )?,
        ];
        if self.make_moves(moves).await? {
            return Ok(true);
        }
        // Not moved: the visible one was made again meanwhile (the put's condition), or another
        // move of this item raced it (a conflict cancels both). Only when a visible one stands
        // does the hidden copy go, and only the one read (its move): one a racing suspension
        // made since stays, and after a conflict the next sweep tries again.
        if self.item(bucket, &sk).await?.is_none() {
            return Ok(false);
        }
        let gone = [self.delete_as_read(bucket, &hidden, time, at, tok, moved)?];
        self.make_moves(gone).await?;
        Ok(false)
    }

    /// Drops the hidden copy of what `r` removes: an unlike or unreaction that found nothing
    /// visible (a suspension holds it) must not see it back on the restore.
    pub(super) async fn forget_hidden(&self, r: &Request<'_>) -> Result<(), StoreError> {
        let bucket = PostBucket::for_like(r.post, r.user);
        self.delete_hidden_item(&bucket, r.user, r.kind, None).await
    }

    /// Deletes the hidden copy, if made at or before `up_to` when given (an erase's time).
    pub(super) async fn delete_hidden_item(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut delete = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, hidden_key(&sort_key(user, kind)))));
        if let Some(t) = up_to {
            delete = delete
                .condition_expression("#t <= :t")
                .expression_attribute_names("#t", made_at(kind))
                .expression_attribute_values(":t", s(t));
        }
        match delete.send().await {
            Ok(_) => Ok(()),
            Err(e) if crate::dynamo::failed_condition(&e) => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }

    /// A delete of the item under `sk`, on condition that it is the one read: made at `at`,
    /// by the request of token `tok` (two made in one millisecond differ by it), and, for a
    /// hidden copy, by the move `moved` (none for a visible item).
    fn delete_as_read(
        &self,
        bucket: &PostBucket,
        sk: &str,
        time: &str,
        at: Option<AttributeValue>,
        tok: Option<AttributeValue>,
        moved: Option<AttributeValue>,
    ) -> Result<TransactWriteItem, StoreError> {
        let at = at.ok_or_else(|| StoreError::Internal(format!("stored {sk:?} has no {time}")))?;
        let mut delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, sk)))
            .expression_attribute_names("#t", time)
            .expression_attribute_names("#k", TOKEN)
            .expression_attribute_names("#m", MOVED)
            .expression_attribute_values(":t", at);
        let token = match tok {
            Some(tok) => {
                delete = delete.expression_attribute_values(":k", tok);
                "#k = :k"
            }
            None => "attribute_not_exists(#k)",
        };
        let move_id = match moved {
            Some(moved) => {
                delete = delete.expression_attribute_values(":m", moved);
                "#m = :m"
            }
            None => "attribute_not_exists(#m)",
        };
        delete = delete.condition_expression(format!("#t = :t AND {token} AND {move_id}"));
        Ok(TransactWriteItem::builder()
            .delete(delete.build().map_err(build)?)
            .build())
    }

    /// A put of `item`, only where nothing is (`absent`) or over whatever is.
    fn put(&self, item: Item, absent: bool) -> Result<TransactWriteItem, StoreError> {
        let mut put = Put::builder().table_name(&self.table).set_item(Some(item));
        if absent {
            put = put
                .condition_expression("attribute_not_exists(#sk)")
                .expression_attribute_names("#sk", SK);
        }
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(build)?)
            .build())
    }

    /// Whether the moves were made; false when a condition refused them (the item changed
    /// since it was read: the sweep's next pass sees it as it is).
    async fn make_moves<const N: usize>(
        &self,
        moves: [TransactWriteItem; N],
    ) -> Result<bool, StoreError> {
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(moves.to_vec()))
            .send()
            .await;
        let err = match res {
            Ok(_) => return Ok(true),
            Err(e) => e,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
            err.as_service_error()
        {
            // The item changed since it was read, or another transaction holds it: not moved
            // this pass; the sweep's next pass sees it as it is.
            let busy = |c: Option<&str>| {
                is_ccf(c) || matches!(c, Some("TransactionConflict" | "TransactionInProgress"))
            };
            if cancel.cancellation_reasons().iter().any(|r| busy(r.code())) {
                return Ok(false);
            }
        }
        Err(classify(err))
    }
}
