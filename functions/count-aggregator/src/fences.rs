//! The aggregator's part of an exact recount while likes keep flowing (invariant 9).
//!
//! A recount job (`likes-admin recount`) makes one bucket exact without pausing its writes:
//!
//! 1. It writes a fence item `~fence#<job>#begin` into the bucket's partition of the Likes
//!    table. Its INSERT record lands in the bucket's stream shard, in commit order with the
//!    bucket's likes.
//! 2. It reads the bucket with a consistent Query: the set S of users it saw liking.
//! 3. It writes `~fence#<job>#end`, and waits for the aggregator to apply it.
//!
//! The aggregator, in stream order (this module): at `begin` it opens the job's window on the
//! bucket (`w<b> = job`, the mark advanced to the fence) — if the job holds the post's recount
//! lease (the lease lives on the post's Counts item, and the write is conditional on it), so a
//! late fence of a job that lost its lease only advances the mark; for every like or unlike
//! after it, it first records the change in the window (a control item per change,
//! `likes_core::control::window_key`, holding its event, next to the likes), then counts it as
//! always, adding the run's length to the window's entry count `wn<b>` in the same conditional
//! update; at `end` it closes the window and notes the bucket's count and the window's entry
//! count at that point (`ej<b> = job`, `ec<b> = c<b>`, `en<b> = wn<b>`). Fences are never
//! counted. Every step is conditional on the bucket's mark, so a redelivered fence or window
//! record is absorbed like any other: a redelivery rewrites the same entries (one key per
//! change), and adds to `wn<b>` only with the count it is applied with, exactly once.
//!
//! Why the job can then compute the exact count at `end`: a user with no change between the
//! fences (not in the window W) had one state all through the job's read, which happened after
//! `begin` was written and before `end` was: S has it right. A user in W ends the window in
//! their last change's state. So the count at `end` is |S \ W| + |{u ∈ W : last change a
//! like}|, and the job adds its difference from the noted count to the bucket, once
//! (conditional on `ej<b> = job` and on holding the lease; the correction removes `ej<b>`).
//! Changes after `end` go on being counted as usual, so adding a difference later is exact. The
//! job first checks that it read as many entries as were noted: fewer means something deleted
//! some (an erase of the post, a hand), and it refuses rather than correct from a partial W.
//!
//! A begin fence replaces a window left open by a job that died; an end fence whose window is
//! not open only advances the mark; a window open longer than [`MAX_WINDOW_SECS`] by the
//! stream's own clock is closed by the next change of its bucket. A fence at or below the mark
//! that was created after the record at the mark proves the mark ahead of the stream
//! (invariant 10): it sets the mark back to itself, conditional on the mark it found.

use likes_core::control::Fence;
use likes_core::{
    ApplyOutcome, CountsLedger, FenceRecord, FenceWrite, PostBucket, PostCounts, WindowEntry,
};

use crate::group::{Change, PostGroup};
use crate::marks::{drop_applied, fail, note_negatives, write_of, PostResult, MAX_ROUNDS};

/// A window older than this (from its begin fence's creation to a record's) belongs to a job
/// that died: no live job keeps one open this long (its lease and fence wait are minutes), so the
/// next change of the bucket closes it instead of recording into it for ever.
pub const MAX_WINDOW_SECS: i64 = 3600;

/// The window entries of a run of changes: one per change (of any kind: the item's sort key
/// names it), so that the job can count them.
fn entries<'a>(job: &'a str, run: &[Change<'a>]) -> Vec<WindowEntry<'a>> {
    run.iter()
        .map(|c| WindowEntry {
            job,
            user: c.sort_key,
            seq: c.seq,
            liked: c.delta > 0,
        })
        .collect()
}

/// The post's groups one bucket at a time, splitting each at its fences.
pub async fn apply<'a, C: CountsLedger>(
    counts: &C,
    group: &PostGroup<'a>,
    mut result: PostResult,
    mut pending: Vec<&[Change<'a>]>,
    mut item: PostCounts,
) -> PostResult {
    let mut resets = drop_applied(&mut result, group, &mut pending, &item);
    for i in 0..group.buckets.len() {
        let b = group.buckets[i].bucket;
        let row = PostBucket {
            post: group.post.clone(),
            bucket: b,
        };
        let mut misses = 0;
        while !pending[i].is_empty() {
            let state = &item.buckets[usize::from(b)];
            let rest = pending[i];
            let first = rest[0];
            // Invariant 9: a window left open by a job that died is closed, not recorded into.
            if let (Some(job), Some(opened)) = (&state.window, state.window_opened) {
                if first.created - opened > MAX_WINDOW_SECS {
                    tracing::warn!(post_id = %group.post, bucket = b, job, "closing a recount window its job abandoned");
                    if let Err(e) = counts.close_window(&group.post, b, job).await {
                        return fail(result, group, &pending, e);
                    }
                    item.buckets[usize::from(b)].window = None;
                    continue;
                }
            }
            let window = state.window.clone();
            let lease = item.lease.as_ref().map(|l| l.job.as_str());
            let run_len = rest.iter().take_while(|c| c.fence.is_none()).count();
            let kinds: Vec<String>;
            let (outcome, taken) = match first.fence {
                Some(f) => {
                    let fence = match f {
                        Fence::Begin(job) => FenceWrite::Begin {
                            job,
                            holds_lease: lease == Some(job),
                        },
                        Fence::End(job) => {
                            // Every kind the bucket may count at this fence: those on the item,
                            // and those among the batch's changes before it.
                            let mut known: Vec<String> =
                                item.buckets[usize::from(b)].kinds.keys().cloned().collect();
                            for c in group.buckets[i].changes.iter() {
                                if let Some(k) = c.kind.filter(|k| !known.iter().any(|x| x == k)) {
                                    known.push(k.to_owned());
                                }
                            }
                            kinds = known;
                            FenceWrite::End {
                                job,
                                closes: window.as_deref() == Some(job),
                                kinds: &kinds,
                            }
                        }
                    };
                    let ahead = item.buckets[usize::from(b)].hwm.clone();
                    let record = FenceRecord {
                        bucket: b,
                        fence,
                        seq: first.seq,
                        created: first.created,
                        replaces_mark: ahead.as_ref().filter(|_| resets[i]),
                    };
                    if resets[i] {
                        tracing::error!(post_id = %group.post, bucket = b, "a recount fence proves the bucket's mark ahead of the stream: setting the mark back to the fence");
                    }
                    (counts.fence(&group.post, &record).await, 1)
                }
                None => {
                    let run = &rest[..run_len];
                    if let Some(job) = &window {
                        if let Err(e) = counts.record_window(&row, &entries(job, run)).await {
                            return fail(result, group, &pending, e);
                        }
                    }
                    let write: Vec<_> = write_of(b, run, window.as_deref()).into_iter().collect();
                    (counts.apply(&group.post, &write).await, run_len)
                }
            };
            match outcome {
                Ok(ApplyOutcome::Applied { counts: c }) => {
                    note_negatives(&mut result, group, &c);
                    let last = rest[taken - 1];
                    let state = &mut item.buckets[usize::from(b)];
                    state.hwm = Some(last.seq.to_owned());
                    state.hwm_created = Some(last.created);
                    match last.fence {
                        Some(Fence::Begin(job)) if lease == Some(job) => {
                            state.window = Some(job.to_owned());
                            state.window_opened = Some(last.created);
                        }
                        Some(Fence::End(job)) if window.as_deref() == Some(job) => {
                            state.window = None;
                            tracing::info!(post_id = %group.post, bucket = b, job, "recount window closed");
                        }
                        _ => {}
                    }
                    pending[i] = &rest[taken..];
                    resets[i] = false;
                    misses = 0;
                }
                Ok(ApplyOutcome::AlreadyApplied) => {
                    misses += 1;
                    if misses > MAX_ROUNDS {
                        let e = likes_core::StoreError::Internal(
                            "a bucket's mark, window or lease kept moving".into(),
                        );
                        return fail(result, group, &pending, e);
                    }
                    item = match counts.read_post(&group.post).await {
                        Ok(fresh) => fresh.unwrap_or_default(),
                        Err(e) => return fail(result, group, &pending, e),
                    };
                    resets = drop_applied(&mut result, group, &mut pending, &item);
                }
                Err(e) => return fail(result, group, &pending, e),
            }
        }
    }
    result
}
