//! `recount --noted`: every post the aggregator noted as left unapplied by a failing batch
//! (count-aggregator invariant 11), recounted exactly, its note cleared only after the recount
//! settled and only if the post was not noted again meanwhile (a batch of it still failing: the
//! note stays, and the run says so). A given-up batch's posts are thus found where the drift
//! starts, a post whose first likes were lost (no Counts item at all) included.

use std::sync::atomic::{AtomicU64, Ordering};

use futures::stream::{self, StreamExt};
use likes_core::{CountsAdmin, LikesAdmin, PostId};
use serde_json::json;

use crate::cli::Cli;
use crate::commands::DynamoStores;
use crate::recount::recount_post;
use crate::report::{progress, Report};
use crate::{AdminError, Stores};

/// Posts recounted at once (each recount waits on the stream for its fences).
pub const CONCURRENCY: usize = 4;

/// What a run did.
#[derive(Debug, Default)]
pub struct NotedRun {
    /// Notes found.
    pub notes: usize,
    /// Posts recounted and their notes cleared, with how many buckets were corrected.
    pub repaired: Vec<(PostId, usize)>,
    /// Posts recounted but noted again meanwhile: a batch of theirs is still failing.
    pub noted_again: Vec<PostId>,
    /// Posts that could not be recounted, and why (their notes stay).
    pub failed: Vec<(PostId, String)>,
}

impl NotedRun {
    /// Whether every noted post is now exact and its note gone.
    pub fn complete(&self) -> bool {
        self.noted_again.is_empty() && self.failed.is_empty()
    }
}

enum Outcome {
    Repaired(usize),
    NotedAgain,
    Failed(String),
}

pub async fn recount_noted<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    progress: &(dyn Fn(u64) + Sync),
) -> Result<NotedRun, AdminError> {
    let notes = s.counts.repair_notes().await?;
    let done = AtomicU64::new(0);
    let done = &done;
    let outcomes: Vec<(PostId, Outcome)> = stream::iter(notes.iter())
        .map(|note| async move {
            let outcome = match recount_post(s, &note.post, &[], true).await {
                Ok(buckets) => match s.counts.clear_note(note).await {
                    Ok(true) => Outcome::Repaired(buckets.iter().filter(|b| b.corrected).count()),
                    Ok(false) => Outcome::NotedAgain,
                    Err(e) => Outcome::Failed(format!("recounted, but its note stays: {e}")),
                },
                Err(e) => Outcome::Failed(e.to_string()),
            };
            progress(done.fetch_add(1, Ordering::Relaxed) + 1);
            (note.post.clone(), outcome)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    let mut run = NotedRun {
        notes: notes.len(),
        ..NotedRun::default()
    };
    for (post, outcome) in outcomes {
        match outcome {
            Outcome::Repaired(n) => run.repaired.push((post, n)),
            Outcome::NotedAgain => run.noted_again.push(post),
            Outcome::Failed(why) => run.failed.push((post, why)),
        }
    }
    run.repaired.sort();
    run.noted_again.sort();
    run.failed.sort();
    Ok(run)
}

/// The command's report: exit 0 when every note was resolved, 3 naming each post that was not.
pub async fn report(cli: &Cli, t: &DynamoStores) -> Result<Report, AdminError> {
    let bar = progress(cli.json, "noted posts recounted", None);
    let tick = |n: u64| bar.set_position(n);
    let run = recount_noted(t, &tick).await?;
    bar.finish_and_clear();
    let corrected: usize = run.repaired.iter().map(|(_, n)| n).sum();
    let mut lines = vec![format!(
        "recount --noted: {} noted posts, {} recounted exact and their notes cleared ({} buckets corrected)",
        run.notes,
        run.repaired.len(),
        corrected
    )];
    for post in &run.noted_again {
        lines.push(format!("post {post}: recounted, but noted again meanwhile: a batch of it is still failing (the aggregator's FailedPosts and iterator age); run again once it is given up or succeeds"));
    }
    for (post, why) in &run.failed {
        lines.push(format!("post {post}: not recounted: {why}"));
    }
    let doc = json!({
        "notes": run.notes,
        "repaired": run.repaired.iter().map(|(p, n)| json!({"post_id": p, "corrected_buckets": n})).collect::<Vec<_>>(),
        "corrected_buckets": corrected,
        "noted_again": run.noted_again,
        "failed": run.failed.iter().map(|(p, why)| json!({"post_id": p, "error": why}))
            .chain(run.noted_again.iter().map(|p| json!({"post_id": p, "error": "noted again meanwhile"})))
            .collect::<Vec<_>>(),
    });
    Ok(Report {
        clean: true,
        failed: run.failed.len() + run.noted_again.len(),
        human: lines.join("\n"),
        doc,
    })
}
