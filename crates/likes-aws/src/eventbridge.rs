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
                .time(DateTime::from_secs(e.time_secs))
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
