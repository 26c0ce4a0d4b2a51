//! One recount (or exact audit) of a post at a time: a lease item `~recount#<post>` in the Counts
//! table (no post id starts with `~`), taken with a conditional write. A job that dies leaves
//! its lease to run out; after that, running again takes over safely (a new job's begin fence
//! replaces the dead job's window). A live job renews its lease before each step that needs it
//! still held (the correction, the cleanup): a job slowed past its lease stops there instead of
//! racing the job that took over.

use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::schema::counts::PK;
use likes_core::store::error::{classify, classify_read};
use likes_core::PostId;

use crate::{AdminError, Tables};

fn lock_key(post: &PostId) -> AttributeValue {
    AttributeValue::S(format!("~recount#{post}"))
}

fn now() -> i64 {
    chrono::Utc::now().timestamp()
}

pub async fn acquire(
    t: &Tables,
    post: &PostId,
    job: &str,
    lease: Duration,
) -> Result<(), AdminError> {
    let until = now() + lease.as_secs() as i64;
    let res = t
        .client
        .put_item()
        .table_name(&t.counts)
        .item(PK, lock_key(post))
        .item("job", AttributeValue::S(job.to_owned()))
        .item("lease_until", AttributeValue::N(until.to_string()))
        .condition_expression("attribute_not_exists(#pk) OR lease_until < :now")
        .expression_attribute_names("#pk", PK)
        .expression_attribute_values(":now", AttributeValue::N(now().to_string()))
        .send()
        .await;
    match res {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
        {
            let held = t
                .client
                .get_item()
                .table_name(&t.counts)
                .key(PK, lock_key(post))
                .consistent_read(true)
                .send()
                .await
                .map_err(classify_read)?
                .item
                .unwrap_or_default();
            let s = |k: &str| {
                held.get(k)
                    .and_then(|v| v.as_s().or_else(|_| v.as_n()).ok())
                    .cloned()
                    .unwrap_or_default()
            };
            let until = s("lease_until")
                .parse::<i64>()
                .ok()
                .and_then(|u| chrono::DateTime::from_timestamp(u, 0))
                .map(|d| d.to_rfc3339())
                .unwrap_or_default();
            Err(AdminError::Busy {
                post: post.to_string(),
                job: s("job"),
                until,
            })
        }
        Err(e) => Err(AdminError::Store(classify(e))),
    }
}

/// Extends this job's lease to `lease` from now, if the job still holds it.
pub async fn renew(
    t: &Tables,
    post: &PostId,
    job: &str,
    lease: Duration,
) -> Result<(), AdminError> {
    let until = now() + lease.as_secs() as i64;
    let res = t
        .client
        .update_item()
        .table_name(&t.counts)
        .key(PK, lock_key(post))
        .update_expression("SET lease_until = :until")
        // Still ours even if it ran out: nobody took it, and now nobody can until it ends.
        .condition_expression("job = :job")
        .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
        .expression_attribute_values(":until", AttributeValue::N(until.to_string()))
        .send()
        .await;
    match res {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
        {
            Err(AdminError::LeaseLost {
                post: post.to_string(),
                job: job.to_owned(),
            })
        }
        Err(e) => Err(AdminError::Store(classify(e))),
    }
}

pub async fn release(t: &Tables, post: &PostId, job: &str) -> Result<(), AdminError> {
    let res = t
        .client
        .delete_item()
        .table_name(&t.counts)
        .key(PK, lock_key(post))
        .condition_expression("job = :job")
        .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
        .send()
        .await;
    match res {
        Ok(_) => Ok(()),
        // Taken over after our lease ran out: nothing of ours to release.
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(AdminError::Store(classify(e))),
    }
}
