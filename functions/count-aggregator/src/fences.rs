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
//! bucket (`w<b> = job`, the mark advanced to the fence); for every like or unlike after it, it
//! first records the user's change in the window (a control item `~w#<job>#<user>` holding the
//! change's sequence number and event, next to the likes), then counts it as always; at `end`
//! it closes the window and notes the bucket's count at that point (`ej<b> = job`,
//! `ec<b> = c<b>`). Fences are never counted. Every step is conditional on the bucket's mark,
//! so a redelivered fence or window record is absorbed like any other. A window entry is
//! written before its change is counted, so every counted change has its entry; records at or
//! below the mark are dropped before any entry is written, so a redelivery — which can end
//! earlier than the delivery it repeats (a bisected batch) — never puts back an older change
//! over a user's later one.
//!
//! Why the job can then compute the exact count at `end`: a user with no change between the
//! fences (not in the window W) had one state all through the job's read, which happened after
//! `begin` was written and before `end` was: S has it right. A user in W ends the window in
//! their last change's state. So the count at `end` is |S \ W| + |{u ∈ W : last change a
//! like}|, and the job adds its difference from the noted count to the bucket, once
//! (conditional on `ej<b> = job`, which the correction removes). Changes after `end` go on
//! being counted as usual, so adding a difference later is exact.
//!
//! A begin fence replaces a window left open by a job that died; an end fence whose window is
//! not open only advances the mark.

use likes_core::control::Fence;
use likes_core::{
    ApplyOutcome, CountsLedger, FenceRecord, FenceWrite, PostBucket, PostCounts, WindowEntry,
};

use crate::group::{Change, PostGroup};
use crate::marks::{drop_applied, fail, note_negatives, write_of, PostResult, MAX_ROUNDS};

/// The window entries of a run of changes: each user's last change.
fn entries<'a>(job: &'a str, run: &[Change<'a>]) -> Vec<WindowEntry<'a>> {
    let mut out: Vec<WindowEntry<'a>> = Vec::with_capacity(run.len());
    for c in run {
        let entry = WindowEntry {
            job,
            user: c.user,
            seq: c.seq,
            liked: c.delta > 0,
        };
        match out.iter_mut().find(|e| e.user == c.user) {
            Some(e) => *e = entry,
            None => out.push(entry),
        }
    }
    out
}

/// The post's groups one bucket at a time, splitting each at its fences.
pub async fn apply<'a, C: CountsLedger>(
    counts: &C,
    group: &PostGroup<'a>,
    mut result: PostResult,
    mut pending: Vec<&[Change<'a>]>,
    mut item: PostCounts,
) -> PostResult {
    drop_applied(&mut result, group, &mut pending, &item);
    for i in 0..group.buckets.len() {
        let b = group.buckets[i].bucket;
        let row = PostBucket {
            post: group.post.clone(),
            bucket: b,
        };
        let mut misses = 0;
        while !pending[i].is_empty() {
            let window = item.buckets[usize::from(b)].window.clone();
            let rest = pending[i];
            let run_len = rest.iter().take_while(|c| c.fence.is_none()).count();
            let first = rest[0];
            let (outcome, taken) = match first.fence {
                Some(f) => {
                    let fence = match f {
                        Fence::Begin(job) => FenceWrite::Begin { job },
                        Fence::End(job) => FenceWrite::End {
                            job,
                            closes: window.as_deref() == Some(job),
                        },
                    };
                    let record = FenceRecord {
                        bucket: b,
                        fence,
                        seq: first.seq,
                        created: first.created,
                    };
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
                        Some(Fence::Begin(job)) => state.window = Some(job.to_owned()),
                        Some(Fence::End(job)) if window.as_deref() == Some(job) => {
                            state.window = None;
                            tracing::info!(post_id = %group.post, bucket = b, job, "recount window closed");
                        }
                        _ => {}
                    }
                    pending[i] = &rest[taken..];
                    misses = 0;
                }
                Ok(ApplyOutcome::AlreadyApplied) => {
                    misses += 1;
                    if misses > MAX_ROUNDS {
                        let e = likes_core::StoreError::Internal(
                            "a bucket's mark or window kept moving".into(),
                        );
                        return fail(result, group, &pending, e);
                    }
                    item = match counts.read_post(&group.post).await {
                        Ok(fresh) => fresh.unwrap_or_default(),
                        Err(e) => return fail(result, group, &pending, e),
                    };
                    drop_applied(&mut result, group, &mut pending, &item);
                }
                Err(e) => return fail(result, group, &pending, e),
            }
        }
    }
    result
}
