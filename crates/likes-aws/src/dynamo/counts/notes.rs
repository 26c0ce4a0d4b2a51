//! Repair notes (`likes_core::RepairNote`): items of the Counts table beside the posts', keyed
//! `repair#<post_id>`. They are written with `PutItem` — an item of their own, not an attribute
//! of the post's, because the post's item is what just failed (a throttled hot item, or a post
//! that has none yet) — and are only found by a Scan: no reader of counts ever names their key.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::{PostId, RepairNote, StoreError};

use super::DynamoCounts;
use crate::dynamo::applied;
use crate::dynamo::classify::{classify, classify_read};
use crate::dynamo::schema::counts::{NOTE_FROM, NOTE_ID, NOTE_MS, NOTE_POST, NOTE_PREFIX, PK};

/// The key of `post`'s note.
fn note_key(post: &PostId) -> String {
    format!("{NOTE_PREFIX}{post}")
}

/// Whether a Counts key is a note's rather than a post's.
pub(super) fn is_note_key(key: &str) -> bool {
    key.starts_with(NOTE_PREFIX)
}

fn note_of(item: &HashMap<String, AttributeValue>) -> Option<RepairNote> {
    let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok());
    Some(RepairNote {
        post: PostId::parse(s(NOTE_POST)?).ok()?,
        noted_ms: item.get(NOTE_MS)?.as_n().ok()?.parse().ok()?,
        id: s(NOTE_ID)?.clone(),
        from: s(NOTE_FROM)?.clone(),
    })
}

impl DynamoCounts {
    pub(super) async fn put_note(&self, post: &PostId, from: &str) -> Result<(), StoreError> {
        let now = chrono::Utc::now().timestamp_millis();
        self.client
            .put_item()
            .table_name(&self.table)
            .item(PK, AttributeValue::S(note_key(post)))
            .item(NOTE_POST, AttributeValue::S(post.to_string()))
            .item(NOTE_MS, AttributeValue::N(now.to_string()))
            .item(NOTE_ID, AttributeValue::S(uuid::Uuid::new_v4().to_string()))
            .item(NOTE_FROM, AttributeValue::S(from.to_owned()))
            .send()
            .await
            .map(|_| ())
            .map_err(classify)
    }

    pub(super) async fn scan_notes(&self) -> Result<Vec<RepairNote>, StoreError> {
        let mut notes = Vec::new();
        let mut pages = self
            .client
            .scan()
            .table_name(&self.table)
            // Consistent: a note cleared a moment ago must not be recounted again, and a run
            // right after a failure must see its note.
            .consistent_read(true)
            .filter_expression("begins_with(#p, :prefix)")
            .expression_attribute_names("#p", PK)
            .expression_attribute_values(":prefix", AttributeValue::S(NOTE_PREFIX.to_owned()))
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify_read)?.items() {
                match note_of(item) {
                    Some(note) => notes.push(note),
                    // Written by something other than the aggregator: named, not guessed at.
                    None => {
                        return Err(StoreError::Internal(format!(
                            "a repair note that does not read as one: {:?}",
                            item.get(PK)
                        )))
                    }
                }
            }
        }
        Ok(notes)
    }

    pub(super) async fn delete_note(&self, note: &RepairNote) -> Result<bool, StoreError> {
        let res = self
            .client
            .delete_item()
            .table_name(&self.table)
            .key(PK, AttributeValue::S(note_key(&note.post)))
            .condition_expression("#id = :id")
            .expression_attribute_names("#id", NOTE_ID)
            .expression_attribute_values(":id", AttributeValue::S(note.id.clone()))
            .send()
            .await;
        applied(res)
    }
}
