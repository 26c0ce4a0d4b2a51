//! The aggregator's side of a recount on the Counts table: fences, and the window log kept next
//! to the likes (control items `~w#<job>#<user>` in the bucket's partition of the Likes table,
//! so that the job can read them with one Query).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, PutRequest, WriteRequest};

use super::{bucket_attrs, recount_attrs, DynamoCounts};
use crate::bucket::PostBucket;
use crate::ids::PostId;
use crate::schema::counts::{PK, UPDATED_AT};
use crate::schema::likes::{self, EVENT, EXPIRES_AT, SEQ};
use crate::seq::Seq;
use crate::store::batch;
use crate::store::error::{build, classify, StoreError};
use crate::store::{ApplyOutcome, FenceWrite, WindowEntry};

/// Window entries outlive a job that died by this long before TTL removes them.
const WINDOW_TTL_SECS: i64 = 2 * 24 * 3600;

/// The sort key of `user`'s entry in `job`'s window.
pub fn window_key(job: &str, user: &str) -> String {
    format!("~w#{job}#{user}")
}

impl DynamoCounts {
    pub(super) async fn write_fence(
        &self,
        post: &PostId,
        b: u8,
        fence: FenceWrite<'_>,
        seq: Seq<'_>,
        created: i64,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let (c, h, t) = bucket_attrs(b);
        let (w, ej, ec) = recount_attrs(b);
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .key(PK, AttributeValue::S(post.as_str().to_owned()))
            .expression_attribute_names("#h", h)
            .expression_attribute_names("#t", t)
            .expression_attribute_names("#u", UPDATED_AT)
            .expression_attribute_values(":seq", AttributeValue::S(seq.key().as_str().to_owned()))
            .expression_attribute_values(":t", AttributeValue::N(created.to_string()))
            .expression_attribute_values(":now", AttributeValue::S(now.to_owned()));
        let mark = "SET #h = :seq, #t = :t, #u = :now";
        let below = "(attribute_not_exists(#h) OR #h < :seq)";
        req = match fence {
            FenceWrite::Begin { job } => req
                .update_expression(format!("{mark}, #w = :job"))
                .condition_expression(below)
                .expression_attribute_names("#w", w)
                .expression_attribute_values(":job", AttributeValue::S(job.to_owned())),
            FenceWrite::End { job, closes: true } => req
                // `SET ec = c` reads c before the update: the count through the records before
                // this fence, which is what the job compares with.
                .update_expression(format!(
                    "{mark}, #ej = :job, #ec = if_not_exists(#c, :zero) REMOVE #w"
                ))
                .condition_expression(format!("{below} AND #w = :job"))
                .expression_attribute_names("#w", w)
                .expression_attribute_names("#ej", ej)
                .expression_attribute_names("#ec", ec)
                .expression_attribute_names("#c", c)
                .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
                .expression_attribute_values(":zero", AttributeValue::N("0".into())),
            FenceWrite::End { closes: false, .. } => {
                req.update_expression(mark).condition_expression(below)
            }
        };
        match req.send().await {
            Ok(_) => Ok(ApplyOutcome::Applied { counts: Vec::new() }),
            Err(e)
                if e.as_service_error()
                    .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
            {
                Ok(ApplyOutcome::AlreadyApplied)
            }
            Err(e) => Err(classify(e)),
        }
    }

    pub(super) async fn write_window(
        &self,
        bucket: &PostBucket,
        job: &str,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let Some(table) = &self.windows else {
            return Err(StoreError::Internal(
                "this Counts store was not given the Likes table to record recount windows in"
                    .into(),
            ));
        };
        let expires = chrono::Utc::now().timestamp() + WINDOW_TTL_SECS;
        let mut requests = Vec::with_capacity(entries.len());
        for e in entries {
            let item = HashMap::from([
                (likes::PK.to_owned(), AttributeValue::S(bucket.to_string())),
                (
                    likes::SK.to_owned(),
                    AttributeValue::S(window_key(job, e.user)),
                ),
                (
                    SEQ.to_owned(),
                    AttributeValue::S(e.seq.key().as_str().to_owned()),
                ),
                (
                    EVENT.to_owned(),
                    AttributeValue::S(if e.liked { "I" } else { "R" }.into()),
                ),
                (
                    EXPIRES_AT.to_owned(),
                    AttributeValue::N(expires.to_string()),
                ),
            ]);
            let put = PutRequest::builder()
                .set_item(Some(item))
                .build()
                .map_err(build)?;
            requests.push(WriteRequest::builder().put_request(put).build());
        }
        // Few rounds: this runs inside the aggregator's batch, against its deadline.
        batch::write_all(&self.client, table, requests, 5).await
    }
}
