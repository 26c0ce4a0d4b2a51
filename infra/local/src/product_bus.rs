//! The product's bus, played locally: the bus `likes-product` on the emulator, and the
//! template's `ProductEventsRule` on it: the product's decisions (source `product`, the
//! detail-types the service acts on) go, whole, to the erase queue, where the erase worker reads
//! them (`likes_core::product_event`). `PutEvents` on the emulator's bus then takes effect as
//! on AWS.

use aws_sdk_eventbridge::error::DisplayErrorContext;
use aws_sdk_eventbridge::types::Target;
use aws_sdk_sqs::types::QueueAttributeName;
use likes_aws::eventbridge::ensure_bus;
use likes_core::product_event::DETAIL_TYPES;
use serde_json::json;

use crate::error::LocalError;

/// The bus `make dev` creates (the template's `ProductEventBusName`, here fixed).
pub const PRODUCT_BUS: &str = "likes-product";
/// The template's `ProductEventSource` default.
pub const PRODUCT_SOURCE: &str = "product";
const RULE: &str = "likes-product-decisions";

fn setup_err(e: impl std::fmt::Display) -> LocalError {
    LocalError::Setup(format!("the product's bus: {e}"))
}

/// Creates (or finds) the bus, and its rule to the erase queue at `queue_url`.
pub async fn create(
    events: &aws_sdk_eventbridge::Client,
    sqs: &aws_sdk_sqs::Client,
    queue_url: &str,
) -> Result<(), LocalError> {
    ensure_bus(events, PRODUCT_BUS).await.map_err(setup_err)?;
    let arn = sqs
        .get_queue_attributes()
        .queue_url(queue_url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|e| setup_err(aws_sdk_sqs::error::DisplayErrorContext(e)))?
        .attributes
        .and_then(|mut a| a.remove(&QueueAttributeName::QueueArn))
        .ok_or_else(|| setup_err("the erase queue has no ARN"))?;
    let pattern = json!({"source": [PRODUCT_SOURCE], "detail-type": DETAIL_TYPES});
    events
        .put_rule()
        .name(RULE)
        .event_bus_name(PRODUCT_BUS)
        .event_pattern(pattern.to_string())
        .send()
        .await
        .map_err(|e| setup_err(DisplayErrorContext(e)))?;
    let target = Target::builder()
        .id("erase-queue")
        .arn(arn)
        .build()
        .map_err(setup_err)?;
    events
        .put_targets()
        .rule(RULE)
        .event_bus_name(PRODUCT_BUS)
        .targets(target)
        .send()
        .await
        .map_err(|e| setup_err(DisplayErrorContext(e)))?;
    Ok(())
}
