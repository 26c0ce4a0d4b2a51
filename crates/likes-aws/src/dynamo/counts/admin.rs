//! The admin tool's side of the Counts table: a recount's lease on a post (attributes of the
//! post's own item, so that the aggregator's fences and the correction can be conditional on
//! it), the correction itself, and the list of counted posts.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::{CountsAdmin, LeaseState, PostId, StoreError};

use super::{
    bucket_attrs, ended_kind_attr, kind_attr, parse_n, post_key, recount_attrs, DynamoCounts,
};
use crate::dynamo::applied;
use crate::dynamo::classify::classify_read;
use crate::dynamo::schema::counts::{LEASE_BEAT, LEASE_JOB, LEASE_TERM, PK};

fn n(v: impl ToString) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

fn job_value(job: &str) -> AttributeValue {
    AttributeValue::S(job.to_owned())
}

/// The lease a post's item holds, if any.
pub(super) fn lease_of(
    item: &HashMap<String, AttributeValue>,
) -> Result<Option<LeaseState>, StoreError> {
    let Some(job) = item.get(LEASE_JOB).and_then(|v| v.as_s().ok()) else {
        return Ok(None);
    };
    let beat = parse_n(LEASE_BEAT, item.get(LEASE_BEAT))?.unwrap_or(0);
    let term = parse_n(LEASE_TERM, item.get(LEASE_TERM))?.unwrap_or(0);
    Ok(Some(LeaseState {
        job: job.clone(),
        beat: beat.max(0) as u64,
        term_secs: term.max(0) as u64,
    }))
}

impl CountsAdmin for DynamoCounts {
    async fn take_lease(
        &self,
        post: &PostId,
        job: &str,
        term_secs: u64,
        seen: Option<&LeaseState>,
    ) -> Result<bool, StoreError> {
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .update_expression("SET #lj = :job, #lb = :zero, #lt = :term")
            .expression_attribute_names("#lj", LEASE_JOB)
            .expression_attribute_names("#lb", LEASE_BEAT)
            .expression_attribute_names("#lt", LEASE_TERM)
            .expression_attribute_values(":job", job_value(job))
            .expression_attribute_values(":zero", n(0))
            .expression_attribute_values(":term", n(term_secs));
        req = match seen {
            None => req.condition_expression("attribute_not_exists(#lj)"),
            // Taken over only exactly as last seen: its holder did not renew it since.
            Some(s) => req
                .condition_expression("#lj = :held AND #lb = :beat")
                .expression_attribute_values(":held", job_value(&s.job))
                .expression_attribute_values(":beat", n(s.beat)),
        };
        applied(req.send().await)
    }

    async fn renew_lease(&self, post: &PostId, job: &str) -> Result<bool, StoreError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .update_expression("ADD #lb :one")
            .condition_expression("#lj = :job")
            .expression_attribute_names("#lj", LEASE_JOB)
            .expression_attribute_names("#lb", LEASE_BEAT)
            .expression_attribute_values(":job", job_value(job))
            .expression_attribute_values(":one", n(1))
            .send()
            .await;
        applied(res)
    }

    async fn release_lease(&self, post: &PostId, job: &str) -> Result<(), StoreError> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .update_expression("REMOVE #lj, #lb, #lt")
            .condition_expression("#lj = :job")
            .expression_attribute_names("#lj", LEASE_JOB)
            .expression_attribute_names("#lb", LEASE_BEAT)
            .expression_attribute_names("#lt", LEASE_TERM)
            .expression_attribute_values(":job", job_value(job))
            .send()
            .await;
        // Taken over after it was lost: nothing of ours to release.
        applied(res).map(|_| ())
    }

    async fn settle(
        &self,
        post: &PostId,
        bucket: u8,
        job: &str,
        diff: i64,
        kinds: &[(String, i64)],
    ) -> Result<bool, StoreError> {
        let (c, _, _) = bucket_attrs(bucket);
        let a = recount_attrs(bucket);
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            // Only the job whose end is noted, and only while it holds the post's lease.
            .condition_expression("#ej = :job AND #lj = :job")
            .expression_attribute_names("#ej", a.ended)
            .expression_attribute_names("#ec", a.ended_count)
            .expression_attribute_names("#en", a.ended_entries)
            .expression_attribute_names("#lj", LEASE_JOB)
            .expression_attribute_values(":job", job_value(job));
        let mut adds = Vec::new();
        let mut removes = vec!["#ej".to_owned(), "#ec".to_owned(), "#en".to_owned()];
        if diff != 0 {
            adds.push("#c :d".to_owned());
            req = req
                .expression_attribute_names("#c", c)
                .expression_attribute_values(":d", n(diff));
        }
        // Every noted kind's note is removed; the kinds that drifted are corrected.
        for (i, (kind, d)) in kinds.iter().enumerate() {
            removes.push(format!("#ek{i}"));
            req = req.expression_attribute_names(format!("#ek{i}"), ended_kind_attr(bucket, kind));
            if *d != 0 {
                adds.push(format!("#k{i} :k{i}"));
                req = req
                    .expression_attribute_names(format!("#k{i}"), kind_attr(bucket, kind))
                    .expression_attribute_values(format!(":k{i}"), n(*d));
            }
        }
        let add = if adds.is_empty() {
            String::new()
        } else {
            format!("ADD {} ", adds.join(", "))
        };
        req = req.update_expression(format!("{add}REMOVE {}", removes.join(", ")));
        applied(req.send().await)
    }

    async fn counted_posts(&self) -> Result<Vec<String>, StoreError> {
        let mut posts = Vec::new();
        let mut pages = self
            .client
            .scan()
            .table_name(&self.table)
            .projection_expression("#p")
            .expression_attribute_names("#p", PK)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify_read)?.items() {
                if let Some(p) = item.get(PK).and_then(|v| v.as_s().ok()) {
                    if !super::is_note_key(p) {
                        posts.push(p.clone());
                    }
                }
            }
        }
        Ok(posts)
    }

    async fn repair_notes(&self) -> Result<Vec<likes_core::RepairNote>, StoreError> {
        self.scan_notes().await
    }

    async fn clear_note(&self, note: &likes_core::RepairNote) -> Result<bool, StoreError> {
        self.delete_note(note).await
    }
}
