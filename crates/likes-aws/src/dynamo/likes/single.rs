//! `single` mode: a user holds at most one reaction per post, and reacting with another kind
//! replaces it atomically (docs/reactions.md).
//!
//! One round reads the user's guard (`likes_core::control::guard_key`), then the user's items in
//! the post's bucket (a consistent Query of `likes_core::reaction::user_range`), in that order
//! (`seen`), then writes one transaction: a `Delete` of each held kind, conditioned on its token; a `Put`
//! of the new kind, conditioned on its absence; the guard, conditioned on the version read; and,
//! for a named request, its marker. The item conditions catch a held kind that changed; the
//! guard catches a kind created that the read did not see (a `Put` can only check its own
//! key): every `single`-mode creation rewrites the guard, so two of them cannot both commit on
//! the same read. A failed condition means the state moved: the round reads again. So there is
//! never a moment with two reactions, or with none, and each request takes effect once.
//!
//! Guards are control items (`~` keys): no count, index or listing sees them, and they expire
//! after a day (TTL), which only makes a later round find no guard, as the condition expects.

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};
use likes_core::control::guard_key;
use likes_core::reaction::{sort_key, user_range, Held};
use likes_core::{Kind, PostBucket, Reacted, StoreError, UserId, WriteToken};

use super::write::{answer_of, backoff, is_ccf, no_sdk_retries, Op, Request, ATTEMPTS, MAX_FLIPS};
use super::{item_key, DynamoLikes};
use crate::dynamo::calls::{get_string, query_all};
use crate::dynamo::classify::{build, classify};
use crate::dynamo::s;
use crate::dynamo::schema::likes::{EXPIRES_AT, OP, PK, REPLACED, SK, TOKEN};

/// The guard's version: the token of the transaction that last wrote it.
const VERSION: &str = "v";
/// How long a guard is kept: only concurrent requests need it.
const GUARD_TTL_SECS: i64 = 24 * 3600;

/// What one round read: the user's items in the bucket (sort key, token) and the guard.
struct Seen {
    held: Vec<(String, Option<String>)>,
    guard: Option<String>,
}

impl DynamoLikes {
    /// The user's reactions in `bucket` (the like included): sort key and token, consistently.
    pub(super) async fn held_items(
        &self,
        bucket: &PostBucket,
        user: &UserId,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let range = user_range(user);
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pb = :pb AND #sk BETWEEN :from AND :to")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#tok", TOKEN)
            .expression_attribute_values(":pb", s(bucket.to_string()))
            .expression_attribute_values(":from", s(&range.from))
            .expression_attribute_values(":to", s(&range.to))
            .projection_expression("#sk, #tok")
            .consistent_read(true);
        let mut out = Vec::new();
        for item in query_all(query).await? {
            let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
            if let Some(sk) = get(SK).filter(|sk| range.contains(sk)) {
                out.push((sk, get(TOKEN)));
            }
        }
        Ok(out)
    }

    /// The guard first, then the items: in that order, a creation that commits between the
    /// two reads either changed the guard after it was read (the transaction's condition fails)
    /// or committed before it was read (the Query, strongly consistent, sees its item). Read
    /// the other way round (or at once), a creation committing between them is seen by neither
    /// read's check, and two kinds would be held.
    async fn seen(&self, bucket: &PostBucket, user: &UserId) -> Result<Seen, StoreError> {
        let key = item_key(bucket, guard_key(user));
        let guard = get_string(&self.client, &self.table, key, VERSION).await?;
        let held = self.held_items(bucket, user).await?;
        Ok(Seen { held, guard })
    }

    pub(super) async fn write_only(
        &self,
        r: &Request<'_>,
        at: &str,
    ) -> Result<Reacted, StoreError> {
        let (mut attempt, mut rounds) = (1, 0);
        let mut tried = None;
        loop {
            let err = match self.only_round(r, at, &mut tried).await {
                Ok(Some(answer)) => return Ok(answer),
                Ok(None) if rounds < MAX_FLIPS => {
                    rounds += 1;
                    continue;
                }
                Ok(None) => StoreError::Unavailable(
                    "the user's reactions kept changing under the request".into(),
                ),
                Err(e) => e,
            };
            match err {
                StoreError::Unavailable(_) if attempt < ATTEMPTS => {
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                StoreError::OutcomeUnknown(detail) => {
                    return self.settle_unknown(r, tried, detail).await;
                }
                other => return Err(other),
            }
        }
    }

    /// A transaction whose answer was lost: a named request's marker exists exactly when it
    /// was applied; an unnamed one finds its token on the new item, or cannot know.
    async fn settle_unknown(
        &self,
        r: &Request<'_>,
        tried: Option<Kind>,
        detail: String,
    ) -> Result<Reacted, StoreError> {
        if r.token.is_keyed() {
            return match self.marker_item(r).await {
                Ok(Some((op, replaced))) => Ok(Reacted {
                    changed: answer_of(Op::Like, &op)?,
                    replaced,
                }),
                _ => Err(StoreError::OutcomeUnknown(detail)),
            };
        }
        match get_string(&self.client, &self.table, r.key(), TOKEN).await {
            Ok(Some(t)) if t == r.token.as_str() => Ok(Reacted {
                changed: true,
                replaced: tried,
            }),
            _ => Err(StoreError::OutcomeUnknown(detail)),
        }
    }

    /// One read and one transaction: `Some` answer, or `None` when the state moved under it.
    async fn only_round(
        &self,
        r: &Request<'_>,
        at: &str,
        tried: &mut Option<Kind>,
    ) -> Result<Option<Reacted>, StoreError> {
        let bucket = PostBucket::for_like(r.post, r.user);
        let seen = self.seen(&bucket, r.user).await?;
        let mine = sort_key(r.user, r.kind);
        let own = seen.held.iter().find(|(sk, _)| *sk == mine);
        if let (Some((_, tok)), false) = (own, r.token.is_keyed()) {
            // Already this kind: nothing to write (our own token only after a lost answer).
            return Ok(Some(Reacted {
                changed: tok.as_deref() == Some(r.token.as_str()),
                replaced: None,
            }));
        }
        let mut items = Vec::with_capacity(seen.held.len() + 3);
        let mut replaced = None;
        if own.is_some() {
            // A named request that finds its kind held: the check and its marker, together.
            items.push(
                TransactWriteItem::builder()
                    .condition_check(
                        ConditionCheck::builder()
                            .table_name(&self.table)
                            .set_key(Some(r.key()))
                            .condition_expression("attribute_exists(#sk)")
                            .expression_attribute_names("#sk", SK)
                            .build()
                            .map_err(build)?,
                    )
                    .build(),
            );
        } else {
            for (sk, tok) in &seen.held {
                let kind = Held::of(sk)
                    .kind()
                    .map(Kind::parse)
                    .transpose()
                    .map_err(|e| {
                        StoreError::Internal(format!("stored reaction key {sk:?}: {e}"))
                    })?;
                replaced = replaced.or(kind);
                items.push(self.delete_held(&bucket, sk, tok.as_deref())?);
            }
            items.push(
                TransactWriteItem::builder()
                    .put(
                        Put::builder()
                            .table_name(&self.table)
                            .set_item(Some(r.item(at)))
                            .condition_expression("attribute_not_exists(#sk)")
                            .expression_attribute_names("#sk", SK)
                            .build()
                            .map_err(build)?,
                    )
                    .build(),
            );
            items.push(self.guard_put(&bucket, r, seen.guard.as_deref())?);
            tried.clone_from(&replaced);
        }
        let effect = own.is_none();
        if r.token.is_keyed() {
            let recorded = if effect {
                Op::Like.name()
            } else {
                Op::Like.noop_name()
            };
            items.push(self.marker_put(r, &bucket, recorded, replaced.as_ref())?);
        }
        let marker_at = items.len() - 1;
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(items))
            .customize()
            .config_override(no_sdk_retries())
            .send()
            .await;
        let err = match res {
            Ok(_) => {
                return Ok(Some(Reacted {
                    changed: effect,
                    replaced: if effect { replaced } else { None },
                }))
            }
            Err(e) => e,
        };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
            err.as_service_error()
        else {
            return Err(classify(err));
        };
        let reasons = cancel.cancellation_reasons();
        if r.token.is_keyed() && is_ccf(reasons.get(marker_at).and_then(|x| x.code())) {
            // An earlier attempt of this request settled it: answer as it was answered.
            let item = reasons[marker_at].item();
            let get = |k: &str| item.and_then(|i| i.get(k)).and_then(|v| v.as_s().ok());
            let found = get(OP).ok_or(StoreError::KeyReused)?;
            return Ok(Some(Reacted {
                changed: answer_of(Op::Like, found)?,
                replaced: get(REPLACED).and_then(|k| Kind::parse(k).ok()),
            }));
        }
        if reasons.iter().any(|x| is_ccf(x.code())) {
            return Ok(None);
        }
        Err(StoreError::Unavailable(format!(
            "transaction cancelled: {:?}",
            reasons.iter().map(|x| x.code()).collect::<Vec<_>>()
        )))
    }

    fn delete_held(
        &self,
        bucket: &PostBucket,
        sk: &str,
        tok: Option<&str>,
    ) -> Result<TransactWriteItem, StoreError> {
        let mut delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(item_key(bucket, sk)))
            .expression_attribute_names("#sk", SK);
        delete = match tok {
            Some(tok) => delete
                .condition_expression("attribute_exists(#sk) AND #tok = :tok")
                .expression_attribute_names("#tok", TOKEN)
                .expression_attribute_values(":tok", s(tok)),
            None => delete.condition_expression("attribute_exists(#sk)"),
        };
        Ok(TransactWriteItem::builder()
            .delete(delete.build().map_err(build)?)
            .build())
    }

    fn guard_put(
        &self,
        bucket: &PostBucket,
        r: &Request<'_>,
        seen: Option<&str>,
    ) -> Result<TransactWriteItem, StoreError> {
        let expires = chrono::Utc::now().timestamp() + GUARD_TTL_SECS;
        let mut put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(item_key(bucket, guard_key(r.user))))
            // A fresh version each time: a token can repeat (a client's `Idempotency-Key`
            // reused for another kind), and a version seen again would pass a stale read.
            .item(VERSION, s(WriteToken::random().as_str()))
            .item(EXPIRES_AT, AttributeValue::N(expires.to_string()))
            .expression_attribute_names("#v", VERSION);
        put = match seen {
            Some(v) => put
                .condition_expression("#v = :v")
                .expression_attribute_values(":v", s(v)),
            None => put.condition_expression("attribute_not_exists(#v)"),
        };
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(build)?)
            .build())
    }

    fn marker_put(
        &self,
        r: &Request<'_>,
        bucket: &PostBucket,
        recorded: &str,
        replaced: Option<&Kind>,
    ) -> Result<TransactWriteItem, StoreError> {
        let expires = chrono::Utc::now().timestamp() + super::write::MARKER_TTL_SECS;
        let (table, key, key_attr) = self.marker_at(r, bucket);
        let mut put = Put::builder()
            .table_name(table)
            .set_item(Some(key))
            .item(OP, s(recorded))
            .item(EXPIRES_AT, AttributeValue::N(expires.to_string()))
            .condition_expression("attribute_not_exists(#sk)")
            .expression_attribute_names("#sk", key_attr)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        if let Some(kind) = replaced {
            put = put.item(REPLACED, s(kind.as_str()));
        }
        Ok(TransactWriteItem::builder()
            .put(put.build().map_err(build)?)
            .build())
    }

    /// A named request's marker: what it recorded, and the kind it replaced.
    async fn marker_item(
        &self,
        r: &Request<'_>,
    ) -> Result<Option<(String, Option<Kind>)>, StoreError> {
        let (table, key, _) = self.marker_at(r, &PostBucket::for_like(r.post, r.user));
        let out = self
            .client
            .get_item()
            .table_name(table)
            .set_key(Some(key))
            .consistent_read(true)
            .send()
            .await
            .map_err(crate::dynamo::classify::classify_read)?;
        Ok(out.item.and_then(|item| {
            let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
            let op = get(OP)?;
            Some((op, get(REPLACED).and_then(|k| Kind::parse(&k).ok())))
        }))
    }
}
