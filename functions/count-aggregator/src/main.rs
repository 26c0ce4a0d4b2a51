use aws_lambda_events::streams::DynamoDbEventResponse;
use count_aggregator::{emf_line, Aggregator, Settings};
use lambda_runtime::{service_fn, Error, LambdaEvent};
use likes_aws::env::FunctionEnv;
use likes_aws::{lambda, sdk, DynamoCounts, DynamoLikes};
use serde_json::value::RawValue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let env = FunctionEnv::from_env("count-aggregator")?;
    lambda::init_logs("count-aggregator", &env.function_name);
    let client = sdk::dynamo(&sdk::loader().load().await, env.xray);
    let aggregator = Aggregator::with_settings(
        // Recount windows are recorded next to the likes (see the crate docs, invariant 9).
        DynamoCounts::new(client.clone(), env.tables.counts)
            .with_windows(DynamoLikes::new(client, env.tables.likes)),
        Settings::from(env.tuning),
    );
    let aggregator = &aggregator;
    let function_name = env.function_name.as_str();
    // The event arrives as raw JSON and is decoded into borrowed structs of what is read.
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Box<RawValue>>| async move {
            likes_aws::logs::begin_invocation(&event.context.request_id);
            let deadline = lambda::deadline(event.context.deadline);
            let report = aggregator
                .process_json(event.payload.get(), deadline)
                .await?;
            println!("{}", emf_line(function_name, &report));
            Ok::<DynamoDbEventResponse, Error>(report.response())
        },
    ))
    .await
}
