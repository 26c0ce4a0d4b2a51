//! Applying one post's groups to its Counts item: invariants 2 to 5 and 8.

use chrono::Utc;
use likes_core::time::format_ts;
use likes_core::{ApplyOutcome, BucketWrite, CountsStore, PostCounts, Seq, StoreError};

use crate::batch::{Change, PostGroup};
use crate::recount;

/// A bucket's mark can fail the condition again only if a writer outside this shard's single
/// in-order consumer touches it; after this many rounds the post is reported as failed instead.
pub(crate) const MAX_ROUNDS: usize = 4;

/// Tolerance between the stream's creation times (whole seconds) when checking records dropped
/// as already applied against the record at the mark.
const SKEW_TOLERANCE_SECS: i64 = 2;

/// What happened to one post's records.
#[derive(Debug, Default)]
pub struct PostResult {
    pub duplicates: usize,
    pub anomalies: usize,
    /// The lowest sequence number not applied, as received, when the post failed.
    pub failed_at: Option<String>,
}

impl PostResult {
    pub(crate) fn unapplied(mut self, group: &PostGroup<'_>, pending: &[&[Change<'_>]]) -> Self {
        let _ = group;
        let lowest = pending
            .iter()
            .filter_map(|p| p.first().map(|c| c.seq))
            .min();
        self.failed_at = lowest.map(|s| s.raw().to_owned());
        self
    }

    /// A group left unstarted (the invocation's deadline): all of it is unapplied.
    pub fn not_started(group: &PostGroup<'_>) -> Self {
        let pending: Vec<&[Change<'_>]> =
            group.buckets.iter().map(|b| b.changes.as_slice()).collect();
        PostResult::default().unapplied(group, &pending)
    }
}

pub(crate) fn write_of<'a>(
    bucket: u8,
    pending: &[Change<'a>],
    window: Option<&'a str>,
) -> Option<BucketWrite<'a>> {
    let (first, last) = (pending.first()?, pending.last()?);
    Some(BucketWrite {
        bucket,
        delta: pending.iter().map(|c| c.delta).sum(),
        first: first.seq,
        last: last.seq,
        last_created: last.created,
        window,
    })
}

pub async fn apply_post<C: CountsStore>(counts: &C, group: &PostGroup<'_>) -> PostResult {
    let mut result = PostResult::default();
    let mut pending: Vec<&[Change<'_>]> =
        group.buckets.iter().map(|b| b.changes.as_slice()).collect();
    if group.has_fence() {
        // Invariant 9: a recount is under way; its fences and window take the careful path.
        return match counts.read_post(&group.post).await {
            Ok(item) => {
                recount::apply(counts, group, result, pending, item.unwrap_or_default()).await
            }
            Err(e) => fail(result, group, &pending, e),
        };
    }
    for _ in 0..MAX_ROUNDS {
        // Invariants 2 and 4: one write for all of the post's buckets in the batch, and a
        // bucket whose delta is 0 is still written, so that its mark advances.
        let writes: Vec<BucketWrite<'_>> = group
            .buckets
            .iter()
            .zip(&pending)
            .filter_map(|(b, p)| write_of(b.bucket, p, None))
            .collect();
        if writes.is_empty() {
            return result;
        }
        let now = format_ts(Utc::now());
        match counts.apply(&group.post, &writes, &now).await {
            Ok(ApplyOutcome::Applied { counts }) => {
                note_negatives(&mut result, group, &counts);
                return result;
            }
            Ok(ApplyOutcome::AlreadyApplied) => {
                // Invariant 3: some of these were applied by an earlier delivery — or a
                // recount's window is open on a bucket. Read the item and keep, per bucket,
                // only what lies above its mark.
                let item = match counts.read_post(&group.post).await {
                    Ok(item) => item.unwrap_or_default(),
                    Err(e) => return fail(result, group, &pending, e),
                };
                drop_applied(&mut result, group, &mut pending, &item);
                let windowed = group.buckets.iter().zip(&pending).any(|(b, p)| {
                    !p.is_empty() && item.buckets[usize::from(b.bucket)].window.is_some()
                });
                if windowed {
                    return recount::apply(counts, group, result, pending, item).await;
                }
            }
            Err(e) => return fail(result, group, &pending, e),
        }
    }
    if pending.iter().all(|p| p.is_empty()) {
        return result;
    }
    let err = StoreError::Internal("a high-water mark kept moving".into());
    fail(result, group, &pending, err)
}

pub(crate) fn note_negatives(result: &mut PostResult, group: &PostGroup<'_>, counts: &[(u8, i64)]) {
    for (bucket, like_count) in counts.iter().copied().filter(|(_, c)| *c < 0) {
        // Invariant 8.
        result.anomalies += 1;
        tracing::error!(
            post_id = %group.post,
            bucket,
            like_count,
            "count went negative: the Counts item drifted from the Likes table; recount this post"
        );
    }
}

/// Invariant 3: per bucket, the records at or below its mark are dropped as already applied.
pub(crate) fn drop_applied<'a>(
    result: &mut PostResult,
    group: &PostGroup<'a>,
    pending: &mut [&[Change<'a>]],
    item: &PostCounts,
) {
    for (b, p) in group.buckets.iter().zip(pending.iter_mut()) {
        let state = &item.buckets[usize::from(b.bucket)];
        let Some(hwm) = state.hwm.as_ref() else {
            continue;
        };
        let applied = p.partition_point(|c| c.seq <= hwm.as_seq());
        let (dropped, rest) = p.split_at(applied);
        result.duplicates += dropped.len();
        result.anomalies += check_dropped(group, b.bucket, dropped, hwm.as_seq(), item);
        *p = rest;
    }
}

/// Invariant 8: a record dropped as "already applied" was created at or before the record at
/// the bucket's mark, which sits later in the same shard. One created after it means the
/// sequence-number assumption was breached and a like was silently lost: say so loudly. The
/// mark's own creation time is compared, not when the item was last written, so that the check
/// holds however far the aggregator lags.
fn check_dropped(
    group: &PostGroup<'_>,
    bucket: u8,
    dropped: &[Change<'_>],
    hwm: Seq<'_>,
    item: &PostCounts,
) -> usize {
    let Some(marked) = item.buckets[usize::from(bucket)].hwm_created else {
        return 0;
    };
    let late = dropped
        .iter()
        .filter(|c| c.created > marked + SKEW_TOLERANCE_SECS)
        .count();
    if late > 0 {
        tracing::error!(
            post_id = %group.post,
            bucket,
            hwm = hwm.raw(),
            late,
            "records dropped as applied were created after the record at the bucket's mark; recount this post"
        );
    }
    late
}

/// Invariant 5: report the lowest unapplied record; Lambda redelivers from it.
pub(crate) fn fail(
    result: PostResult,
    group: &PostGroup<'_>,
    pending: &[&[Change<'_>]],
    err: StoreError,
) -> PostResult {
    let result = result.unapplied(group, pending);
    tracing::warn!(
        post_id = %group.post,
        checkpoint = result.failed_at.as_deref().unwrap_or(""),
        error = %err,
        "post not applied; Lambda will redeliver from its first unapplied record"
    );
    result
}
