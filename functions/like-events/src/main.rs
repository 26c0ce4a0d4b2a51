// The handler's future nests a batch's milestone checks (each post's count polled concurrently)
// inside the SDK's deep futures; computing its layout needs more than the default query depth.
#![recursion_limit = "256"]

use aws_lambda_events::streams::DynamoDbEventResponse;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use like_events::{emf_line, LikeEvents, Settings};
use likes_aws::env::{EventsEnv, FunctionEnv};
use likes_aws::eventbridge::EventBridgeBus;
use likes_aws::{lambda, sdk, DynamoCounts, DynamoMilestones, DynamoSuppression};
use serde_json::value::RawValue;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let env = FunctionEnv::from_env("like-events")?;
    let events = EventsEnv::from_env()?;
    lambda::init_logs("like-events", &env.function_name);
    let conf = sdk::loader().load().await;
    let dynamo = sdk::dynamo(&conf, env.xray);
    let function = LikeEvents {
        suppression: DynamoSuppression::new(dynamo.clone(), &events.state_table),
        milestones: DynamoMilestones::new(dynamo.clone(), &events.state_table),
        // Read only: the post's item as the aggregator left it (see `counts`).
        counts: DynamoCounts::new(dynamo, env.tables.counts),
        bus: EventBridgeBus::new(sdk::eventbridge(&conf, env.xray), events.bus_name),
        settings: Settings::from(events.rules),
    };
    let function = &function;
    let function_name = env.function_name.as_str();
    lambda_runtime::run(service_fn(
        move |event: LambdaEvent<Box<RawValue>>| async move {
            likes_aws::logs::begin_invocation(&event.context.request_id);
            let deadline = lambda::deadline(event.context.deadline);
            let report = function.process_json(event.payload.get(), deadline).await?;
            println!("{}", emf_line(function_name, &report));
            Ok::<DynamoDbEventResponse, Error>(report.response())
        },
    ))
    .await
}
