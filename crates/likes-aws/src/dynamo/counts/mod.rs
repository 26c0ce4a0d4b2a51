//! The Counts table: every DynamoDB expression that touches it lives in this module.
//!
//! **One item per post**, key `post_id` (S). For each bucket `b` (0..15) that has seen a
//! record: `c<b>` (N, the bucket's partial count), `h<b>` (S, the highest stream sequence
//! number applied to the bucket, as a 23-character [`SeqKey`]), `t<b>` (N, when that record was
//! created, epoch seconds); and `updated_at` (S, RFC 3339). A post's count is the sum of its
//! `c<b>`. With 16 buckets the item stays under 1 KB, one write unit per update, and a post's
//! count is one GetItem, a feed's counts one BatchGetItem. While a recount runs, a bucket also
//! has its window's attributes (`w<b>`, `wn<b>`, `wt<b>`) and then its noted end (`ej<b>`,
//! `ec<b>`, `en<b>`) (`fences`); the post's recount lease is `lj`, `lb`, `lt` (`admin`).

use std::collections::{BTreeMap, HashMap};

mod admin;
mod fences;
mod notes;

use notes::is_note_key;

use aws_sdk_dynamodb::operation::update_item::builders::UpdateItemFluentBuilder;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use aws_sdk_dynamodb::Client;
use likes_core::seq::SeqKey;
use likes_core::store::counts::PartialCounts;
use likes_core::time::now_ts;
use likes_core::{
    ApplyOutcome, BucketCount, BucketWrite, CountsLedger, CountsRead, Ended, FenceRecord,
    PostBucket, PostCounts, PostId, StoreError, WindowEntry, BUCKETS,
};

use super::classify::{classify, classify_read};
use super::schema::counts::{PK, UPDATED_AT};
use super::{failed_condition, DynamoLikes};

/// The attribute names of bucket `b`: count, mark, the mark's creation time.
pub fn bucket_attrs(b: u8) -> (String, String, String) {
    (format!("c{b}"), format!("h{b}"), format!("t{b}"))
}

/// The attribute of bucket `b`'s partial count of a reaction `kind` other than the like. The
/// kind grammar has no `#`, so the name reads back one way ([`kind_attr_of`]).
pub fn kind_attr(b: u8, kind: &str) -> String {
    format!("k{b}#{kind}")
}

/// The attribute of bucket `b`'s count of `kind` as a recount's end fence noted it.
pub fn ended_kind_attr(b: u8, kind: &str) -> String {
    format!("ek{b}#{kind}")
}

/// The bucket and kind of a kind count's attribute name (`k<b>#<K>`), or of a noted one
/// (`ek<b>#<K>`) with `prefix` "ek".
fn kind_attr_of<'a>(name: &'a str, prefix: &str) -> Option<(u8, &'a str)> {
    let (b, kind) = name.strip_prefix(prefix)?.split_once('#')?;
    let b: u8 = b.parse().ok()?;
    (b < BUCKETS && likes_core::reaction::is_kind(kind)).then_some((b, kind))
}

/// A recount's attributes of bucket `b`.
pub struct RecountAttrs {
    /// The open window's job, its entry count, and when its begin fence was created.
    pub window: String,
    pub entries: String,
    pub opened: String,
    /// The job whose end fence was applied, the bucket's count then, and the window's entries.
    pub ended: String,
    pub ended_count: String,
    pub ended_entries: String,
}

pub fn recount_attrs(b: u8) -> RecountAttrs {
    RecountAttrs {
        window: format!("w{b}"),
        entries: format!("wn{b}"),
        opened: format!("wt{b}"),
        ended: format!("ej{b}"),
        ended_count: format!("ec{b}"),
        ended_entries: format!("en{b}"),
    }
}

#[derive(Clone, Debug)]
pub struct DynamoCounts {
    client: Client,
    table: String,
    /// The Likes store, where the aggregator records recount windows (see `record_window`).
    windows: Option<DynamoLikes>,
}

impl DynamoCounts {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
            windows: None,
        }
    }

    /// The aggregator's store: also records recount windows next to `likes`' items.
    pub fn with_windows(mut self, likes: DynamoLikes) -> Self {
        self.windows = Some(likes);
        self
    }

    /// The post's item, read consistently (the aggregator's and the admin tool's reads) or
    /// not (the API's).
    async fn get_post(
        &self,
        post: &PostId,
        consistent: bool,
    ) -> Result<Option<PostCounts>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .consistent_read(consistent)
            .send()
            .await
            .map_err(classify_read)?;
        out.item.as_ref().map(post_counts_of).transpose()
    }

    pub fn table(&self) -> &str {
        &self.table
    }
}

// The API's batch reads of counts, whole or partial under throttling.
mod read;

/// The key of a post's Counts item.
fn post_key(post: &PostId) -> HashMap<String, AttributeValue> {
    HashMap::from([(PK.to_owned(), AttributeValue::S(post.as_str().to_owned()))])
}

fn parse_n(name: &str, v: Option<&AttributeValue>) -> Result<Option<i64>, StoreError> {
    match v {
        None => Ok(None),
        Some(AttributeValue::N(n)) => n
            .parse()
            .map(Some)
            .map_err(|_| StoreError::Internal(format!("{name} {n:?} is not an integer"))),
        Some(other) => Err(StoreError::Internal(format!(
            "{name} has the wrong type: {other:?}"
        ))),
    }
}

fn post_counts_of(item: &HashMap<String, AttributeValue>) -> Result<PostCounts, StoreError> {
    let mut out = PostCounts::default();
    for b in 0..BUCKETS {
        let (c, h, t) = bucket_attrs(b);
        let hwm = match item.get(&h) {
            None => None,
            Some(AttributeValue::S(key)) => Some(
                SeqKey::parse(key)
                    .map_err(|e| StoreError::Internal(format!("{h}: {e}")))?
                    .to_seq_no(),
            ),
            Some(other) => return Err(StoreError::Internal(format!("{h}: {other:?}"))),
        };
        let r = recount_attrs(b);
        let s = |k: &str| item.get(k).and_then(|v| v.as_s().ok()).cloned();
        let n = |k: &str| parse_n(k, item.get(k));
        let ended = match (s(&r.ended), n(&r.ended_count)?) {
            (Some(job), Some(count)) => Some(Ended {
                job,
                count,
                entries: n(&r.ended_entries)?.unwrap_or(0).max(0) as u64,
                kinds: BTreeMap::new(),
            }),
            _ => None,
        };
        out.buckets[usize::from(b)] = BucketCount {
            count: n(&c)?.unwrap_or(0),
            hwm,
            hwm_created: n(&t)?,
            window: s(&r.window),
            window_opened: n(&r.opened)?,
            window_entries: n(&r.entries)?.unwrap_or(0).max(0) as u64,
            ended,
            kinds: Default::default(),
        };
    }
    for (name, value) in item {
        if let Some((b, kind)) = kind_attr_of(name, "k") {
            let n = parse_n(name, Some(value))?.unwrap_or(0);
            out.buckets[usize::from(b)].kinds.insert(kind.to_owned(), n);
        }
        if let Some((b, kind)) = kind_attr_of(name, "ek") {
            let n = parse_n(name, Some(value))?.unwrap_or(0);
            if let Some(ended) = out.buckets[usize::from(b)].ended.as_mut() {
                ended.kinds.insert(kind.to_owned(), n);
            }
        }
    }
    out.updated_at = item.get(UPDATED_AT).and_then(|v| v.as_s().ok()).cloned();
    out.lease = admin::lease_of(item)?;
    Ok(out)
}

/// `ADD c<b> :d<b> SET h<b> = :l<b>, t<b> = :t<b>, updated_at = :now IF (attribute_not_exists(h<b>)
/// OR h<b> < :f<b>) AND …` over the written buckets only: a batch of one shard never touches
/// another shard's buckets, so concurrent updates of one post's item cannot undo each other.
fn update_expression(
    mut req: UpdateItemFluentBuilder,
    writes: &[BucketWrite<'_>],
    now: &str,
) -> UpdateItemFluentBuilder {
    let mut adds = Vec::with_capacity(writes.len());
    let mut sets = Vec::with_capacity(2 * writes.len() + 1);
    let mut conds = Vec::with_capacity(writes.len());
    for w in writes {
        let b = w.bucket;
        let (c, h, t) = bucket_attrs(b);
        adds.push(format!("#{c} :d{b}"));
        for (i, (kind, d)) in w.kinds.iter().enumerate() {
            adds.push(format!("#k{b}_{i} :k{b}_{i}"));
            req = req
                .expression_attribute_names(format!("#k{b}_{i}"), kind_attr(b, kind))
                .expression_attribute_values(
                    format!(":k{b}_{i}"),
                    AttributeValue::N(d.to_string()),
                );
        }
        sets.push(format!("#{h} = :l{b}"));
        sets.push(format!("#{t} = :t{b}"));
        let RecountAttrs {
            window: win,
            entries,
            ..
        } = recount_attrs(b);
        match w.window {
            None => conds.push(format!(
                "(attribute_not_exists(#{h}) OR #{h} < :f{b}) AND attribute_not_exists(#{win})"
            )),
            Some(job) => {
                conds.push(format!(
                    "(attribute_not_exists(#{h}) OR #{h} < :f{b}) AND #{win} = :w{b}"
                ));
                // The window's entries are counted with the count, exactly once.
                adds.push(format!("#{entries} :n{b}"));
                req = req
                    .expression_attribute_values(
                        format!(":w{b}"),
                        AttributeValue::S(job.to_owned()),
                    )
                    .expression_attribute_names(format!("#{entries}"), entries)
                    .expression_attribute_values(
                        format!(":n{b}"),
                        AttributeValue::N(w.records.to_string()),
                    );
            }
        }
        req = req.expression_attribute_names(format!("#{win}"), win);
        req = req
            .expression_attribute_names(format!("#{c}"), c)
            .expression_attribute_names(format!("#{h}"), h)
            .expression_attribute_names(format!("#{t}"), t)
            .expression_attribute_values(format!(":d{b}"), AttributeValue::N(w.delta.to_string()))
            .expression_attribute_values(
                format!(":l{b}"),
                AttributeValue::S(w.last.key().as_str().to_owned()),
            )
            .expression_attribute_values(
                format!(":f{b}"),
                AttributeValue::S(w.first.key().as_str().to_owned()),
            )
            .expression_attribute_values(
                format!(":t{b}"),
                AttributeValue::N(w.last_created.to_string()),
            );
    }
    sets.push("#u = :now".to_owned());
    req.update_expression(format!("ADD {} SET {}", adds.join(", "), sets.join(", ")))
        .condition_expression(conds.join(" AND "))
        .expression_attribute_names("#u", UPDATED_AT)
        .expression_attribute_values(":now", AttributeValue::S(now.to_owned()))
}

impl CountsLedger for DynamoCounts {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
    ) -> Result<ApplyOutcome, StoreError> {
        if writes.is_empty() {
            return Ok(ApplyOutcome::Applied { counts: Vec::new() });
        }
        let req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(post_key(post)))
            .return_values(ReturnValue::UpdatedNew);
        match update_expression(req, writes, &now_ts()).send().await {
            Ok(out) => {
                let attrs = out.attributes.unwrap_or_default();
                let mut counts = Vec::with_capacity(writes.len());
                for w in writes {
                    let (c, _, _) = bucket_attrs(w.bucket);
                    counts.push((w.bucket, parse_n(&c, attrs.get(&c))?.unwrap_or(0)));
                }
                Ok(ApplyOutcome::Applied { counts })
            }
            Err(e) if failed_condition(&e) => Ok(ApplyOutcome::AlreadyApplied),
            Err(e) => Err(classify(e)),
        }
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        self.get_post(post, true).await
    }

    async fn fence(
        &self,
        post: &PostId,
        record: &FenceRecord<'_>,
    ) -> Result<ApplyOutcome, StoreError> {
        self.write_fence(post, record).await
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        match &self.windows {
            Some(likes) => likes.record_window(bucket, entries).await,
            None => Err(StoreError::Internal(
                "this Counts store was not given the Likes table to record recount windows in"
                    .into(),
            )),
        }
    }

    async fn close_window(&self, post: &PostId, bucket: u8, job: &str) -> Result<bool, StoreError> {
        self.write_close_window(post, bucket, job).await
    }

    async fn note_unapplied(&self, post: &PostId, from: &str) -> Result<(), StoreError> {
        self.put_note(post, from).await
    }
}

impl CountsRead for DynamoCounts {
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        Ok(self.get_post(post, false).await?.map_or(0, |c| c.total()))
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        let mut counts = HashMap::with_capacity(posts.len());
        for (post, item) in self.items_of(posts).await? {
            counts.insert(post, item.total());
        }
        Ok(counts)
    }

    async fn kind_counts(&self, post: &PostId) -> Result<BTreeMap<String, i64>, StoreError> {
        Ok(self
            .get_post(post, false)
            .await?
            .map(|c| c.kind_totals())
            .unwrap_or_default())
    }

    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError> {
        let mut counts = HashMap::with_capacity(posts.len());
        for (post, item) in self.items_of(posts).await? {
            counts.insert(post, item.kind_totals());
        }
        Ok(counts)
    }

    async fn post_counts_partial(
        &self,
        posts: &[PostId],
    ) -> Result<PartialCounts<i64>, StoreError> {
        self.counts_partial(posts, PostCounts::total).await
    }

    async fn kind_counts_partial(
        &self,
        posts: &[PostId],
    ) -> Result<PartialCounts<BTreeMap<String, i64>>, StoreError> {
        self.counts_partial(posts, PostCounts::kind_totals).await
    }
}
