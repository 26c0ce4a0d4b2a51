//! Pending erasures (the `EraseRequestsTable`): every DynamoDB expression on them lives here.
//! One item per user with a pending erase job, keyed by the user: the job's id, the latest
//! request's time, when its message was last sent. Its own table, not the Likes table: no
//! stream record for the stream's readers to skip, and the API may write it without being
//! able to write likes' control items. Each write is conditional, so that racing requests,
//! redelivered jobs and a finishing worker agree on one pending job.

use aws_sdk_dynamodb::operation::delete_item::DeleteItemError;
use aws_sdk_dynamodb::operation::update_item::UpdateItemError;
use aws_sdk_dynamodb::types::{ReturnValue, ReturnValuesOnConditionCheckFailure};
use aws_sdk_dynamodb::Client;
use likes_core::erase_job::{Call, ErasureRequests, Pending};
use likes_core::{StoreError, UserId};

use super::calls::Item;
use super::classify::{classify, classify_read};
use super::schema::erase_requests::{JOB_ID, PK, REQUESTED_AT, SENT_AT};
use super::{applied, s};

#[derive(Clone, Debug)]
pub struct DynamoErasureRequests {
    client: Client,
    table: String,
}

impl DynamoErasureRequests {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn text(item: &Item, name: &str) -> Option<String> {
    item.get(name).and_then(|v| v.as_s().ok()).cloned()
}

fn pending_of(item: &Item) -> Result<Pending, StoreError> {
    let missing = |name| StoreError::Internal(format!("a pending erasure without {name}"));
    Ok(Pending {
        job_id: text(item, JOB_ID).ok_or_else(|| missing(JOB_ID))?,
        requested_at: text(item, REQUESTED_AT).ok_or_else(|| missing(REQUESTED_AT))?,
        sent_at: text(item, SENT_AT),
    })
}

impl DynamoErasureRequests {
    /// The user's item, read with strong consistency (a request joining a job that is being
    /// sent waits on it). A failed condition needs no read: with `ALL_OLD` it carries the item
    /// it found, and carries none when there was none (DynamoDB and moto alike).
    async fn item(&self, user: &UserId) -> Result<Option<Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .key(PK, s(user.as_str()))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify_read)?;
        Ok(out.item)
    }
}

impl ErasureRequests for DynamoErasureRequests {
    fn request<'a>(&'a self, user: &'a UserId, offered: &'a str, at: &'a str) -> Call<'a, Pending> {
        Box::pin(async move {
            // The pending job keeps its id; its time only moves forward. When the condition
            // fails (a later request got there first) the item as it is answers.
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .key(PK, s(user.as_str()))
                .update_expression("SET #j = if_not_exists(#j, :j), #r = :r")
                .condition_expression("attribute_not_exists(#r) OR #r < :r")
                .expression_attribute_names("#j", JOB_ID)
                .expression_attribute_names("#r", REQUESTED_AT)
                .expression_attribute_values(":j", s(offered))
                .expression_attribute_values(":r", s(at))
                .return_values(ReturnValue::AllNew)
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            let carried = match res {
                Ok(out) => return pending_of(&out.attributes.unwrap_or_default()),
                Err(e) => match e.as_service_error() {
                    Some(UpdateItemError::ConditionalCheckFailedException(c)) => c.item().cloned(),
                    _ => return Err(classify(e)),
                },
            };
            // The condition fails only when an item with a later time exists; one finished
            // since then is gone, and this request is a new job's.
            match carried {
                Some(item) => pending_of(&item),
                None => Box::pin(self.request(user, offered, at)).await,
            }
        })
    }

    fn read<'a>(&'a self, user: &'a UserId) -> Call<'a, Option<Pending>> {
        Box::pin(async move { self.item(user).await?.as_ref().map(pending_of).transpose() })
    }

    fn sent<'a>(&'a self, user: &'a UserId, job_id: &'a str, at: &'a str) -> Call<'a, ()> {
        Box::pin(async move {
            // Only while the job is pending: a worker that already finished it must not find
            // a half item appear.
            applied(
                self.client
                    .update_item()
                    .table_name(&self.table)
                    .key(PK, s(user.as_str()))
                    .update_expression("SET #s = :s")
                    .condition_expression("#j = :j")
                    .expression_attribute_names("#s", SENT_AT)
                    .expression_attribute_names("#j", JOB_ID)
                    .expression_attribute_values(":s", s(at))
                    .expression_attribute_values(":j", s(job_id))
                    .send()
                    .await,
            )?;
            Ok(())
        })
    }

    fn finish<'a>(
        &'a self,
        user: &'a UserId,
        job_id: &'a str,
        erased_to: &'a str,
    ) -> Call<'a, Option<String>> {
        Box::pin(async move {
            let res = self
                .client
                .delete_item()
                .table_name(&self.table)
                .key(PK, s(user.as_str()))
                .condition_expression("#j = :j AND #r <= :r")
                .expression_attribute_names("#j", JOB_ID)
                .expression_attribute_names("#r", REQUESTED_AT)
                .expression_attribute_values(":j", s(job_id))
                .expression_attribute_values(":r", s(erased_to))
                .return_values_on_condition_check_failure(
                    ReturnValuesOnConditionCheckFailure::AllOld,
                )
                .send()
                .await;
            let carried = match res {
                Ok(_) => return Ok(None),
                Err(e) => match e.as_service_error() {
                    Some(DeleteItemError::ConditionalCheckFailedException(c)) => c.item().cloned(),
                    _ => return Err(classify(e)),
                },
            };
            // Still this job, asked for again since: erase up to the later time. Otherwise
            // (gone, or another job's) there is nothing left for this one.
            Ok(carried
                .filter(|item| text(item, JOB_ID).as_deref() == Some(job_id))
                .and_then(|item| text(&item, REQUESTED_AT))
                .filter(|later| later.as_str() > erased_to))
        })
    }
}
