//! The erase queue on SQS (the template's `EraseQueue`; locally, the emulator's).

use std::time::Duration;

use likes_core::erase_job::{EraseJob, EraseQueue, Submitted, MAX_DELAY};
use likes_core::StoreError;

pub struct SqsEraseQueue {
    client: aws_sdk_sqs::Client,
    queue_url: String,
}

impl SqsEraseQueue {
    pub fn new(client: aws_sdk_sqs::Client, queue_url: impl Into<String>) -> Self {
        Self {
            client,
            queue_url: queue_url.into(),
        }
    }
}

impl SqsEraseQueue {
    async fn send(&self, job: &EraseJob, delay: Duration) -> Result<(), StoreError> {
        let body = serde_json::to_string(job).map_err(|e| StoreError::Internal(e.to_string()))?;
        self.send_body(body, delay).await
    }

    async fn send_body(&self, body: String, delay: Duration) -> Result<(), StoreError> {
        // Whole seconds, rounded up: a message back a fraction early would find its job not
        // due and be sent again at once.
        let delay = delay.min(MAX_DELAY).as_millis().div_ceil(1000);
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .set_delay_seconds((delay > 0).then(|| i32::try_from(delay).unwrap_or(0)))
            .send()
            .await
            .map_err(|e| {
                // Not sent, or not known to be sent: the caller may ask again (erasing twice
                // is harmless), so both are "try again later".
                StoreError::Unavailable(aws_sdk_sqs::error::DisplayErrorContext(e).to_string())
            })?;
        Ok(())
    }
}

impl EraseQueue for SqsEraseQueue {
    fn submit<'a>(&'a self, job: &'a EraseJob) -> Submitted<'a> {
        Box::pin(self.send(job, Duration::ZERO))
    }

    fn submit_after<'a>(&'a self, job: &'a EraseJob, delay: Duration) -> Submitted<'a> {
        Box::pin(self.send(job, delay))
    }

    fn forward<'a>(&'a self, body: &'a str, delay: Duration) -> Submitted<'a> {
        Box::pin(self.send_body(body.to_owned(), delay))
    }
}
