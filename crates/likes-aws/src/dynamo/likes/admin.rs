//! The admin tool's side of the Likes table: exact counts, the users of a bucket, recount
//! fences and windows, and the backfill's scan.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};
use likes_core::control::{self, fence_key, is_control, KeyRange, Phase, LIKES_END};
use likes_core::reaction::{Held, Kind};
use likes_core::{HeldItem, LikesAdmin, PostBucket, StoreError, UserId, Window};

use super::windows::{CONTROL_TTL_SECS, LIKED};
use super::{item_key, DynamoLikes};
use crate::dynamo::calls::{self, query_all};
use crate::dynamo::classify::{build, classify, classify_read};
use crate::dynamo::s;
use crate::dynamo::schema::likes::{EVENT, EXPIRES_AT, LIKED_AT, PK, REACTED_AT, SK};

impl DynamoLikes {
    /// Segment `segment` of a parallel Scan of `total` segments of the table.
    fn segment_scan(
        &self,
        segment: u32,
        total: u32,
    ) -> aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder {
        self.client
            .scan()
            .table_name(&self.table)
            .segment(i32::try_from(segment).unwrap_or(i32::MAX))
            .total_segments(i32::try_from(total).unwrap_or(i32::MAX))
    }

    /// A consistent Query of the bucket's items whose sort key is in `range`.
    fn range_query(
        &self,
        bucket: &PostBucket,
        range: &KeyRange,
    ) -> aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pb = :pb AND #sk BETWEEN :from AND :to")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pb", s(bucket.to_string()))
            .expression_attribute_values(":from", s(&range.from))
            .expression_attribute_values(":to", s(&range.to))
            .consistent_read(true)
    }

    /// The sort keys (and, for window entries, the event) of the items in `range`; `BETWEEN`
    /// includes its upper end, which is never a wanted key.
    async fn read_range(
        &self,
        bucket: &PostBucket,
        range: &KeyRange,
    ) -> Result<Vec<(String, Option<String>)>, StoreError> {
        let query = self
            .range_query(bucket, range)
            .projection_expression("#sk, #e")
            .expression_attribute_names("#e", EVENT);
        let mut out = Vec::new();
        for item in query_all(query).await? {
            let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
            if let Some(sk) = get(SK).filter(|sk| range.contains(sk)) {
                out.push((sk, get(EVENT)));
            }
        }
        Ok(out)
    }

    /// The sort keys of a bucket's likes and reactions (every user id, and so every
    /// `{user}#{kind}`, sorts below `~`), consistently.
    async fn held_keys(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let query = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pb = :pb AND #sk < :end")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":pb", s(bucket.to_string()))
            .expression_attribute_values(":end", s(LIKES_END))
            .projection_expression("#sk")
            .consistent_read(true);
        Ok(query_all(query)
            .await?
            .into_iter()
            .filter_map(|item| item.get(SK).and_then(|v| v.as_s().ok()).cloned())
            .collect())
    }
}

/// A scanned item as a like or a reaction of ours; `None` for control items, foreign keys and
/// ids outside the grammar (no one's like or reaction).
fn held_item(item: &std::collections::HashMap<String, AttributeValue>) -> Option<HeldItem> {
    let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok());
    let sk = get(SK)?;
    let (user, kind, at) = match Held::of(sk) {
        Held::Like(user) => (user, Kind::like(), get(LIKED_AT)?),
        Held::Reaction(user, kind) => (user, Kind::parse(kind).ok()?, get(REACTED_AT)?),
        Held::Control | Held::Foreign => return None,
    };
    Some(HeldItem {
        bucket: PostBucket::parse(get(PK)?).ok()?,
        user: UserId::parse(user).ok()?,
        kind,
        at: at.clone(),
    })
}

impl LikesAdmin for DynamoLikes {
    async fn count_bucket(&self, bucket: &PostBucket) -> Result<i64, StoreError> {
        // Counted by sort key, as the aggregator counts: a like is a key without `#`. A Query
        // bills what it reads, so reading the keys costs what `Select::Count` would.
        let keys = self.held_keys(bucket).await?;
        Ok(keys
            .iter()
            .filter(|k| matches!(Held::of(k), Held::Like(_)))
            .count() as i64)
    }

    async fn count_kinds(&self, bucket: &PostBucket) -> Result<BTreeMap<String, i64>, StoreError> {
        let mut counts = BTreeMap::new();
        for key in self.held_keys(bucket).await? {
            // As the aggregator counts (`Held`): a foreign key is no like and no reaction.
            if let Some(kind) = Held::of(&key).kind() {
                *counts.entry(kind.to_owned()).or_insert(0) += 1;
            }
        }
        Ok(counts)
    }

    async fn bucket_users(&self, bucket: &PostBucket) -> Result<HashSet<String>, StoreError> {
        Ok(self.held_keys(bucket).await?.into_iter().collect())
    }

    async fn put_fence(
        &self,
        bucket: &PostBucket,
        job: &str,
        phase: Phase,
    ) -> Result<(), StoreError> {
        // A fence expires by itself: a job that dies leaves nothing for ever.
        let expires = chrono::Utc::now().timestamp() + CONTROL_TTL_SECS;
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item_key(bucket, fence_key(job, phase))))
            .item(EXPIRES_AT, AttributeValue::N(expires.to_string()))
            .send()
            .await
            .map_err(classify)?;
        Ok(())
    }

    async fn window(&self, bucket: &PostBucket, job: &str) -> Result<Window, StoreError> {
        let entries = self.read_range(bucket, &control::job_window(job)).await?;
        let read = entries
            .iter()
            .map(|(sk, event)| (sk.as_str(), event.as_deref() == Some(LIKED)));
        Ok(Window::of(job, read))
    }

    async fn recount_items(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let mut keys = self.read_range(bucket, &control::all_fences()).await?;
        keys.extend(self.read_range(bucket, &control::all_windows()).await?);
        Ok(keys.into_iter().map(|(sk, _)| sk).collect())
    }

    async fn delete_controls(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> Result<(), StoreError> {
        if let Some(like) = sort_keys.iter().find(|k| !is_control(k)) {
            return Err(StoreError::Internal(format!(
                "{like:?} is a like, not a control item"
            )));
        }
        let mut requests = Vec::with_capacity(sort_keys.len());
        for key in sort_keys {
            let delete = DeleteRequest::builder()
                .set_key(Some(item_key(bucket, key)))
                .build()
                .map_err(build)?;
            requests.push(WriteRequest::builder().delete_request(delete).build());
        }
        calls::write_all(&self.client, &self.table, requests, 8).await
    }

    async fn scan_several(
        &self,
        segment: u32,
        total: u32,
        held: &AtomicU64,
    ) -> Result<Vec<Vec<HeldItem>>, StoreError> {
        let mut several = Vec::new();
        // A Scan returns a partition's items together, in sort-key order, and every id byte
        // sorts above `#`: a user's like `{user}` and reactions `{user}#{kind}` come one after
        // another. So a pair is complete when the next item is another's.
        let mut pair: Vec<HeldItem> = Vec::new();
        let mut pages = self
            .segment_scan(segment, total)
            // Consistent: a kind taken back a moment ago must not be kept as the newest while
            // the one it would keep is deleted.
            .consistent_read(true)
            .projection_expression("#pb, #sk, #la, #ra")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .expression_attribute_names("#la", LIKED_AT)
            .expression_attribute_names("#ra", REACTED_AT)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify_read)?.items() {
                let Some(found) = held_item(item) else {
                    continue;
                };
                held.fetch_add(1, Ordering::Relaxed);
                let same = pair
                    .first()
                    .is_some_and(|p| p.bucket == found.bucket && p.user == found.user);
                if !same && !pair.is_empty() {
                    let done = std::mem::take(&mut pair);
                    if done.len() > 1 {
                        several.push(done);
                    }
                }
                pair.push(found);
            }
        }
        if pair.len() > 1 {
            several.push(pair);
        }
        Ok(several)
    }

    async fn scan_posts(
        &self,
        segment: u32,
        total: u32,
        likes: &AtomicU64,
    ) -> Result<BTreeSet<String>, StoreError> {
        let mut posts = BTreeSet::new();
        let mut pages = self
            .segment_scan(segment, total)
            .projection_expression("#pb, #sk")
            .expression_attribute_names("#pb", PK)
            .expression_attribute_names("#sk", SK)
            .into_paginator()
            .send();
        while let Some(page) = pages.next().await {
            for item in page.map_err(classify_read)?.items() {
                let get = |k: &str| item.get(k).and_then(|v| v.as_s().ok());
                let Some(held) = get(SK).map(|sk| Held::of(sk)) else {
                    continue;
                };
                if held == Held::Control {
                    continue;
                }
                // The post as stored, checked by the caller: one written outside the id grammar
                // (by something other than this API) is reported, not dropped here.
                if let Some((post, _)) = get(PK).and_then(|pb| pb.rsplit_once('#')) {
                    posts.insert(post.to_owned());
                    if matches!(held, Held::Like(_)) {
                        likes.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }
        Ok(posts)
    }
}
