//! What the stores return when DynamoDB fails, and the one place that decides which failures
//! are worth a 503 + retry and which are bugs.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Throttled, timed out or unreachable after the SDK's own retries. Retrying later may work.
    #[error("DynamoDB is unavailable: {0}")]
    Unavailable(String),
    /// Anything else: a bug, a misconfiguration (missing table, denied permission), or a
    /// response we did not expect.
    #[error("DynamoDB request failed: {0}")]
    Internal(String),
}

/// Error codes DynamoDB returns when it is overloaded or briefly unable to serve. The SDK has
/// already retried these; reaching us means its retry budget ran out.
const TRANSIENT_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "InternalServerError",
    "ServiceUnavailable",
    "TransactionConflictException",
];

pub fn classify<E, R>(err: SdkError<E, R>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
    R: std::fmt::Debug,
{
    let detail = aws_sdk_dynamodb::error::DisplayErrorContext(&err).to_string();
    match &err {
        SdkError::TimeoutError(_) | SdkError::DispatchFailure(_) => StoreError::Unavailable(detail),
        // A response that could not be read: a connection cut mid-body, a proxy's error page.
        SdkError::ResponseError(_) => StoreError::Unavailable(detail),
        SdkError::ServiceError(_) => match err.code() {
            Some(code) if TRANSIENT_CODES.contains(&code) => StoreError::Unavailable(detail),
            _ => StoreError::Internal(detail),
        },
        _ => StoreError::Internal(detail),
    }
}

pub fn build(err: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(format!("request could not be built: {err}"))
}
