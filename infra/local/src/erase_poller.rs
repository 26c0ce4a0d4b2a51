//! The erase queue, played locally: an SQS queue on the emulator with a dead-letter queue (the
//! template's `EraseQueue` and `EraseDeadLetterQueue`), and a poller that does what Lambda's
//! SQS event source mapping (`EraseJobsMapping`) does — one message per invocation of the worker
//! (`BatchSize: 1`), at most `CONCURRENCY` at once (`MaximumConcurrency`), deleting each unless
//! the worker reported it failed: a suspension waiting out its settle holds one slot, not the
//! queue. A failed message stays in the queue and reappears after the
//! visibility timeout; after `MAX_RECEIVES` it moves to the dead-letter queue. The messages
//! live in the emulator, so a job outlives a crash of the stack.

use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::QueueAttributeName;
use erase_worker::Worker;
use likes_aws::DynamoLikes;
use likes_sim::sqs::message;
use tokio::sync::Semaphore;

use crate::error::LocalError;
use crate::sqs_poll;

pub const ERASE_QUEUE: &str = "likes-erase";
pub const ERASE_DLQ: &str = "likes-erase-dlq";
/// As the template's redrive policy.
pub const MAX_RECEIVES: u32 = 5;
/// Shorter than the template's (which is six times the worker's timeout), so that a job
/// abandoned by a crashed stack comes back within seconds here.
pub const VISIBILITY_SECS: i32 = 10;
const POLL_PAUSE: Duration = Duration::from_millis(500);
/// As the template's `EraseJobsMapping`'s `MaximumConcurrency`.
pub const CONCURRENCY: usize = 5;

fn setup_err(e: impl std::fmt::Display) -> LocalError {
    LocalError::Setup(format!("the erase queue: {e}"))
}

/// Creates (or finds) the queue and its dead-letter queue; their URLs.
pub async fn create(sqs: &aws_sdk_sqs::Client) -> Result<(String, String), LocalError> {
    let dlq = sqs
        .create_queue()
        .queue_name(ERASE_DLQ)
        .send()
        .await
        .map_err(|e| setup_err(DisplayErrorContext(e)))?
        .queue_url
        .ok_or_else(|| setup_err("no URL"))?;
    let dlq_arn = sqs
        .get_queue_attributes()
        .queue_url(&dlq)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| setup_err(DisplayErrorContext(e)))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| setup_err("no dead-letter queue ARN"))?;
    let redrive =
        serde_json::json!({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": MAX_RECEIVES});
    let queue = sqs
        .create_queue()
        .queue_name(ERASE_QUEUE)
        .attributes(QueueAttributeName::RedrivePolicy, redrive.to_string())
        .attributes(
            QueueAttributeName::VisibilityTimeout,
            VISIBILITY_SECS.to_string(),
        )
        .send()
        .await
        .map_err(|e| setup_err(DisplayErrorContext(e)))?
        .queue_url
        .ok_or_else(|| setup_err("no URL"))?;
    Ok((queue, dlq))
}

/// Polls until the process stops. Errors reaching the queue are logged and retried.
pub async fn run(sqs: aws_sdk_sqs::Client, queue_url: String, worker: Worker<DynamoLikes>) {
    let worker = Arc::new(worker);
    let slots = Arc::new(Semaphore::new(CONCURRENCY));
    loop {
        // As many messages as there are free slots, one at least.
        let free = slots.available_permits().max(1);
        let Ok(first) = Arc::clone(&slots).acquire_owned().await else {
            return;
        };
        let messages =
            sqs_poll::receive(&sqs, &queue_url, "the erase queue", POLL_PAUSE, free).await;
        let mut permit = Some(first);
        for m in messages {
            let slot = match permit.take() {
                Some(p) => p,
                None => match Arc::clone(&slots).acquire_owned().await {
                    Ok(p) => p,
                    Err(_) => return,
                },
            };
            let (sqs, queue_url, worker) = (sqs.clone(), queue_url.clone(), Arc::clone(&worker));
            tokio::spawn(async move {
                invoke(&sqs, &queue_url, &worker, &m).await;
                drop(slot);
            });
        }
    }
}

/// One invocation of the worker with one message; the message deleted unless it failed.
async fn invoke(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    worker: &Worker<DynamoLikes>,
    m: &aws_sdk_sqs::types::Message,
) {
    let mut event = SqsEvent::default();
    event.records = vec![message(
        m.message_id().unwrap_or(""),
        m.receipt_handle().unwrap_or(""),
        m.body().unwrap_or(""),
    )];
    let response = worker.handle(&event, None).await;
    if response.batch_item_failures.is_empty() {
        // Not deleted, it is delivered again later and erased again: harmless.
        sqs_poll::delete(sqs, queue_url, m, "the erase queue").await;
    }
}
