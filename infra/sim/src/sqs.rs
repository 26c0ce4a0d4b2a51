//! SQS messages as Lambda's SQS event carries them (the local poller, the erase worker's tests).

use aws_lambda_events::event::sqs::SqsMessage;

pub fn message(id: &str, receipt: &str, body: &str) -> SqsMessage {
    let mut m = SqsMessage::default();
    m.message_id = Some(id.to_owned());
    m.receipt_handle = Some(receipt.to_owned());
    m.body = Some(body.to_owned());
    m.event_source = Some("aws:sqs".to_owned());
    m
}
