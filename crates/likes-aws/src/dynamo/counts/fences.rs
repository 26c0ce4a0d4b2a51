//! The aggregator's side of a recount on the Counts table (count-aggregator's invariant 9): a
//! fence advances its bucket's mark like any record, opens the job's window (`w<b>`) at
//! `begin`, and at `end` closes it and notes the bucket's count for the job (`ej<b>`, `ec<b>`).

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::time::now_ts;
use likes_core::{ApplyOutcome, FenceRecord, FenceWrite, PostId, StoreError};

use super::{bucket_attrs, ended_kind_attr, kind_attr, post_key, recount_attrs, DynamoCounts};
use crate::dynamo::classify::classify;
use crate::dynamo::schema::counts::{LEASE_JOB, UPDATED_AT};
use crate::dynamo::{applied, failed_condition};

impl DynamoCounts {
    pub(super) async fn write_fence(
        &self,
        post: &PostId,
        r: &FenceRecord<'_>,
    ) -> Result<ApplyOutcome, StoreError> {
        let (c, h, t) = bucket_attrs(r.bucket);
        let a = recount_attrs(r.bucket);
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
        // Placed after the mark; or, for a fence that proved the mark ahead of the stream
        // (invariant 10), in place of exactly the mark it found.
        let placed = match r.replaces_mark {
            Some(ahead) => {
                req = req.expression_attribute_values(
                    ":ahead",
                    AttributeValue::S(ahead.as_seq().key().as_str().to_owned()),
                );
                "#h = :ahead"
            }
            None => "(attribute_not_exists(#h) OR #h < :seq)",
        };
        let zero = AttributeValue::N("0".into());
        req = match r.fence {
            FenceWrite::Begin {
                job,
                holds_lease: true,
            } => req
                .update_expression(format!("{mark}, #w = :job, #wn = :zero, #wt = :t"))
                // Only the lease's holder opens a window: a stale job's late fence is inert.
                .condition_expression(format!("{placed} AND #lj = :job"))
                .expression_attribute_names("#w", a.window)
                .expression_attribute_names("#wn", a.entries)
                .expression_attribute_names("#wt", a.opened)
                .expression_attribute_names("#lj", LEASE_JOB)
                .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
                .expression_attribute_values(":zero", zero),
            FenceWrite::End {
                job,
                closes: true,
                kinds,
            } => {
                // Each kind's count is noted beside the like's, read the same way.
                let mut noted = String::new();
                for (i, kind) in kinds.iter().enumerate() {
                    noted.push_str(&format!(", #ek{i} = if_not_exists(#k{i}, :zero)"));
                    req = req
                        .expression_attribute_names(
                            format!("#ek{i}"),
                            ended_kind_attr(r.bucket, kind),
                        )
                        .expression_attribute_names(format!("#k{i}"), kind_attr(r.bucket, kind));
                }
                req
                // `SET ec = c` reads c before the update: the count through the records before
                // this fence, which is what the job compares with; `en = wn`, likewise, the
                // entries the window holds.
                .update_expression(format!(
                    "{mark}, #ej = :job, #ec = if_not_exists(#c, :zero), #en = if_not_exists(#wn, :zero){noted} REMOVE #w, #wn, #wt"
                ))
                .condition_expression(format!("{placed} AND #w = :job"))
                .expression_attribute_names("#w", a.window)
                .expression_attribute_names("#wn", a.entries)
                .expression_attribute_names("#wt", a.opened)
                .expression_attribute_names("#ej", a.ended)
                .expression_attribute_names("#ec", a.ended_count)
                .expression_attribute_names("#en", a.ended_entries)
                .expression_attribute_names("#c", c)
                .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
                .expression_attribute_values(":zero", zero)
            }
            FenceWrite::Begin { .. } | FenceWrite::End { .. } => {
                req.update_expression(mark).condition_expression(placed)
            }
        };
        match req.send().await {
            Ok(_) => Ok(ApplyOutcome::Applied { counts: Vec::new() }),
            Err(e) if failed_condition(&e) => Ok(ApplyOutcome::AlreadyApplied),
            Err(e) => Err(classify(e)),
        }
    }

    /// Closes `job`'s window on the bucket, noting nothing: its job died.
    pub(super) async fn write_close_window(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
    ) -> Result<bool, StoreError> {
        let a = recount_attrs(bucket);
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .update_expression("REMOVE #w, #wn, #wt")
            .condition_expression("#w = :job")
            .expression_attribute_names("#w", a.window)
            .expression_attribute_names("#wn", a.entries)
            .expression_attribute_names("#wt", a.opened)
            .expression_attribute_values(":job", AttributeValue::S(job.to_owned()))
            .send()
            .await;
        applied(res)
    }
}
