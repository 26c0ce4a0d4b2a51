//! The aggregator's side of a recount on the Counts table (count-aggregator's invariant 9): a
//! fence advances its bucket's mark like any record, opens the job's window (`w<b>`) at
//! `begin`, and at `end` closes it and notes the bucket's count for the job (`ej<b>`, `ec<b>`).

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::time::now_ts;
use likes_core::{ApplyOutcome, FenceRecord, FenceWrite, PostId, StoreError};

use super::{bucket_attrs, post_key, recount_attrs, DynamoCounts};
use crate::dynamo::classify::classify;
use crate::dynamo::failed_condition;
use crate::dynamo::schema::counts::UPDATED_AT;

impl DynamoCounts {
    pub(super) async fn write_fence(
        &self,
        post: &PostId,
        r: &FenceRecord<'_>,
    ) -> Result<ApplyOutcome, StoreError> {
        let (c, h, t) = bucket_attrs(r.bucket);
        let (w, ej, ec) = recount_attrs(r.bucket);
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .expression_attribute_names("#h", h)
            .expression_attribute_names("#t", t)
            .expression_attribute_names("#u", UPDATED_AT)
            .expression_attribute_values(":seq", AttributeValue::S(r.seq.key().as_str().to_owned()))
            .expression_attribute_values(":t", AttributeValue::N(r.created.to_string()))
            .expression_attribute_values(":now", AttributeValue::S(now_ts()));
        let mark = "SET #h = :seq, #t = :t, #u = :now";
        let below = "(attribute_not_exists(#h) OR #h < :seq)";
        req = match r.fence {
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
            Err(e) if failed_condition(&e) => Ok(ApplyOutcome::AlreadyApplied),
            Err(e) => Err(classify(e)),
        }
    }
}
