//! DynamoDB calls that take more than one request: batch calls carried on until nothing is
//! left unprocessed (a batch call answers with `UnprocessedKeys`/`UnprocessedItems` when a
//! partition is throttled; its documentation requires asking again after a backoff), Query pages
//! read until the caller has what it needs, and the consistent read of one item's attributes.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::operation::query::QueryOutput;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, WriteRequest};
use aws_sdk_dynamodb::Client;
use likes_core::StoreError;

use super::classify::{classify, classify_read};

pub use aws_smithy_runtime_api::client::orchestrator::HttpResponse;

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

/// Every item `keys` (at most [`BATCH_GET_MAX`]) finds in `table`; keys still unprocessed
/// after every round fail the whole read (what a strong read needs).
pub async fn get_all(
    client: &Client,
    table: &str,
    keys: KeysAndAttributes,
) -> Result<Vec<Item>, StoreError> {
    let got = get_some(client, table, keys).await?;
    if got.unprocessed.is_empty() {
        Ok(got.items)
    } else {
        Err(StoreError::Unavailable(
            "BatchGetItem kept returning UnprocessedKeys".into(),
        ))
    }
}

/// What [`get_some`] read: the items found, and the keys DynamoDB still left unprocessed
/// after the last round.
#[derive(Debug, Default)]
pub struct Got {
    pub items: Vec<Item>,
    pub unprocessed: Vec<Item>,
}

/// The items `keys` (at most [`BATCH_GET_MAX`]) finds in `table`, asking again for the keys a
/// round leaves unprocessed ([`GET_ATTEMPTS`] rounds, ~0.8 s of backoff in all), and the keys
/// left after the last: a throttled partition costs the read its own keys, not the others'.
pub async fn get_some(
    client: &Client,
    table: &str,
    keys: KeysAndAttributes,
) -> Result<Got, StoreError> {
    let mut got = Got::default();
    let mut request = Some(HashMap::from([(table.to_owned(), keys)]));
    let mut attempt = 0;
    while let Some(mut items) = request.take().filter(|r| !r.is_empty()) {
        if attempt == GET_ATTEMPTS {
            got.unprocessed = items.remove(table).map(|k| k.keys).unwrap_or_default();
            break;
        }
        if attempt > 0 {
            tokio::time::sleep(backoff(attempt)).await;
        }
        attempt += 1;
        let mut out = client
            .batch_get_item()
            .set_request_items(Some(items))
            .send()
            .await
            .map_err(classify_read)?;
        if let Some(items) = out.responses.as_mut().and_then(|r| r.remove(table)) {
            got.items.extend(items);
        }
        request = out.unprocessed_keys;
    }
    Ok(got)
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

/// Reads a Query's pages in order (the SDK's paginator: each page is fetched only when asked
/// for), handing each to `page` until it answers false or none is left.
pub async fn query_pages(
    query: QueryFluentBuilder,
    mut page: impl FnMut(QueryOutput) -> Result<bool, StoreError>,
) -> Result<(), StoreError> {
    let mut pages = query.into_paginator().send();
    while let Some(out) = pages.next().await {
        if !page(out.map_err(classify_read)?)? {
            break;
        }
    }
    Ok(())
}

/// Every item a Query finds, all pages.
pub async fn query_all(query: QueryFluentBuilder) -> Result<Vec<Item>, StoreError> {
    let mut items = Vec::new();
    query_pages(query, |out| {
        items.extend(out.items.unwrap_or_default());
        Ok(true)
    })
    .await?;
    Ok(items)
}

/// One string attribute of one item, read with strong consistency (read-your-writes); `None`
/// when the item or the attribute is absent.
pub async fn get_string(
    client: &Client,
    table: &str,
    key: HashMap<String, AttributeValue>,
    attribute: &str,
) -> Result<Option<String>, StoreError> {
    let out = client
        .get_item()
        .table_name(table)
        .set_key(Some(key))
        .consistent_read(true)
        .projection_expression("#a")
        .expression_attribute_names("#a", attribute)
        .send()
        .await
        .map_err(classify_read)?;
    Ok(out
        .item
        .and_then(|mut item| item.remove(attribute))
        .and_then(|v| v.as_s().ok().cloned()))
}
