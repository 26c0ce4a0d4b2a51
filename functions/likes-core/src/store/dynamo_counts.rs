//! The Counts table: every DynamoDB expression that touches it lives in this module.
//!
//! Row: `post_id` (S, partition key), `bucket` (N, sort key), `like_count` (N), `hwm` (S, the
//! highest stream sequence number applied to the row, zero-padded to 40 digits), `updated_at`
//! (S, RFC 3339). A post's count is the sum of its (at most 16) rows.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_dynamodb::Client;

use super::error::{classify, StoreError};
use super::{ApplyOutcome, CountRow, CountsStore};
use crate::bucket::PostBucket;
use crate::ids::PostId;
use crate::schema::counts::{HWM, LIKE_COUNT, PK, SK, UPDATED_AT};
use crate::seq::SeqNo;

#[derive(Clone, Debug)]
pub struct DynamoCounts {
    client: Client,
    table: String,
}

impl DynamoCounts {
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

fn row_key(row: &PostBucket) -> [(&'static str, AttributeValue); 2] {
    [
        (PK, AttributeValue::S(row.post.to_string())),
        (SK, AttributeValue::N(row.bucket.to_string())),
    ]
}

fn parse_count(v: Option<&AttributeValue>) -> Result<i64, StoreError> {
    match v {
        None => Ok(0),
        Some(AttributeValue::N(n)) => n
            .parse()
            .map_err(|_| StoreError::Internal(format!("like_count {n:?} is not an integer"))),
        Some(other) => Err(StoreError::Internal(format!(
            "like_count has the wrong type: {other:?}"
        ))),
    }
}

impl CountsStore for DynamoCounts {
    async fn apply(
        &self,
        row: &PostBucket,
        delta: i64,
        first_seq: &SeqNo,
        last_seq: &SeqNo,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let [pk, sk] = row_key(row);
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(pk.0, pk.1)
            .key(sk.0, sk.1)
            .update_expression("ADD #c :delta SET #h = :last, #u = :now")
            .condition_expression("attribute_not_exists(#h) OR #h < :first")
            .expression_attribute_names("#c", LIKE_COUNT)
            .expression_attribute_names("#h", HWM)
            .expression_attribute_names("#u", UPDATED_AT)
            .expression_attribute_values(":delta", AttributeValue::N(delta.to_string()))
            .expression_attribute_values(":last", AttributeValue::S(last_seq.padded().to_owned()))
            .expression_attribute_values(":first", AttributeValue::S(first_seq.padded().to_owned()))
            .expression_attribute_values(":now", AttributeValue::S(now.to_owned()))
            .return_values(ReturnValue::UpdatedNew)
            .send()
            .await;
        match res {
            Ok(out) => {
                let like_count =
                    parse_count(out.attributes.as_ref().and_then(|a| a.get(LIKE_COUNT)))?;
                Ok(ApplyOutcome::Applied { like_count })
            }
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(ApplyOutcome::AlreadyApplied)
            }
            Err(e) => Err(classify(e)),
        }
    }

    async fn read_row(&self, row: &PostBucket) -> Result<Option<CountRow>, StoreError> {
        let [pk, sk] = row_key(row);
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(pk.0, pk.1)
            .key(sk.0, sk.1)
            .consistent_read(true)
            .send()
            .await
            .map_err(classify)?;
        let Some(item) = out.item else {
            return Ok(None);
        };
        let hwm = match item.get(HWM) {
            None => None,
            Some(AttributeValue::S(h)) => {
                Some(SeqNo::from_padded(h).map_err(|e| StoreError::Internal(format!("hwm: {e}")))?)
            }
            Some(other) => {
                return Err(StoreError::Internal(format!(
                    "hwm has the wrong type: {other:?}"
                )))
            }
        };
        Ok(Some(CountRow {
            like_count: parse_count(item.get(LIKE_COUNT))?,
            hwm,
            updated_at: item.get(UPDATED_AT).and_then(|v| v.as_s().ok()).cloned(),
        }))
    }

    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        let mut total = 0i64;
        let mut start = None;
        // At most 16 tiny rows: one page in practice, but never trust that silently.
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("#p = :p")
                .expression_attribute_names("#p", PK)
                .expression_attribute_names("#c", LIKE_COUNT)
                .expression_attribute_values(":p", AttributeValue::S(post.to_string()))
                .projection_expression("#c")
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(classify)?;
            for item in out.items() {
                total = total.saturating_add(parse_count(item.get(LIKE_COUNT))?);
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(total),
            }
        }
    }
}
