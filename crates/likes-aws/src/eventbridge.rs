//! The like events' bus on EventBridge (the template's `LikeEventBus`; locally, the
//! emulator's): one `PutEvents` call per at most ten entries, each answered on its own.

use aws_sdk_eventbridge::error::DisplayErrorContext;
use aws_sdk_eventbridge::primitives::DateTime;
use aws_sdk_eventbridge::types::PutEventsRequestEntry;
use likes_core::store::events::{BusEntry, EventBus};
use likes_core::StoreError;

/// Every event's `source`: what a rule matches the likes service's events by.
pub const SOURCE: &str = "likes";

pub struct EventBridgeBus {
    client: aws_sdk_eventbridge::Client,
    bus_name: String,
}

impl EventBridgeBus {
    pub fn new(client: aws_sdk_eventbridge::Client, bus_name: impl Into<String>) -> Self {
        Self {
            client,
            bus_name: bus_name.into(),
        }
    }
}

impl EventBus for EventBridgeBus {
    async fn put(&self, entries: &[BusEntry]) -> Result<Vec<Option<String>>, StoreError> {
        let request = entries.iter().map(|e| {
            PutEventsRequestEntry::builder()
                .event_bus_name(&self.bus_name)
                .source(SOURCE)
                .detail_type(e.detail_type)
                .detail(&e.detail)
                // The like's time; a record without one is stamped by EventBridge at the put.
                .set_time((e.time_secs > 0).then(|| DateTime::from_secs(e.time_secs)))
                .build()
        });
        let out = self
            .client
            .put_events()
            .set_entries(Some(request.collect()))
            .send()
            .await
            // Sent or not, the caller retries the entries; a duplicate carries the same id.
            .map_err(|e| StoreError::Unavailable(DisplayErrorContext(e).to_string()))?;
        let answers = out.entries();
        if answers.len() != entries.len() {
            return Err(StoreError::Internal(format!(
                "PutEvents answered {} entries for {}",
                answers.len(),
                entries.len()
            )));
        }
        // An entry that failed has an error code and no event id.
        Ok(answers
            .iter()
            .map(|a| match (a.error_code(), a.event_id()) {
                (Some(code), _) => Some(code.to_owned()),
                (None, Some(_)) => None,
                (None, None) => Some("NoEventId".to_owned()),
            })
            .collect())
    }
}

/// Creates the bus `bus` on the emulator unless it exists (`make dev`, the tests). Never used on
/// AWS, where the template creates the bus.
pub async fn ensure_bus(events: &aws_sdk_eventbridge::Client, bus: &str) -> Result<(), String> {
    let created = events.create_event_bus().name(bus).send().await;
    match created {
        Ok(_) => Ok(()),
        Err(e)
            if e.as_service_error()
                .is_some_and(|se| se.is_resource_already_exists_exception()) =>
        {
            Ok(())
        }
        Err(e) => Err(DisplayErrorContext(e).to_string()),
    }
}

/// The bus as the tests set it up on the emulator: the bus, and a rule that delivers every
/// event of [`SOURCE`] to the SQS queue `queue` (created if absent), for a test to read what
/// EventBridge delivered. Never used on AWS, where the template creates the bus and other
/// services bring their own rules. Returns the queue's URL.
pub async fn bus_to_queue(
    events: &aws_sdk_eventbridge::Client,
    sqs: &aws_sdk_sqs::Client,
    bus: &str,
    queue: &str,
) -> Result<String, String> {
    use aws_sdk_sqs::types::QueueAttributeName;
    ensure_bus(events, bus).await?;
    let url = sqs
        .create_queue()
        .queue_name(queue)
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())?
        .queue_url
        .ok_or("the queue has no URL")?;
    let arn = sqs
        .get_queue_attributes()
        .queue_url(&url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or("the queue has no ARN")?;
    let rule = format!("{queue}-all");
    events
        .put_rule()
        .name(&rule)
        .event_bus_name(bus)
        .event_pattern(format!(r#"{{"source": ["{SOURCE}"]}}"#))
        .send()
        .await
        .map_err(|e| DisplayErrorContext(e).to_string())?;
    let target = aws_sdk_eventbridge::types::Target::builder()
        .id("queue")
        .arn(arn)
        .build()
        .map_err(|e| e.to_string())?;
    events
        .put_targets()
        .rule(&rule)
        .event_bus_name(bus)
        .targets(target)
        .send()
        .await
        .map_err(|e| DisplayErrorContext(e).to_string())?;
    Ok(url)
}
