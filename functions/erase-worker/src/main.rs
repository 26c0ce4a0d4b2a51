// The worker's future nests the erase's sweeps (likes, then reactions) inside the SDK's deep
// futures; computing its layout needs more than the default query depth.
#![recursion_limit = "256"]

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use erase_worker::Worker;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use likes_aws::env::FunctionEnv;
use likes_aws::sqs_erase_queue::SqsEraseQueue;
use likes_aws::{
    lambda, sdk, DynamoBlocks, DynamoErasureRequests, DynamoLikes, DynamoPolicies,
    DynamoSuspensions,
};
use likes_core::block::Blocks;
use likes_core::erase_job::{EraseQueue, ErasureRequests};
use likes_core::moderation::Suspensions;
use likes_core::policy::Policies;

#[tokio::main]
async fn main() -> Result<(), Error> {
    let env = FunctionEnv::from_env("erase-worker")?;
    lambda::init_logs("erase-worker", &env.function_name);
    let conf = sdk::loader().load().await;
    let queue =
        |url| Arc::new(SqsEraseQueue::new(sdk::sqs(&conf, env.xray), url)) as Arc<dyn EraseQueue>;
    let requeue = env.erase_queue_url.map(queue);
    let rejects = env.erase_failure_queue_url.map(queue);
    let dynamo = sdk::dynamo(&conf, env.xray);
    let erasures = env.erase_requests_table.as_ref().map(|table| {
        Arc::new(DynamoErasureRequests::new(dynamo.clone(), table)) as Arc<dyn ErasureRequests>
    });
    // The users' moderation state shares the pending-erasures table.
    let suspensions = env.erase_requests_table.as_ref().map(|table| {
        Arc::new(DynamoSuspensions::new(dynamo.clone(), table)) as Arc<dyn Suspensions>
    });
    // So do the posts' policies and the users' blocks.
    let policies = env
        .erase_requests_table
        .as_ref()
        .map(|table| Arc::new(DynamoPolicies::new(dynamo.clone(), table)) as Arc<dyn Policies>);
    let blocks = env
        .erase_requests_table
        .map(|table| Arc::new(DynamoBlocks::new(dynamo.clone(), table)) as Arc<dyn Blocks>);
    let worker = Worker {
        likes: DynamoLikes::new(dynamo, env.tables.likes),
        empty_sweeps: 2,
        pause: Duration::from_secs(2),
        settle: likes_core::erase_job::SETTLE,
        requeue,
        erasures,
        token_lifetime: env.max_token_lifetime,
        rejects,
        suspensions,
        policies,
        blocks,
    };
    let worker = &worker;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        likes_aws::logs::begin_invocation(&event.context.request_id);
        let deadline = lambda::deadline(event.context.deadline);
        Ok::<SqsBatchResponse, Error>(worker.handle(&event.payload, deadline).await)
    }))
    .await
}
