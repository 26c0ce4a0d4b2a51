//! Recount windows, as the aggregator records them (count-aggregator's invariant 9): one control
//! item per change inside a job's window, `likes_core::control::window_key`, next to the likes,
//! so that the job reads its window with one Query and counts its entries.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};
use likes_core::control::window_key;
use likes_core::{PostBucket, StoreError, WindowEntry};

use super::{item_key, DynamoLikes};
use crate::dynamo::calls;
use crate::dynamo::classify::build;
use crate::dynamo::s;
use crate::dynamo::schema::likes::{EVENT, EXPIRES_AT};

/// A recount's control items (window entries, fences) outlive a job that died by this long
/// before TTL removes them: far beyond any live job, which deletes its own when it ends.
pub(super) const CONTROL_TTL_SECS: i64 = 2 * 24 * 3600;

/// The event an entry records: the user's last change was a like (`I`) or an unlike (`R`).
pub(super) const LIKED: &str = "I";
const UNLIKED: &str = "R";

impl DynamoLikes {
    /// Writes window entries on the bucket (a redelivery rewrites the same ones).
    pub async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let expires = chrono::Utc::now().timestamp() + CONTROL_TTL_SECS;
        let mut requests = Vec::with_capacity(entries.len());
        for e in entries {
            let mut item: HashMap<String, AttributeValue> =
                item_key(bucket, window_key(e.job, e.user, &e.seq.key()));
            item.insert(EVENT.to_owned(), s(if e.liked { LIKED } else { UNLIKED }));
            item.insert(
                EXPIRES_AT.to_owned(),
                AttributeValue::N(expires.to_string()),
            );
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(build)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        // Few rounds: this runs inside the aggregator's batch, against its deadline.
        calls::write_all(&self.client, &self.table, requests, 5).await
    }
}
