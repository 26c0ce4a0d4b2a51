//! The SDK configuration every process starts from, and the clients built on it.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;
use aws_sdk_dynamodb::config::{Credentials, Region};

use crate::xray::XrayCalls;

/// The SDK configuration loader every process starts from: credentials, region and endpoint
/// from the standard AWS environment (`AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL`), so one
/// binary serves AWS and the local emulator alike.
///
/// Timeouts are explicit and short: API Gateway gives up after 30 s, and a request that cannot
/// reach DynamoDB should become a 503 with `Retry-After` well before that. Three attempts with
/// the SDK's jittered backoff absorb brief throttling.
pub fn loader() -> aws_config::ConfigLoader {
    aws_config::defaults(BehaviorVersion::latest())
        .retry_config(RetryConfig::standard().with_max_attempts(3))
        .timeout_config(
            TimeoutConfig::builder()
                .connect_timeout(Duration::from_secs(1))
                .operation_attempt_timeout(Duration::from_secs(3))
                .operation_timeout(Duration::from_secs(8))
                .build(),
        )
}

/// The configuration for an emulator at `endpoint` (`make dev`'s, the tests'): the production
/// loader's retries and timeouts, a fixed region and static credentials, which an emulator
/// accepts and AWS never would. The identity is `local`, which the local lab lets do anything
/// (setting tables up, checking them).
pub async fn emulator(endpoint: &str) -> aws_config::SdkConfig {
    emulator_as(endpoint, "local").await
}

/// [`emulator`], signed as `identity`: the access key the local lab (`infra/lab`) knows a role
/// by — a function's logical id in the template, or `OperatorPolicy` — and whose policy it
/// enforces. A plain emulator ignores it.
pub async fn emulator_as(endpoint: &str, identity: &str) -> aws_config::SdkConfig {
    loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(identity, "local", None, None, "emulator"))
        .load()
        .await
}

/// A function's DynamoDB client: with X-Ray subsegments per call when `xray` is on.
pub fn dynamo(sdk: &aws_config::SdkConfig, xray: bool) -> aws_sdk_dynamodb::Client {
    let mut conf = aws_sdk_dynamodb::config::Builder::from(sdk);
    if let Some(calls) = xray.then(XrayCalls::from_env).flatten() {
        conf = conf.interceptor(calls);
    }
    aws_sdk_dynamodb::Client::from_conf(conf.build())
}

/// A function's SQS client: with X-Ray subsegments per call when `xray` is on.
pub fn sqs(sdk: &aws_config::SdkConfig, xray: bool) -> aws_sdk_sqs::Client {
    let mut conf = aws_sdk_sqs::config::Builder::from(sdk);
    if let Some(calls) = xray.then(XrayCalls::from_env).flatten() {
        conf = conf.interceptor(calls);
    }
    aws_sdk_sqs::Client::from_conf(conf.build())
}

/// A function's EventBridge client: with X-Ray subsegments per call when `xray` is on.
pub fn eventbridge(sdk: &aws_config::SdkConfig, xray: bool) -> aws_sdk_eventbridge::Client {
    let mut conf = aws_sdk_eventbridge::config::Builder::from(sdk);
    if let Some(calls) = xray.then(XrayCalls::from_env).flatten() {
        conf = conf.interceptor(calls);
    }
    aws_sdk_eventbridge::Client::from_conf(conf.build())
}

/// A DynamoDB client for an emulator at `endpoint` (see [`emulator`]).
pub async fn emulator_dynamo(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&emulator(endpoint).await)
}
