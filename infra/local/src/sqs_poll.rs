//! Reading an SQS queue on the emulator as a local stand-in does (the erase queue's poller):
//! short polls, since the emulator answers one request at a time and a waiting receive would
//! hold up every like behind it. The emulator's `ReceiveMessage` looks at every message waiting,
//! so only a queue that stays short is read this way (the erase queue: one message a person).

use std::time::Duration;

use aws_sdk_sqs::error::DisplayErrorContext;
use aws_sdk_sqs::types::Message;

/// The next non-empty batch (up to `max`, at most 10). An unreachable queue is logged and
/// retried each second; an empty one is asked again after `pause`.
pub async fn receive(
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
    what: &str,
    pause: Duration,
    max: usize,
) -> Vec<Message> {
    let max = max.clamp(1, 10) as i32;
    loop {
        let received = sqs
            .receive_message()
            .queue_url(queue_url)
            .max_number_of_messages(max)
            .wait_time_seconds(0)
            .send()
            .await;
        match received {
            Ok(out) => {
                let messages = out.messages.unwrap_or_default();
                if !messages.is_empty() {
                    return messages;
                }
                tokio::time::sleep(pause).await;
            }
            Err(e) => {
                tracing::warn!(error = %DisplayErrorContext(e), "{what} unreachable; retrying");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Deletes a message that was handled. A failure is only logged: the message comes back after
/// its visibility timeout and is handled again, which both readers can afford.
pub async fn delete(sqs: &aws_sdk_sqs::Client, queue_url: &str, m: &Message, what: &str) {
    let deleted = sqs
        .delete_message()
        .queue_url(queue_url)
        .receipt_handle(m.receipt_handle().unwrap_or(""))
        .send()
        .await;
    if let Err(e) = deleted {
        tracing::warn!(error = %DisplayErrorContext(e), "a message of {what} was not deleted");
    }
}
