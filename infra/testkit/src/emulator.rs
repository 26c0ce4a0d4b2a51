//! The SDK configuration every local process uses to reach the emulator: production's loader
//! (retries, timeouts) with the emulator's endpoint, a fixed region and static credentials.

use aws_sdk_dynamodb::config::{Credentials, Region};

pub async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    likes_core::config::sdk_loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("local", "local", None, None, "emulator"))
        .load()
        .await
}

pub async fn dynamo_client(endpoint: &str) -> aws_sdk_dynamodb::Client {
    aws_sdk_dynamodb::Client::new(&sdk_config(endpoint).await)
}
