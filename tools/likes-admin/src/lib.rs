//! `likes-admin`: the day-2 operations on a likes deployment (or the local stack).
//!
//! - [`audit`]: a post's count against its table, cheap first, exact where they differ;
//! - [`recount`]: makes a post's count exact while its likes keep flowing (fences, see
//!   `count_aggregator::recount`);
//! - erase a person's or a post's likes (`likes_core::erase`);
//! - [`backfill`]: every count exact, for a table whose likes the stream never saw.

pub mod audit;
pub mod backfill;
pub mod cli;
pub mod lock;
pub mod recount;

use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, Select};
use aws_sdk_dynamodb::Client;
use likes_core::{PostBucket, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// Bad usage or input: nothing was changed (exit status 2).
    #[error("{0}")]
    Usage(String),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("a recount of post {post} is running (job {job}, its lease runs until {until}); wait for it, or run again after the lease ends")]
    Busy {
        post: String,
        job: String,
        until: String,
    },
    #[error("{0}")]
    Timeout(String),
    /// A backfill's state file could not be read or written (what was done is kept).
    #[error("{0}")]
    State(String),
    #[error("the recount of post {post} (job {job}) outlived its lease and another job took the post over; this job stopped before changing its count. Run again if the other job also failed")]
    LeaseLost { post: String, job: String },
}

/// The tables an operation works on.
#[derive(Debug, Clone)]
pub struct Tables {
    pub client: Client,
    pub likes: String,
    pub counts: String,
    /// How long to wait for the aggregator to reach a fence.
    pub fence_wait: Duration,
}

impl Tables {
    /// Checks that both tables exist: a typo must stop the tool before it writes anything.
    pub async fn check(&self) -> Result<(), AdminError> {
        for name in [&self.likes, &self.counts] {
            let out = self.client.describe_table().table_name(name).send().await;
            if let Err(e) = out {
                let missing = e
                    .as_service_error()
                    .is_some_and(|se| se.is_resource_not_found_exception());
                return Err(if missing {
                    AdminError::Usage(format!("no table named {name:?}"))
                } else {
                    AdminError::Store(likes_core::store::error::classify_read(e))
                });
            }
        }
        Ok(())
    }

    /// Like items in a bucket: a consistent `Select=COUNT`, control items (`~…`) excluded.
    pub async fn table_count(&self, bucket: &PostBucket) -> Result<i64, AdminError> {
        let mut n = 0i64;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.likes)
                .key_condition_expression("#pb = :pb AND #u < :tilde")
                .expression_attribute_names("#pb", likes_core::schema::likes::PK)
                .expression_attribute_names("#u", likes_core::schema::likes::SK)
                .expression_attribute_values(":pb", AttributeValue::S(bucket.to_string()))
                .expression_attribute_values(":tilde", AttributeValue::S("~".into()))
                .select(Select::Count)
                .consistent_read(true)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(likes_core::store::error::classify_read)?;
            n += i64::from(out.count);
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(n),
            }
        }
    }
}
