//! DynamoDB's batch calls, carried on until nothing is left unprocessed. A batch call answers
//! with `UnprocessedKeys`/`UnprocessedItems` when a partition is throttled; its documentation
//! requires asking again after a backoff, which every batch read and write here does the same way.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, WriteRequest};
use aws_sdk_dynamodb::Client;

use super::error::{classify, classify_read, StoreError};

/// Most keys one BatchGetItem may carry.
pub const BATCH_GET_MAX: usize = 100;
/// Most requests one BatchWriteItem may carry.
pub const BATCH_WRITE_MAX: usize = 25;
/// Rounds of a batch get before giving up.
const GET_ATTEMPTS: u32 = 5;

pub type Item = HashMap<String, AttributeValue>;

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(25 << attempt.min(6))
}

/// Every item `keys` (at most [`BATCH_GET_MAX`]) finds in `table`.
pub async fn get_all(
    client: &Client,
    table: &str,
    keys: KeysAndAttributes,
) -> Result<Vec<Item>, StoreError> {
    let mut found = Vec::new();
    let mut request = Some(HashMap::from([(table.to_owned(), keys)]));
    let mut attempt = 0;
    while let Some(items) = request.take().filter(|r| !r.is_empty()) {
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        attempt += 1;
        if attempt > GET_ATTEMPTS {
            return Err(StoreError::Unavailable(
                "BatchGetItem kept returning UnprocessedKeys".into(),
            ));
        }
        let mut out = client
            .batch_get_item()
            .set_request_items(Some(items))
            .send()
            .await
            .map_err(classify_read)?;
        if let Some(items) = out.responses.as_mut().and_then(|r| r.remove(table)) {
            found.extend(items);
        }
        request = out.unprocessed_keys;
    }
    Ok(found)
}

/// Writes `requests` to `table`, [`BATCH_WRITE_MAX`] per call, in at most `attempts` rounds
/// per call.
pub async fn write_all(
    client: &Client,
    table: &str,
    requests: Vec<WriteRequest>,
    attempts: u32,
) -> Result<(), StoreError> {
    for chunk in requests.chunks(BATCH_WRITE_MAX) {
        let mut pending = Some(HashMap::from([(table.to_owned(), chunk.to_vec())]));
        let mut attempt = 0;
        while let Some(items) = pending.take().filter(|p| !p.is_empty()) {
            if attempt > 0 {
                tokio::time::sleep(backoff(attempt)).await;
            }
            attempt += 1;
            if attempt > attempts {
                return Err(StoreError::Unavailable(
                    "BatchWriteItem kept returning UnprocessedItems".into(),
                ));
            }
            let out = client
                .batch_write_item()
                .set_request_items(Some(items))
                .send()
                .await
                .map_err(classify)?;
            pending = out.unprocessed_items;
        }
    }
    Ok(())
}
