//! Like and unlike: one request, one effect.
//!
//! Per (user, post) the like state is a register the requests flip. Each request must take
//! effect at most once, at one instant between its arrival and its answer, and `changed: true`
//! must be reported by exactly the requests that flipped it. The hard part is a failure whose
//! outcome is unknown: the write may have been applied, and a later request (the same user on a
//! second device) may have changed the like since. A blind retry could then apply this request
//! a second time — re-create a like that was removed, or remove a like made after this unlike.
//! So:
//!
//! - Failures that certainly did not take effect (a throttling answer, a refused connection)
//!   are retried here, with the same token. The SDK's own retries are off for these writes:
//!   it cannot tell the two kinds of failure apart.
//! - A failure whose outcome is unknown is never retried. A like looks for its own token on the
//!   item (a consistent read): found, it made the like. Otherwise, and for an unlike (which
//!   leaves nothing to find), the answer is `OutcomeUnknown` — a 503 that says so — rather than
//!   a guess.
//! - A request the client names with an `Idempotency-Key` writes, in one transaction with its
//!   effect, a marker item: into the Markers table, keyed by the user (`schema::markers`), or
//!   without one into the like's partition (`likes_core::control::marker_key`). A retry
//!   with the same key finds the marker and is answered `changed: true` without touching the
//!   like, however the like changed in between. A named request that finds the like already as
//!   asked records that too, in one transaction with the check that it still is (a
//!   `ConditionCheck`): its retries are answered `changed: false` and never take effect later.
//!   A marker's absence means the request has not settled. Markers expire after a day (TTL
//!   attribute `expires_at`).
//!
//! No clock is involved in any decision. One bound is assumed and not enforced: a write whose
//! answer was lost is applied by DynamoDB within the attempt's timeout (3 s) or not at all, so
//! that an `OutcomeUnknown` request has settled by the time its 503 reaches the client.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{
    AttributeValue, ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure,
    TransactWriteItem,
};

use likes_core::control::marker_key;
use likes_core::reaction::sort_key;
use likes_core::{PostBucket, StoreError};

pub(super) use super::item::Request;
use super::{item_key, DynamoLikes};
use crate::dynamo::calls::get_string;
use crate::dynamo::classify::{build, classify};
use crate::dynamo::schema::likes::{EXPIRES_AT, OP, SK, TOKEN};
use crate::dynamo::schema::markers;
use crate::dynamo::{failed_condition, s};

/// Attempts at a write that failed without taking effect.
pub(super) const ATTEMPTS: u32 = 3;
/// How long a request marker is kept: a client's retries of one request come within it.
pub(super) const MARKER_TTL_SECS: i64 = 24 * 3600;

pub(super) fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(25 << attempt.min(5))
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    Like,
    Unlike,
}

impl Op {
    /// What a marker records for a named request that took effect.
    pub(super) fn name(self) -> &'static str {
        match self {
            Op::Like => "like",
            Op::Unlike => "unlike",
        }
    }

    /// What a marker records for a named request that found the like already as asked.
    pub(super) fn noop_name(self) -> &'static str {
        match self {
            Op::Like => "like-noop",
            Op::Unlike => "unlike-noop",
        }
    }
}

/// Which transaction a named request tries: its effect, or the record that it had none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    Effect,
    NoOp,
}

impl Step {
    fn other(self) -> Self {
        match self {
            Step::Effect => Step::NoOp,
            Step::NoOp => Step::Effect,
        }
    }
}

/// What one transaction of a named request settled.
enum Settled {
    /// The request's answer: whether it changed the like.
    Answer(bool),
    /// The like was not as the step assumed (it changed meanwhile): try the other step.
    Flip,
}

/// How often a named request may find the like changed under it before it answers 503.
pub(super) const MAX_FLIPS: u32 = 4;

/// The answer a marker records for `op`: `changed` for its effect, not for its no-op, and a
/// 422 for a marker of another request.
pub(super) fn answer_of(op: Op, recorded: &str) -> Result<bool, StoreError> {
    if recorded == op.name() {
        Ok(true)
    } else if recorded == op.noop_name() {
        Ok(false)
    } else {
        Err(StoreError::KeyReused)
    }
}

/// The SDK's retries, off for one call: this module decides what may be retried.
pub(super) fn no_sdk_retries() -> aws_sdk_dynamodb::config::Builder {
    aws_sdk_dynamodb::config::Config::builder().retry_config(RetryConfig::disabled())
}

pub(super) fn is_ccf(code: Option<&str>) -> bool {
    code == Some("ConditionalCheckFailed")
}

impl DynamoLikes {
    pub(super) async fn write_like(
        &self,
        r: &Request<'_>,
        liked_at: &str,
    ) -> Result<bool, StoreError> {
        if r.token.is_keyed() {
            return self.keyed(Op::Like, r, liked_at).await;
        }
        let mut attempt = 1;
        loop {
            match self.put_like(r, liked_at).await {
                Err(StoreError::Unavailable(_)) if attempt < ATTEMPTS => {
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                Err(StoreError::OutcomeUnknown(detail)) => {
                    // Not retried (see the module docs). Our token on the item proves the write
                    // landed; anything else leaves the outcome open.
                    return match self.stored_token(r).await {
                        Ok(Some(t)) if t == r.token.as_str() => Ok(true),
                        _ => Err(StoreError::OutcomeUnknown(detail)),
                    };
                }
                other => return other,
            }
        }
    }

    async fn put_like(&self, r: &Request<'_>, liked_at: &str) -> Result<bool, StoreError> {
        let res = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(r.item(liked_at)))
            // INSERT … ON CONFLICT DO NOTHING: checked atomically with the write.
            .condition_expression("attribute_not_exists(#sk)")
            .expression_attribute_names("#sk", SK)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .customize()
            .config_override(no_sdk_retries())
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) => match e.as_service_error() {
                // Already liked: by this request only if the item carries its token.
                Some(PutItemError::ConditionalCheckFailedException(ccf)) => Ok(ccf
                    .item()
                    .and_then(|item| item.get(TOKEN))
                    .and_then(|v| v.as_s().ok())
                    .is_some_and(|t| t == r.token.as_str())),
                _ => Err(classify(e)),
            },
        }
    }

    pub(super) async fn write_unlike(&self, r: &Request<'_>) -> Result<bool, StoreError> {
        let changed = self.remove(r).await?;
        if !changed {
            // Nothing visible to remove: a suspension may hold it out of sight, and a restore
            // would bring back what the user removed. One more delete, on this path only.
            self.forget_hidden(r).await?;
        }
        Ok(changed)
    }

    async fn remove(&self, r: &Request<'_>) -> Result<bool, StoreError> {
        if r.token.is_keyed() {
            return self.keyed(Op::Unlike, r, "").await;
        }
        let mut attempt = 1;
        loop {
            let res = self
                .client
                .delete_item()
                .table_name(&self.table)
                .set_key(Some(r.key()))
                // Without the condition a delete of a missing item also succeeds, and the caller
                // could not tell whether anything changed.
                .condition_expression("attribute_exists(#sk)")
                .expression_attribute_names("#sk", SK)
                .customize()
                .config_override(no_sdk_retries())
                .send()
                .await;
            let err = match res {
                // Nothing to delete: the user did not like the post.
                Err(e) if failed_condition(&e) => return Ok(false),
                Err(e) => classify(e),
                Ok(_) => return Ok(true),
            };
            match err {
                StoreError::Unavailable(_) if attempt < ATTEMPTS => {
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                // An unknown outcome stays unknown: the removed like leaves no trace to check.
                other => return Err(other),
            }
        }
    }

    /// A request the client named: its effect and its marker in one transaction — or, when the
    /// like is already as asked, the check of that and a marker of the no-op in one transaction,
    /// so that the no-op is remembered too: a retry with the same key is answered as the first
    /// attempt was, whatever happened in between, and never takes effect later.
    async fn keyed(&self, op: Op, r: &Request<'_>, liked_at: &str) -> Result<bool, StoreError> {
        let mut attempt = 1;
        let mut step = Step::Effect;
        let mut flips = 0;
        loop {
            let err = match self.transact(op, step, r, liked_at).await {
                Ok(Settled::Answer(changed)) => return Ok(changed),
                // The like changed between the two transactions: decide again.
                Ok(Settled::Flip) if flips < MAX_FLIPS => {
                    step = step.other();
                    flips += 1;
                    continue;
                }
                Ok(Settled::Flip) => {
                    StoreError::Unavailable("the like kept changing under a named request".into())
                }
                Err(e) => e,
            };
            match err {
                StoreError::Unavailable(_) if attempt < ATTEMPTS => {
                    tokio::time::sleep(backoff(attempt)).await;
                    attempt += 1;
                }
                StoreError::OutcomeUnknown(detail) => {
                    // The marker exists exactly when the transaction was applied.
                    return match self.marker_op(r).await {
                        Ok(Some(found)) => answer_of(op, &found),
                        _ => Err(StoreError::OutcomeUnknown(detail)),
                    };
                }
                other => return Err(other),
            }
        }
    }

    async fn transact(
        &self,
        op: Op,
        step: Step,
        r: &Request<'_>,
        liked_at: &str,
    ) -> Result<Settled, StoreError> {
        let bucket = PostBucket::for_like(r.post, r.user);
        let (exists, missing) = ("attribute_exists(#sk)", "attribute_not_exists(#sk)");
        let first = match (step, op) {
            (Step::Effect, Op::Like) => TransactWriteItem::builder().put(
                Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(r.item(liked_at)))
                    .condition_expression(missing)
                    .expression_attribute_names("#sk", SK)
                    .build()
                    .map_err(build)?,
            ),
            (Step::Effect, Op::Unlike) => TransactWriteItem::builder().delete(
                Delete::builder()
                    .table_name(&self.table)
                    .set_key(Some(r.key()))
                    .condition_expression(exists)
                    .expression_attribute_names("#sk", SK)
                    .build()
                    .map_err(build)?,
            ),
            // A no-op holds while the like is as asked: liked for a like, absent for an unlike.
            (Step::NoOp, op) => TransactWriteItem::builder().condition_check(
                ConditionCheck::builder()
                    .table_name(&self.table)
                    .set_key(Some(r.key()))
                    .condition_expression(if op == Op::Like { exists } else { missing })
                    .expression_attribute_names("#sk", SK)
                    .build()
                    .map_err(build)?,
            ),
        };
        let expires = chrono::Utc::now().timestamp() + MARKER_TTL_SECS;
        let recorded = match step {
            Step::Effect => op.name(),
            Step::NoOp => op.noop_name(),
        };
        let (table, key, key_attr) = self.marker_at(r, &bucket);
        let marker = Put::builder()
            .table_name(table)
            .set_item(Some(key))
            .item(OP, s(recorded))
            .item(EXPIRES_AT, AttributeValue::N(expires.to_string()))
            .condition_expression(missing)
            .expression_attribute_names("#sk", key_attr)
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(build)?;
        let res = self
            .client
            .transact_write_items()
            .transact_items(first.build())
            .transact_items(TransactWriteItem::builder().put(marker).build())
            .customize()
            .config_override(no_sdk_retries())
            .send()
            .await;
        let err = match res {
            Ok(_) => return Ok(Settled::Answer(step == Step::Effect)),
            Err(e) => e,
        };
        let Some(TransactWriteItemsError::TransactionCanceledException(cancel)) =
            err.as_service_error()
        else {
            return Err(classify(err));
        };
        let reasons = cancel.cancellation_reasons();
        let code = |i: usize| reasons.get(i).and_then(|r| r.code());
        if is_ccf(code(1)) {
            // An earlier attempt of this request settled it: answer as it was answered.
            let found = reasons[1]
                .item()
                .and_then(|item| item.get(OP))
                .and_then(|v| v.as_s().ok());
            return match found {
                Some(found) => answer_of(op, found).map(Settled::Answer),
                None => Err(StoreError::KeyReused),
            };
        }
        if is_ccf(code(0)) {
            return Ok(Settled::Flip);
        }
        // Cancelled for another reason (a conflicting transaction, throttling): nothing applied.
        Err(StoreError::Unavailable(format!(
            "transaction cancelled: {:?}",
            reasons.iter().map(|r| r.code()).collect::<Vec<_>>()
        )))
    }

    /// Where `r`'s marker lives: its table, its key, and the key attribute a condition on its
    /// absence names. The two tables spell `op` and `expires_at` alike.
    pub(super) fn marker_at(
        &self,
        r: &Request<'_>,
        bucket: &PostBucket,
    ) -> (&str, HashMap<String, AttributeValue>, &'static str) {
        match &self.markers {
            Some(table) => (
                table,
                HashMap::from([
                    (markers::PK.to_owned(), s(r.user.as_str())),
                    (
                        markers::SK.to_owned(),
                        s(markers::request_key(r.post, r.kind, r.token)),
                    ),
                ]),
                markers::SK,
            ),
            None => (
                &self.table,
                item_key(bucket, marker_key(&sort_key(r.user, r.kind), r.token)),
                SK,
            ),
        }
    }

    async fn marker_op(&self, r: &Request<'_>) -> Result<Option<String>, StoreError> {
        let (table, key, _) = self.marker_at(r, &PostBucket::for_like(r.post, r.user));
        get_string(&self.client, table, key, OP).await
    }

    async fn stored_token(&self, r: &Request<'_>) -> Result<Option<String>, StoreError> {
        get_string(&self.client, &self.table, r.key(), TOKEN).await
    }
}
