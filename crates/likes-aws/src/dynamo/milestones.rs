//! The events function's milestone items (the `EventStateTable`): every DynamoDB expression on
//! them lives here. One item per post that reached a milestone, key [`milestone_key`]: the
//! highest milestone announced (`N`), the highest before the last announcement (`N`), and the
//! record that announcement was made for (bucket `N`, sequence number `S`). No TTL: a milestone
//! is announced once for good.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use aws_sdk_dynamodb::Client;
use likes_core::store::events::{MilestoneState, MilestoneStore};
use likes_core::{PostId, SeqNo, StoreError};

use super::calls::{self, Item, BATCH_GET_MAX};
use super::classify::build;
use super::schema::event_state::{milestone_key, ANNOUNCED, BEFORE, BY_BUCKET, BY_SEQ, PK};
use super::{applied, s};

#[derive(Clone, Debug)]
pub struct DynamoMilestones {
    client: Client,
    table: String,
}

impl DynamoMilestones {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

fn number(item: &Item, name: &str) -> Result<Option<u64>, StoreError> {
    match item.get(name) {
        None => Ok(None),
        Some(AttributeValue::N(n)) => n
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Internal(format!("{name} {n:?} is not a count"))),
        Some(other) => Err(StoreError::Internal(format!("{name}: {other:?}"))),
    }
}

fn state_of(item: &Item) -> Result<MilestoneState, StoreError> {
    let by_seq = match item.get(BY_SEQ) {
        Some(AttributeValue::S(raw)) => {
            Some(SeqNo::parse(raw).map_err(|e| StoreError::Internal(format!("{BY_SEQ}: {e}")))?)
        }
        _ => None,
    };
    let by_bucket = number(item, BY_BUCKET)?.and_then(|b| u8::try_from(b).ok());
    Ok(MilestoneState {
        announced: number(item, ANNOUNCED)?.unwrap_or(0),
        before: number(item, BEFORE)?.unwrap_or(0),
        by: by_bucket.zip(by_seq),
    })
}

impl MilestoneStore for DynamoMilestones {
    async fn read_milestones(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, MilestoneState>, StoreError> {
        let by_key: HashMap<String, &PostId> =
            posts.iter().map(|p| (milestone_key(p), p)).collect();
        let keys: Vec<&String> = by_key.keys().collect();
        let mut out = HashMap::with_capacity(posts.len());
        for chunk in keys.chunks(BATCH_GET_MAX) {
            let mut request = KeysAndAttributes::builder().consistent_read(true);
            for key in chunk {
                request = request.keys(HashMap::from([(PK.to_owned(), s(key.as_str()))]));
            }
            let items =
                calls::get_all(&self.client, &self.table, request.build().map_err(build)?).await?;
            for item in items {
                let key = item.get(PK).and_then(|v| v.as_s().ok());
                if let Some(post) = key.and_then(|k| by_key.get(k)) {
                    out.insert((*post).clone(), state_of(&item)?);
                }
            }
        }
        Ok(out)
    }

    async fn record_milestone(
        &self,
        post: &PostId,
        new: &MilestoneState,
    ) -> Result<bool, StoreError> {
        let n = |v: u64| AttributeValue::N(v.to_string());
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, s(milestone_key(post)))
            .expression_attribute_names("#m", ANNOUNCED)
            .expression_attribute_names("#f", BEFORE)
            .expression_attribute_values(":m", n(new.announced))
            .expression_attribute_values(":f", n(new.before));
        let mut set = "SET #m = :m, #f = :f".to_owned();
        if let Some((bucket, seq)) = &new.by {
            set.push_str(", #b = :b, #s = :s");
            req = req
                .expression_attribute_names("#b", BY_BUCKET)
                .expression_attribute_names("#s", BY_SEQ)
                .expression_attribute_values(":b", n(u64::from(*bucket)))
                .expression_attribute_values(":s", s(seq.raw()));
        }
        // Monotonic: the database decides which of two racing announcements is recorded.
        applied(
            req.update_expression(set)
                .condition_expression("attribute_not_exists(#m) OR #m < :m")
                .send()
                .await,
        )
    }
}
