//! `single-mode`: a deployment switched from `multi` to `single` reaction mode keeps what its
//! users held — some hold several kinds of one post, which `single` mode never makes. This
//! leaves each (user, post) its newest kind: the others are deleted as their user would unreact
//! them (counts follow through the stream), each only if it was not made again since the scan
//! (a conditional delete on its own time, as an erase's), so a reaction made meanwhile stays.
//! Run it after the switch: a `single`-mode reaction replaces every kind its user held, so no
//! new (user, post) with several kinds appears while it runs. Idempotent: a second run finds
//! nothing.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::stream::{self, StreamExt};
use likes_core::erase::EraseStore;
use likes_core::{HeldItem, LikesAdmin};

use crate::AdminError;

/// Deletes at once.
const CONCURRENCY: usize = 16;

/// What a run would do.
#[derive(Debug, Default)]
pub struct Plan {
    /// Likes and reactions the scan saw.
    pub held: usize,
    /// (user, post) pairs holding more than one kind.
    pub pairs: usize,
    /// What goes: every kind of those pairs but the newest.
    pub extra: Vec<HeldItem>,
}

/// Scans the table (`segments` parallel segments) for pairs holding several kinds.
pub async fn plan<L: LikesAdmin>(likes: &L, segments: u32) -> Result<Plan, AdminError> {
    let held = AtomicU64::new(0);
    let scans = (0..segments).map(|seg| likes.scan_several(seg, segments, &held));
    let mut plan = Plan::default();
    for found in futures::future::join_all(scans).await {
        for mut kinds in found? {
            plan.pairs += 1;
            // The newest stays (the kind's name breaks a tie, so that a rerun decides alike).
            kinds.sort_by(|a, b| (&a.at, a.kind.as_str()).cmp(&(&b.at, b.kind.as_str())));
            kinds.pop();
            plan.extra.extend(kinds);
        }
    }
    plan.held = usize::try_from(held.load(Ordering::Relaxed)).unwrap_or(usize::MAX);
    Ok(plan)
}

/// Deletes the plan's extra kinds; how many went (one made again since the scan stays).
pub async fn run<L: EraseStore>(
    likes: &L,
    plan: &Plan,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<usize, AdminError> {
    let done = AtomicU64::new(0);
    let done = &done;
    let results: Vec<Result<bool, likes_core::StoreError>> = stream::iter(&plan.extra)
        .map(|item| async move {
            let deleted = match item.kind.is_like() {
                true => {
                    likes
                        .delete_like_made_by(&item.bucket, &item.user, &item.at)
                        .await
                }
                false => {
                    likes
                        .delete_reaction_made_by(&item.bucket, &item.user, &item.kind, &item.at)
                        .await
                }
            };
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            deleted
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut deleted = 0;
    for r in results {
        deleted += usize::from(r?);
    }
    Ok(deleted)
}
