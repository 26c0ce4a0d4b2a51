//! The events function's suppression items (the `EventStateTable`): every DynamoDB expression
//! on them lives here. One item per (user, post, kind) that notified, key [`pair_key`] (a
//! like's as before reactions): the current window's notifying like and its unlike (sequence
//! numbers as received, `S`), when the like was created (`N`, epoch seconds), the same of the
//! window before, and `expires_at`, the table's TTL. Under 1 KB: one write unit per write.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use likes_core::store::events::{Epoch, Pair, PairState, SuppressionStore};
use likes_core::{SeqNo, StoreError};

use super::calls::{self, Item, BATCH_GET_MAX};
use super::classify::build;
use super::schema::event_state::{
    pair_key, EXPIRES_AT, NOTIFIED, NOTIFIED_AT, PK, PREV_AT, PREV_NOTIFIED, PREV_RETRACTED,
    RETRACTED,
};
use super::{applied, s};

#[derive(Clone, Debug)]
pub struct DynamoSuppression {
    client: Client,
    table: String,
}

impl DynamoSuppression {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn seq_of(item: &Item, name: &str) -> Result<Option<SeqNo>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::S(raw)) => SeqNo::parse(raw)
            .map(Some)
            .map_err(|e| StoreError::Internal(format!("{name}: {e}"))),
        Some(other) => Err(StoreError::Internal(format!("{name}: {other:?}"))),
    }
}

fn n_of(item: &Item, name: &str) -> Result<i64, StoreError> {
    match item.get(name) {
        Some(AttributeValue::N(n)) => n
            .parse()
            .map_err(|_| StoreError::Internal(format!("{name} {n:?} is not an integer"))),
        other => Err(StoreError::Internal(format!("{name}: {other:?}"))),
    }
}

fn epoch_of(item: &Item, n: &str, at: &str, r: &str) -> Result<Option<Epoch>, StoreError> {
    let Some(notified) = seq_of(item, n)? else {
        return Ok(None);
    };
    Ok(Some(Epoch {
        notified,
        at: n_of(item, at)?,
        retracted: seq_of(item, r)?,
    }))
}

fn state_of(item: &Item) -> Result<PairState, StoreError> {
    Ok(PairState {
        current: epoch_of(item, NOTIFIED, NOTIFIED_AT, RETRACTED)?,
        previous: epoch_of(item, PREV_NOTIFIED, PREV_AT, PREV_RETRACTED)?,
    })
}

fn put_epoch(item: &mut Item, e: &Epoch, n: &str, at: &str, r: &str) {
    item.insert(n.to_owned(), s(e.notified.raw()));
    item.insert(at.to_owned(), AttributeValue::N(e.at.to_string()));
    if let Some(retracted) = &e.retracted {
        item.insert(r.to_owned(), s(retracted.raw()));
    }
}

impl SuppressionStore for DynamoSuppression {
    async fn read_pairs(&self, pairs: &[Pair]) -> Result<HashMap<Pair, PairState>, StoreError> {
        let by_key: HashMap<String, &Pair> = pairs
            .iter()
            .map(|p| (pair_key(&p.post, &p.user, &p.kind), p))
            .collect();
        let keys: Vec<&String> = by_key.keys().collect();
        let mut out = HashMap::with_capacity(pairs.len());
        for chunk in keys.chunks(BATCH_GET_MAX) {
            let mut request = KeysAndAttributes::builder().consistent_read(true);
            for key in chunk {
                request = request.keys(HashMap::from([(PK.to_owned(), s(key.as_str()))]));
            }
            let items =
                calls::get_all(&self.client, &self.table, request.build().map_err(build)?).await?;
            for item in items {
                let key = item.get(PK).and_then(|v| v.as_s().ok());
                if let Some(pair) = key.and_then(|k| by_key.get(k)) {
                    out.insert((*pair).clone(), state_of(&item)?);
                }
            }
        }
        Ok(out)
    }

    async fn write_pair(
        &self,
        pair: &Pair,
        seen: &PairState,
        new: &PairState,
        expires_at: i64,
    ) -> Result<bool, StoreError> {
        let mut item = HashMap::from([
            (
                PK.to_owned(),
                s(pair_key(&pair.post, &pair.user, &pair.kind)),
            ),
            (
                EXPIRES_AT.to_owned(),
                AttributeValue::N(expires_at.to_string()),
            ),
        ]);
        if let Some(e) = &new.current {
            put_epoch(&mut item, e, NOTIFIED, NOTIFIED_AT, RETRACTED);
        }
        if let Some(e) = &new.previous {
            put_epoch(&mut item, e, PREV_NOTIFIED, PREV_AT, PREV_RETRACTED);
        }
        // The database decides: written only over the state the decisions were made from.
        let mut req = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .expression_attribute_names("#n", NOTIFIED);
        let condition = match &seen.current {
            None => "attribute_not_exists(#n)".to_owned(),
            Some(e) => {
                req = req
                    .expression_attribute_names("#r", RETRACTED)
                    .expression_attribute_values(":n", s(e.notified.raw()));
                match &e.retracted {
                    None => "#n = :n AND attribute_not_exists(#r)".to_owned(),
                    Some(r) => {
                        req = req.expression_attribute_values(":r", s(r.raw()));
                        "#n = :n AND #r = :r".to_owned()
                    }
                }
            }
        };
        applied(req.condition_expression(condition).send().await)
    }
}
