//! The admin tool's side of the Counts table: a recount's lease on a post (an item of its own,
//! `likes_core::control::lease_key`), its correction, and the list of counted posts.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::control::lease_key;
use likes_core::{CountsAdmin, Lease, PostId, StoreError};

use super::{bucket_attrs, post_key, recount_attrs, DynamoCounts};
use crate::dynamo::calls::HttpResponse;
use crate::dynamo::classify::{classify, classify_read};
use crate::dynamo::failed_condition;
use crate::dynamo::schema::counts::{LEASE_JOB, LEASE_UNTIL, PK};

fn lease_item_key(post: &PostId) -> HashMap<String, AttributeValue> {
    HashMap::from([(PK.to_owned(), AttributeValue::S(lease_key(post)))])
}

fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn job_value(job: &str) -> AttributeValue {
    AttributeValue::S(job.to_owned())
}

/// A conditional write's answer: whether it applied (false when its condition failed).
fn applied<T, E>(
    res: Result<T, aws_sdk_dynamodb::error::SdkError<E, HttpResponse>>,
) -> Result<bool, StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match res {
        Ok(_) => Ok(true),
        Err(e) if failed_condition(&e) => Ok(false),
        Err(e) => Err(classify(e)),
    }
}

impl CountsAdmin for DynamoCounts {
    async fn acquire_lease(
        &self,
        post: &PostId,
        job: &str,
        until: i64,
        now: i64,
    ) -> Result<Lease, StoreError> {
        let res = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(lease_item_key(post)))
            .item(LEASE_JOB, job_value(job))
            .item(LEASE_UNTIL, n(until))
            .condition_expression("attribute_not_exists(#pk) OR #until < :now")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#until", LEASE_UNTIL)
            .expression_attribute_values(":now", n(now))
            .send()
            .await;
        if applied(res)? {
            return Ok(Lease::Taken);
        }
        let held = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(lease_item_key(post)))
            .consistent_read(true)
            .send()
            .await
            .map_err(classify_read)?
            .item
            .unwrap_or_default();
        Ok(Lease::Held {
            job: held
                .get(LEASE_JOB)
                .and_then(|v| v.as_s().ok())
                .cloned()
                .unwrap_or_default(),
            until: held
                .get(LEASE_UNTIL)
                .and_then(|v| v.as_n().ok())
                .and_then(|v| v.parse().ok())
                .unwrap_or_default(),
        })
    }

    async fn renew_lease(&self, post: &PostId, job: &str, until: i64) -> Result<bool, StoreError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(lease_item_key(post)))
            .update_expression("SET #until = :until")
            // Still ours even if it ran out: nobody took it, and now nobody can until it ends.
            .condition_expression("#job = :job")
            .expression_attribute_names("#job", LEASE_JOB)
            .expression_attribute_names("#until", LEASE_UNTIL)
            .expression_attribute_values(":job", job_value(job))
            .expression_attribute_values(":until", n(until))
            .send()
            .await;
        applied(res)
    }

    async fn release_lease(&self, post: &PostId, job: &str) -> Result<(), StoreError> {
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(lease_item_key(post)))
            .condition_expression("#job = :job")
            .expression_attribute_names("#job", LEASE_JOB)
            .expression_attribute_values(":job", job_value(job))
            .send()
            .await;
        // Taken over after our lease ran out: nothing of ours to release.
        applied(res).map(|_| ())
    }

    async fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
    ) -> Result<bool, StoreError> {
        let (c, _, _) = bucket_attrs(bucket);
        let (_, ej, ec) = recount_attrs(bucket);
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .condition_expression("#ej = :job")
            .expression_attribute_names("#ej", ej)
            .expression_attribute_names("#ec", ec)
            .expression_attribute_values(":job", job_value(job));
        req = if diff == 0 {
            req.update_expression("REMOVE #ej, #ec")
        } else {
            req.update_expression("ADD #c :d REMOVE #ej, #ec")
                .expression_attribute_names("#c", c)
                .expression_attribute_values(":d", n(diff))
        };
        applied(req.send().await)
    }

    async fn counted_posts(&self) -> Result<Vec<String>, StoreError> {
        let mut posts = Vec::new();
        let mut pages = self
            .client
            .scan()
            .table_name(&self.table)
            .projection_expression("#p")
            .expression_attribute_names("#p", PK)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify_read)?.items() {
                if let Some(p) = item.get(PK).and_then(|v| v.as_s().ok()) {
                    // A lease item is not a post.
                    if !p.starts_with('~') {
                        posts.push(p.clone());
                    }
                }
            }
        }
        Ok(posts)
    }
}
