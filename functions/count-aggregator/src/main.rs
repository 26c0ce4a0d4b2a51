use std::time::Duration;

use tokio::time::Instant;

use aws_lambda_events::streams::DynamoDbEventResponse;
use count_aggregator::{emf_line, Aggregator, Settings};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use likes_core::config::{dynamo_client, Config};
use likes_core::DynamoCounts;
use serde_json::value::RawValue;

/// The invocation's deadline (epoch milliseconds, from the Lambda context) as an instant. One
/// already past when the invocation starts is no Lambda deadline (`cargo lambda watch` sends a
/// fixed one in 1970): then there is none.
fn deadline_of(epoch_ms: u64) -> Option<Instant> {
    let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
    (epoch_ms > now_ms).then(|| Instant::now() + Duration::from_millis(epoch_ms - now_ms))
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    likes_core::config::init_lambda_tracing();
    let config = Config::from_env()?;
    let client = dynamo_client().await;
    let aggregator = Aggregator::with_settings(
        // Recount windows are recorded next to the likes (see the crate docs, invariant 9).
        DynamoCounts::new(client, config.counts_table).with_windows(config.likes_table),
        Settings::from_env(),
    );
    let function_name =
        std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "count-aggregator".into());
    let aggregator = &aggregator;
    let function_name = function_name.as_str();
    // The event arrives as raw JSON and is decoded into borrowed structs of what is read.
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Box<RawValue>>| async move {
            let deadline = deadline_of(event.context.deadline);
            let report = aggregator
                .process_json(event.payload.get(), deadline)
                .await?;
            println!("{}", emf_line(function_name, &report));
            Ok::<DynamoDbEventResponse, Error>(report.response())
        },
    ))
    .await
}
