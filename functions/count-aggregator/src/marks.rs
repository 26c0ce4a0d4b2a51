//! What both ways of applying a post's records share: the write of a run of changes, the marks
//! that drop what was applied already (invariant 3), the anomalies (invariant 8) and the report
//! of a failure (invariant 5).

use likes_core::{BucketWrite, PostCounts, Seq, StoreError};

use crate::group::{Change, PostGroup};

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
    /// Buckets whose mark was found ahead of the stream (invariant 10).
    pub marks_ahead: usize,
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
    let mut delta = 0;
    let mut kinds: Vec<(&'a str, i64)> = Vec::new();
    for c in pending {
        match c.kind {
            None => delta += c.delta,
            Some(kind) => match kinds.iter_mut().find(|(k, _)| *k == kind) {
                Some((_, d)) => *d += c.delta,
                None => kinds.push((kind, c.delta)),
            },
        }
    }
    Some(BucketWrite {
        bucket,
        delta,
        kinds,
        first: first.seq,
        last: last.seq,
        last_created: last.created,
        window,
        records: u32::try_from(pending.len()).unwrap_or(u32::MAX),
    })
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

/// Invariant 3: per bucket, the records at or below its mark are dropped as already applied —
/// except, invariant 10, from a recount's fence that proves the mark ahead of the stream:
/// the records before it are dropped, and the fence is kept, to set the mark back. Returns, per
/// bucket, whether its first pending record is such a fence.
pub(crate) fn drop_applied<'a>(
    result: &mut PostResult,
    group: &PostGroup<'a>,
    pending: &mut [&[Change<'a>]],
    item: &PostCounts,
) -> Vec<bool> {
    let mut resets = vec![false; pending.len()];
    for ((b, p), reset) in group
        .buckets
        .iter()
        .zip(pending.iter_mut())
        .zip(&mut resets)
    {
        let state = &item.buckets[usize::from(b.bucket)];
        let Some(hwm) = state.hwm.as_ref() else {
            continue;
        };
        let mut applied = p.partition_point(|c| c.seq <= hwm.as_seq());
        if let Some(at) = p[..applied]
            .iter()
            .position(|c| c.fence.is_some() && is_late(c, state.hwm_created))
        {
            applied = at;
            *reset = true;
        }
        let (dropped, rest) = p.split_at(applied);
        result.duplicates += dropped.len();
        let late = check_dropped(group, b.bucket, dropped, hwm.as_seq(), item);
        result.anomalies += late;
        if late > 0 || *reset {
            result.marks_ahead += 1;
        }
        *p = rest;
    }
    resets
}

/// Whether a record at or below a bucket's mark was created after the record at the mark: the
/// mark is then ahead of the stream that delivered it.
fn is_late(change: &Change<'_>, marked: Option<i64>) -> bool {
    marked.is_some_and(|m| change.created > m + SKEW_TOLERANCE_SECS)
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
    let marked = item.buckets[usize::from(bucket)].hwm_created;
    let late = dropped.iter().filter(|c| is_late(c, marked)).count();
    if late > 0 {
        tracing::error!(
            post_id = %group.post,
            bucket,
            hwm = hwm.raw(),
            late,
            "the bucket's mark is ahead of the stream: records dropped as applied were created after the record at the mark (a restored table, a shard numbered below its parent); run `likes-admin recount --post` for this post"
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
