//! The erase queue, played locally: an SQS queue on the emulator with a dead-letter queue (the
//! template's `EraseQueue` and `EraseDeadLetterQueue`), and a poller that does what Lambda's
//! SQS event source mapping does — receive a batch, invoke the worker, delete the messages it
//! did not report as failures. A failed message stays in the queue and reappears after the
//! visibility timeout; after `MAX_RECEIVES` it moves to the dead-letter queue. The messages
//! live in the emulator, so a job outlives a crash of the stack.

use std::time::Duration;

use aws_lambda_events::event::sqs::SqsEvent;
use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::QueueAttributeName;
use erase_worker::Worker;
use likes_aws::DynamoLikes;
use likes_sim::sqs::message;

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
    loop {
        let messages = sqs_poll::receive(&sqs, &queue_url, "the erase queue", POLL_PAUSE).await;
        let mut event = SqsEvent::default();
        event.records = messages
            .iter()
            .map(|m| {
                message(
                    m.message_id().unwrap_or(""),
                    m.receipt_handle().unwrap_or(""),
                    m.body().unwrap_or(""),
                )
            })
            .collect();
        let response = worker.handle(&event, None).await;
        for m in &messages {
            let failed = response
                .batch_item_failures
                .iter()
                .any(|f| Some(f.item_identifier.as_str()) == m.message_id());
            if !failed {
                // Not deleted, it is delivered again later and erased again: harmless.
                sqs_poll::delete(&sqs, &queue_url, m, "the erase queue").await;
            }
        }
    }
}
