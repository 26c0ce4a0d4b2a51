//! The DynamoDB stores. One module per table holds every expression on that table:
//! [`likes`] (likes, and the control items in their partitions) and [`counts`] (one item per
//! post, and recount leases); the events function's [`suppression`] and [`milestones`] items
//! (one table); pending [`erasures`]. [`schema`] names the tables' attributes and creates them for
//! tests and the local stack; [`calls`] carries batch calls and Query pages to their end;
//! [`classify`] sorts SDK failures.

pub mod blocks;
pub mod calls;
pub mod classify;
pub mod counts;
mod decisions;
pub mod erasures;
pub mod homes;
pub mod likes;
pub mod milestones;
pub mod policies;
pub mod schema;
pub mod suppression;
pub mod suspensions;

use aws_sdk_dynamodb::types::AttributeValue;

pub use blocks::DynamoBlocks;
pub use counts::DynamoCounts;
pub use erasures::DynamoErasureRequests;
pub use homes::DynamoHomes;
pub use likes::DynamoLikes;
pub use milestones::DynamoMilestones;
pub use policies::DynamoPolicies;
pub use suppression::DynamoSuppression;
pub use suspensions::DynamoSuspensions;

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}

/// Whether a failed request failed on its condition (the "no change" answer, not an error).
fn failed_condition<E>(err: &aws_sdk_dynamodb::error::SdkError<E, calls::HttpResponse>) -> bool
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata,
{
    err.as_service_error()
        .is_some_and(|e| e.code() == Some("ConditionalCheckFailedException"))
}

/// A conditional write's answer: whether it applied (false when its condition failed).
fn applied<T, E>(
    res: Result<T, aws_sdk_dynamodb::error::SdkError<E, calls::HttpResponse>>,
) -> Result<bool, likes_core::StoreError>
where
    E: aws_sdk_dynamodb::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    match res {
        Ok(_) => Ok(true),
        Err(e) if failed_condition(&e) => Ok(false),
        Err(e) => Err(classify::classify(e)),
    }
}

/// Whether a table of that name exists (a typo must stop a tool before it writes anything).
pub async fn table_exists(
    client: &aws_sdk_dynamodb::Client,
    name: &str,
) -> Result<bool, likes_core::StoreError> {
    match client.describe_table().table_name(name).send().await {
        Ok(_) => Ok(true),
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_resource_not_found_exception()) =>
        {
            Ok(false)
        }
        Err(e) => Err(classify::classify_read(e)),
    }
}
