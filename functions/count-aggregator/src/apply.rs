//! Applying one post's groups to its Counts item: invariants 2 to 4; a post with a recount
//! under way takes [`crate::fences`]' careful path instead.

use likes_core::{ApplyOutcome, BucketWrite, CountsLedger, StoreError};

use crate::fences;
use crate::group::{Change, PostGroup};
use crate::marks::{drop_applied, fail, note_negatives, write_of, PostResult, MAX_ROUNDS};

pub async fn apply_post<C: CountsLedger>(counts: &C, group: &PostGroup<'_>) -> PostResult {
    let mut result = PostResult::default();
    let mut pending: Vec<&[Change<'_>]> =
        group.buckets.iter().map(|b| b.changes.as_slice()).collect();
    if group.has_fence() {
        // Invariant 9: a recount is under way; its fences and window take the careful path.
        return match counts.read_post(&group.post).await {
            Ok(item) => {
                fences::apply(counts, group, result, pending, item.unwrap_or_default()).await
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
        match counts.apply(&group.post, &writes).await {
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
                    return fences::apply(counts, group, result, pending, item).await;
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
