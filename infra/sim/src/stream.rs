//! DynamoDB stream records in the shape Lambda hands them to a function (Lambda's event, not
//! the Streams API's): `eventName`, `dynamodb.Keys` in DynamoDB JSON, `SequenceNumber` as a
//! decimal string, `ApproximateCreationDateTime` in epoch seconds.

use serde_json::{json, Map, Value};

/// The stream ARN the builders put on records unless told otherwise.
pub const STREAM_ARN: &str =
    "arn:aws:dynamodb:us-east-1:123456789012:table/likes/stream/2026-11-30T00:00:00.000";

#[derive(Debug, Clone)]
pub struct StreamRecord {
    pub event_name: String,
    /// The item's keys in DynamoDB JSON (`{"post_bucket": {"S": "…"}}`).
    pub keys: Map<String, Value>,
    pub sequence_number: String,
    pub created_secs: f64,
    pub event_id: String,
    pub size_bytes: i64,
    pub stream_arn: String,
}

impl StreamRecord {
    /// A KEYS_ONLY record of the Likes table: `INSERT` is a like, `REMOVE` an unlike.
    pub fn likes(event_name: &str, post_bucket: &str, user_id: &str, seq: &str) -> Self {
        let mut keys = Map::new();
        keys.insert("post_bucket".into(), json!({ "S": post_bucket }));
        keys.insert("user_id".into(), json!({ "S": user_id }));
        Self {
            event_name: event_name.to_owned(),
            keys,
            sequence_number: seq.to_owned(),
            created_secs: 1_764_000_000.0,
            event_id: uuid::Uuid::new_v4().simple().to_string(),
            size_bytes: 120,
            stream_arn: STREAM_ARN.to_owned(),
        }
    }

    pub fn created(mut self, epoch_secs: f64) -> Self {
        self.created_secs = epoch_secs;
        self
    }

    pub fn to_json(&self) -> Value {
        json!({
            "eventID": self.event_id,
            "eventName": self.event_name,
            "eventVersion": "1.1",
            "eventSource": "aws:dynamodb",
            "awsRegion": "us-east-1",
            "dynamodb": {
                "ApproximateCreationDateTime": self.created_secs,
                "Keys": self.keys,
                "SequenceNumber": self.sequence_number,
                "SizeBytes": self.size_bytes,
                "StreamViewType": "KEYS_ONLY"
            },
            "eventSourceARN": self.stream_arn
        })
    }
}

/// A batch as Lambda delivers it: `{"Records": [...]}`.
pub fn batch(records: Vec<Value>) -> Value {
    json!({ "Records": records })
}
