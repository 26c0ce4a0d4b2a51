//! The one place that sorts SDK failures into the stores' errors ([`StoreError`]): worth a
//! retry or not, and — for a write — whether it certainly did not take effect or may have.

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_smithy_runtime_api::client::dns::ResolveDnsError;
use aws_smithy_runtime_api::client::orchestrator::HttpResponse;
use aws_smithy_types::retry::ErrorKind;
use likes_core::StoreError;

/// Error codes DynamoDB answers when it refused a request without performing it: overload and
/// throttling. (A transaction that lost a conflict is cancelled as a whole.)
const NOT_PERFORMED_CODES: &[&str] = &[
    "ProvisionedThroughputExceededException",
    "ThrottlingException",
    "RequestLimitExceeded",
    "TransactionConflictException",
];

/// Why no connection was made, when none was: the request was then never sent.
#[derive(Debug, PartialEq, Eq)]
enum NoConnection {
    /// The endpoint's name does not resolve: a misconfiguration.
    Dns,
    /// Refused, unreachable: DynamoDB (or the way to it) is down.
    Other,
}

fn no_connection(err: &(dyn std::error::Error + 'static)) -> Option<NoConnection> {
    let mut connect = false;
    let mut next = Some(err);
    while let Some(e) = next {
        if e.is::<ResolveDnsError>() {
            return Some(NoConnection::Dns);
        }
        if let Some(h) = e.downcast_ref::<hyper_util::client::legacy::Error>() {
            connect |= h.is_connect();
        }
        // hyper-util's resolver error is private; its message is its only mark.
        if connect && e.to_string() == "dns error" {
            return Some(NoConnection::Dns);
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            connect |= io.kind() == std::io::ErrorKind::ConnectionRefused;
        }
        next = e.source();
    }
    connect.then_some(NoConnection::Other)
}

/// Sorts an SDK failure. For a read, use [`classify_read`].
///
/// - An error response with a throttling code: not performed → `Unavailable`.
/// - `ItemCollectionSizeLimitExceededException` → `CollectionFull`.
/// - Another error response with a 5xx status (`InternalServerError`, `ServiceUnavailable`, or no
///   code at all): the request reached DynamoDB, which may have performed it → `OutcomeUnknown`.
/// - Another error response with a 4xx status (validation, a missing table, access denied): a
///   bug or a misconfiguration → `Internal`.
/// - No connection (refused, or the connect timeout: the only timeout inside the connector, as
///   no read timeout is configured): nothing was sent → `Unavailable`.
/// - A name that does not resolve, an invalid request, missing credentials or another failure
///   before sending: a misconfiguration → `Internal`.
/// - A connection reset or closed after sending, the attempt's timeout, an unreadable answer →
///   `OutcomeUnknown`.
pub fn classify<E>(err: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    let detail = aws_sdk_dynamodb::error::DisplayErrorContext(&err).to_string();
    match &err {
        SdkError::ServiceError(service) => {
            let status = service.raw().status().as_u16();
            match err.code() {
                Some("ItemCollectionSizeLimitExceededException") => {
                    StoreError::CollectionFull(detail)
                }
                Some(code) if NOT_PERFORMED_CODES.contains(&code) => {
                    StoreError::Unavailable(detail)
                }
                _ if status >= 500 => StoreError::OutcomeUnknown(detail),
                _ => StoreError::Internal(detail),
            }
        }
        SdkError::DispatchFailure(failure) => match failure.as_connector_error() {
            Some(c) if c.is_timeout() => StoreError::Unavailable(detail),
            Some(c) if c.is_io() => match no_connection(c) {
                Some(NoConnection::Dns) => StoreError::Internal(detail),
                Some(NoConnection::Other) => StoreError::Unavailable(detail),
                None => StoreError::OutcomeUnknown(detail),
            },
            // The connection closed after the request was sent and before a whole answer came
            // (hyper's `IncompleteMessage`, which the SDK reports as a transient "other"): the
            // answer was lost, not the request.
            Some(c) if c.as_other() == Some(ErrorKind::TransientError) => {
                StoreError::OutcomeUnknown(detail)
            }
            _ => StoreError::Internal(detail),
        },
        SdkError::TimeoutError(_) | SdkError::ResponseError(_) => {
            StoreError::OutcomeUnknown(detail)
        }
        _ => StoreError::Internal(detail),
    }
}

/// [`classify`] for a read.
pub fn classify_read<E>(err: SdkError<E, HttpResponse>) -> StoreError
where
    E: ProvideErrorMetadata + std::error::Error + 'static,
{
    classify(err).for_read()
}

pub fn build(err: aws_sdk_dynamodb::error::BuildError) -> StoreError {
    StoreError::Internal(format!("request could not be built: {err}"))
}
