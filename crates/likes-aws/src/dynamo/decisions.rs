//! The product's decisions as the pending-erasures table records them (`dynamo::suspensions`,
//! `dynamo::policies`): one item per subject (`<prefix><id>`: its attributes, as of
//! `decided_at`) and a count of subjects in some state (`<prefix>~count`). A decision is
//! recorded on condition that the subject's item is still as it was read, together with the
//! count's change: one transaction, so the count never drifts from the items. Delivered at least
//! once and in any order, the latest `decided_at` wins (the caller's `compare`).

use std::time::Duration;

use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use aws_sdk_dynamodb::Client;
use likes_core::moderation::Decided;
use likes_core::StoreError;

use super::calls::Item;
use super::classify::{build, classify, classify_read};
use super::s;
use super::schema::erase_requests::{COUNT, DECIDED_AT, PK};

/// Attempts at recording a decision while other decisions race it (the subject's, or others'
/// on the count).
const ATTEMPTS: usize = 10;

#[derive(Clone, Debug)]
pub(super) struct Decisions {
    pub client: Client,
    pub table: String,
}

impl Decisions {
    pub async fn get(&self, key: &str, consistent: bool) -> Result<Option<Item>, StoreError> {
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

    /// The subject's recorded item and its time.
    pub async fn recorded(
        &self,
        key: &str,
        consistent: bool,
    ) -> Result<Option<(Item, String)>, StoreError> {
        let Some(item) = self.get(key, consistent).await? else {
            return Ok(None);
        };
        match item.get(DECIDED_AT).and_then(|v| v.as_s().ok()).cloned() {
            Some(at) => Ok(Some((item, at))),
            None => Err(StoreError::Internal(format!(
                "a decision item without {DECIDED_AT}: {item:?}"
            ))),
        }
    }

    /// The count under `key` (0 when none was ever counted).
    pub async fn count(&self, key: &str, consistent: bool) -> Result<i64, StoreError> {
        let item = self.get(key, consistent).await?;
        let n = item
            .as_ref()
            .and_then(|i| i.get(COUNT))
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok());
        Ok(n.unwrap_or(0))
    }

    /// Records a decision: reads the subject's item, `compare`s (its value read by `value`, and
    /// its time) with the new one, and, when newer, writes `attrs` under `key` as of `at` with
    /// `count`'s change (given whether the decision flipped the state), retrying when another
    /// decision got in between.
    pub async fn decide<T>(
        &self,
        key: &str,
        at: &str,
        value: impl Fn(&Item) -> Result<T, StoreError>,
        compare: impl Fn(Option<(&T, &str)>) -> Decided,
        attrs: &[(&str, AttributeValue)],
        count: impl Fn(bool) -> Option<(&'static str, i64)>,
    ) -> Result<Decided, StoreError> {
        for _ in 0..ATTEMPTS {
            let recorded = match self.recorded(key, true).await? {
                Some((item, when)) => Some((value(&item)?, when)),
                None => None,
            };
            let decided = compare(recorded.as_ref().map(|(v, t)| (v, t.as_str())));
            let Decided::Newer { flipped } = decided else {
                return Ok(decided);
            };
            let was = recorded.as_ref().map(|(_, t)| t.as_str());
            if self.record(key, attrs, at, was, count(flipped)).await? {
                return Ok(decided);
            }
            // Another decision was recorded meanwhile: compare again.
        }
        Err(StoreError::Unavailable(format!(
            "the decision under {key} kept changing under {ATTEMPTS} attempts"
        )))
    }

    async fn record(
        &self,
        key: &str,
        attrs: &[(&str, AttributeValue)],
        at: &str,
        was: Option<&str>,
        count: Option<(&str, i64)>,
    ) -> Result<bool, StoreError> {
        let mut put = Put::builder()
            .table_name(&self.table)
            .item(PK, s(key))
            .item(DECIDED_AT, s(at))
            .expression_attribute_names("#at", DECIDED_AT);
        for (name, value) in attrs {
            put = put.item(*name, value.clone());
        }
        put = match was {
            None => put.condition_expression("attribute_not_exists(#at)"),
            Some(was) => put
                .condition_expression("#at = :was")
                .expression_attribute_values(":was", s(was)),
        };
        let mut moves = vec![TransactWriteItem::builder()
            .put(put.build().map_err(build)?)
            .build()];
        if let Some((count_key, delta)) = count.filter(|(_, d)| *d != 0) {
            let update = Update::builder()
                .table_name(&self.table)
                .key(PK, s(count_key))
                .update_expression("ADD #n :d")
                .expression_attribute_names("#n", COUNT)
                .expression_attribute_values(":d", AttributeValue::N(delta.to_string()))
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
            if codes.contains(&Some("TransactionConflict")) {
                tokio::time::sleep(Duration::from_millis(50)).await;
                return Ok(false);
            }
        }
        Err(classify(err))
    }
}
