//! The users' moderation state (`likes_core::moderation`), in the pending-erasures table: one
//! item per user ever suspended (`suspension#<user>`: suspended or not, as of when) and one
//! count of users suspended now (`suspension#~count`). A decision is recorded on condition that
//! the user's item is still as it was read, together with the count's change when the state
//! flips: one transaction, so the count never drifts from the items.

use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use likes_core::erase_job::Call;
use likes_core::moderation::{compare, Decided, Suspensions};
use likes_core::{StoreError, UserId};

use super::calls::Item;
use super::classify::{build, classify, classify_read};
use super::s;
use super::schema::erase_requests::{
    COUNT, DECIDED_AT, PK, SUSPENDED, SUSPENDED_COUNT_KEY, SUSPENSION_PREFIX,
};

/// Attempts at recording a decision while other decisions race it (the user's, or others'
/// on the count).
const ATTEMPTS: usize = 10;

#[derive(Clone, Debug)]
pub struct DynamoSuspensions {
    client: Client,
    table: String,
}

impl DynamoSuspensions {
    /// On the pending-erasures table (`ERASE_REQUESTS_TABLE_NAME`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }

    fn key(user: &UserId) -> String {
        format!("{SUSPENSION_PREFIX}{user}")
    }

    async fn get(&self, key: &str, consistent: bool) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(key))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(classify_read)?;
        Ok(out.item)
    }

    /// The user's recorded decision: suspended, as of when.
    async fn recorded(&self, user: &UserId) -> Result<Option<(bool, String)>, StoreError> {
        let Some(item) = self.get(&Self::key(user), true).await? else {
            return Ok(None);
        };
        let suspended = item.get(SUSPENDED).and_then(|v| v.as_bool().ok()).copied();
        let at = item.get(DECIDED_AT).and_then(|v| v.as_s().ok()).cloned();
        match (suspended, at) {
            (Some(suspended), Some(at)) => Ok(Some((suspended, at))),
            _ => Err(StoreError::Internal(format!(
                "a suspension item without {SUSPENDED} or {DECIDED_AT}: {item:?}"
            ))),
        }
    }

    /// Writes the decision if the user's item is still `recorded`; false if it changed.
    async fn record(
        &self,
        user: &UserId,
        suspended: bool,
        at: &str,
        recorded: Option<&str>,
        flipped: bool,
    ) -> Result<bool, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item(PK, s(Self::key(user)))
            .item(SUSPENDED, AttributeValue::Bool(suspended))
            .item(DECIDED_AT, s(at))
            .expression_attribute_names("#at", DECIDED_AT);
        put = match recorded {
            None => put.condition_expression("attribute_not_exists(#at)"),
            Some(was) => put
                .condition_expression("#at = :was")
                .expression_attribute_values(":was", s(was)),
        };
        let mut moves = vec![TransactWriteItem::builder()
            .put(put.build().map_err(build)?)
            .build()];
        if flipped {
            let delta = if suspended { "1" } else { "-1" };
            let update = Update::builder()
                .table_name(&self.table)
                .key(PK, s(SUSPENDED_COUNT_KEY))
                .update_expression("ADD #n :d")
                .expression_attribute_names("#n", COUNT)
                .expression_attribute_values(":d", AttributeValue::N(delta.to_owned()))
                .build()
                .map_err(build)?;
            moves.push(TransactWriteItem::builder().update(update).build());
        }
        let res = self
            .client
            .transact_write_items()
            .set_transact_items(Some(moves))
            .send()
            .await;
        let err = match res {
            Ok(_) => return Ok(true),
            Err(e) => e,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(c)) =
            err.as_service_error()
        {
            let codes: Vec<Option<&str>> =
                c.cancellation_reasons().iter().map(|r| r.code()).collect();
            if codes.contains(&Some("ConditionalCheckFailed")) {
                return Ok(false);
            }
            // Another user's decision updating the count at the same moment (many suspended
            // at once): wait a little and compare again.
            if codes.contains(&Some("TransactionConflict")) {
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Ok(false);
            }
        }
        Err(classify(err))
    }
}

impl Suspensions for DynamoSuspensions {
    fn decide<'a>(&'a self, user: &'a UserId, suspended: bool, at: &'a str) -> Call<'a, Decided> {
        Box::pin(async move {
            for _ in 0..ATTEMPTS {
                let recorded = self.recorded(user).await?;
                let seen = recorded.as_ref().map(|(s, t)| (*s, t.as_str()));
                let decided = compare(seen, suspended, at);
                let Decided::Newer { flipped } = decided else {
                    return Ok(decided);
                };
                let was = recorded.as_ref().map(|(_, t)| t.as_str());
                if self.record(user, suspended, at, was, flipped).await? {
                    return Ok(decided);
                }
                // Another decision of the user was recorded meanwhile: compare again.
            }
            Err(StoreError::Unavailable(format!(
                "{user}'s moderation state kept changing under {ATTEMPTS} attempts"
            )))
        })
    }

    fn is_suspended<'a>(&'a self, user: &'a UserId) -> Call<'a, bool> {
        Box::pin(async move { Ok(self.recorded(user).await?.is_some_and(|(s, _)| s)) })
    }

    fn suspended_count(&self) -> Call<'_, i64> {
        Box::pin(async move {
            // Strongly: the gate's bound (GATE_TTL) must not wait on a trailing copy too.
            let item = self.get(SUSPENDED_COUNT_KEY, true).await?;
            let n = item
                .as_ref()
                .and_then(|i| i.get(COUNT))
                .and_then(|v| v.as_n().ok())
                .and_then(|n| n.parse().ok());
            Ok(n.unwrap_or(0))
        })
    }
}
