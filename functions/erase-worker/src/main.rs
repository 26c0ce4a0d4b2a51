use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{SqsBatchResponse, SqsEvent};
use erase_worker::Worker;
use lambda_runtime::{service_fn, Error, LambdaEvent};
use likes_core::config::{dynamo_client_for, sdk_loader, sqs_client_for, Config};
use likes_core::erase_queue::{EraseQueue, SqsEraseQueue};
use tokio::time::Instant;

#[tokio::main]
async fn main() -> Result<(), Error> {
    likes_core::config::init_lambda_tracing();
    let config = Config::from_env()?;
    let sdk = sdk_loader().load().await;
    let requeue = std::env::var("ERASE_QUEUE_URL")
        .ok()
        .filter(|u| !u.is_empty())
        .map(|url| Arc::new(SqsEraseQueue::new(sqs_client_for(&sdk), url)) as Arc<dyn EraseQueue>);
    let worker = Worker {
        client: dynamo_client_for(&sdk),
        likes_table: config.likes_table,
        empty_sweeps: 2,
        pause: Duration::from_secs(2),
        requeue,
    };
    let worker = &worker;
    lambda_runtime::run(service_fn(move |event: LambdaEvent<SqsEvent>| async move {
        let now_ms = chrono::Utc::now().timestamp_millis().max(0) as u64;
        let deadline = (event.context.deadline > now_ms)
            .then(|| Instant::now() + Duration::from_millis(event.context.deadline - now_ms));
        Ok::<SqsBatchResponse, Error>(worker.handle(&event.payload, deadline).await)
    }))
    .await
}
