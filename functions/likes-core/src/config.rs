//! Configuration from the environment, and the one DynamoDB client a process builds.

use std::time::Duration;

use aws_config::retry::RetryConfig;
use aws_config::timeout::TimeoutConfig;
use aws_config::BehaviorVersion;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("environment variable {0} must be set")]
    Missing(&'static str),
}

#[derive(Debug, Clone)]
pub struct Config {
    pub likes_table: String,
    pub counts_table: String,
}

impl Config {
    pub fn from_env() -> Result<Self, ConfigError> {
        let var = |name: &'static str| {
            std::env::var(name)
                .ok()
                .filter(|v| !v.is_empty())
                .ok_or(ConfigError::Missing(name))
        };
        Ok(Self {
            likes_table: var("LIKES_TABLE_NAME")?,
            counts_table: var("COUNTS_TABLE_NAME")?,
        })
    }
}

/// The SDK configuration loader every process starts from: credentials, region and endpoint
/// from the standard AWS environment (`AWS_ENDPOINT_URL_DYNAMODB` or `AWS_ENDPOINT_URL`), so one
/// binary serves AWS and the local emulator alike. Tests add an explicit endpoint on top.
///
/// Timeouts are explicit and short: API Gateway gives up after 30 s, and a request that cannot
/// reach DynamoDB should become a 503 with `Retry-After` well before that. Three attempts with
/// the SDK's jittered backoff absorb brief throttling.
pub fn sdk_loader() -> aws_config::ConfigLoader {
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

/// The DynamoDB client from the environment (see [`sdk_loader`]).
pub async fn dynamo_client() -> aws_sdk_dynamodb::Client {
    dynamo_client_for(&sdk_loader().load().await)
}

/// A function's DynamoDB client: with X-Ray subsegments per call when tracing is on.
pub fn dynamo_client_for(sdk: &aws_config::SdkConfig) -> aws_sdk_dynamodb::Client {
    let mut conf = aws_sdk_dynamodb::config::Builder::from(sdk);
    if let Some(xray) = crate::xray::XrayCalls::from_env() {
        conf = conf.interceptor(xray);
    }
    aws_sdk_dynamodb::Client::from_conf(conf.build())
}

/// A function's SQS client: with X-Ray subsegments per call when tracing is on.
pub fn sqs_client_for(sdk: &aws_config::SdkConfig) -> aws_sdk_sqs::Client {
    let mut conf = aws_sdk_sqs::config::Builder::from(sdk);
    if let Some(xray) = crate::xray::XrayCalls::from_env() {
        conf = conf.interceptor(xray);
    }
    aws_sdk_sqs::Client::from_conf(conf.build())
}

/// JSON logs for CloudWatch, one object per line; level from `RUST_LOG` (default `info`).
/// Lambda stamps every line itself, so no timestamp is written.
pub fn init_lambda_tracing() {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter)
        .with_current_span(false)
        .without_time()
        .init();
}
