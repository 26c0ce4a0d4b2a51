use aws_lambda_events::dynamodb::Event;
use aws_lambda_events::streams::DynamoDbEventResponse;
use count_aggregator::{batch_lag_ms, emf_line, Aggregator};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use likes_core::config::{dynamo_client, Config};
use likes_core::DynamoCounts;

#[tokio::main]
async fn main() -> Result<(), Error> {
    likes_core::config::init_lambda_tracing();
    let config = Config::from_env()?;
    let client = dynamo_client().await;
    let aggregator = Aggregator::new(DynamoCounts::new(client, config.counts_table));
    let function_name =
        std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "count-aggregator".into());
    let aggregator = &aggregator;
    let function_name = function_name.as_str();
    lambda_runtime::run(service_fn(move |event: LambdaEvent<Event>| async move {
        let report = aggregator.process(&event.payload).await;
        println!(
            "{}",
            emf_line(function_name, &report, batch_lag_ms(&event.payload))
        );
        Ok::<DynamoDbEventResponse, Error>(report.response())
    }))
    .await
}
