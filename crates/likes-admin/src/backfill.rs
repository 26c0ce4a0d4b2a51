//! Backfill: every count exact, for a Likes table whose items the stream never saw (likes
//! loaded before the stream existed, a restored backup). First the plan: parallel Scan segments
//! find the posts with likes, the Counts table names every post with a count (one whose likes
//! are all gone is brought to 0), and a state file names the posts done by an earlier run.
//! Then each post is recounted exactly (fences, so likes may keep flowing); a post that cannot
//! be recounted is named and the others go on.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use futures::stream::{self, StreamExt};
use likes_core::{CountsAdmin, LikesAdmin, PostId};

use serde_json::{json, Value};

use crate::cli::Cli;
use crate::commands::DynamoStores;
use crate::recount::recount_post;
use crate::report::{progress, Report};
use crate::{AdminError, Stores};

/// What a backfill will do.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Plan {
    /// Likes the scan saw.
    pub items: u64,
    /// Posts found (with likes, or with a count).
    pub posts: usize,
    /// Posts an earlier run recorded as done.
    pub skipped_done: usize,
    /// Posts whose id is outside the id grammar (written by something other than this API):
    /// left alone.
    pub invalid_ids: Vec<String>,
    /// The posts to recount.
    pub todo: Vec<PostId>,
    pub scan_items_per_sec: f64,
}

/// What a backfill did.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Done {
    pub corrected_buckets: usize,
    /// Posts that could not be recounted, and why (run again: the state file skips the rest).
    pub failed: Vec<(String, String)>,
    pub seconds: f64,
}

fn state_error(file: &Path, e: &std::io::Error) -> AdminError {
    AdminError::State(format!("the state file {}: {e}", file.display()))
}

pub async fn plan<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    segments: u32,
    state: Option<&Path>,
) -> Result<Plan, AdminError> {
    let started = Instant::now();
    let items = AtomicU64::new(0);
    let scans = (0..segments).map(|seg| s.likes.scan_posts(seg, segments, &items));
    let mut posts = BTreeSet::new();
    for found in futures::future::join_all(scans).await {
        posts.extend(found?);
    }
    // A post whose likes are all gone has no item to scan, but its count may still say
    // otherwise.
    posts.extend(s.counts.counted_posts().await?);
    let scan_secs = started.elapsed().as_secs_f64();
    let done: BTreeSet<String> = match state {
        Some(f) => match std::fs::read_to_string(f) {
            Ok(text) => text.lines().map(str::to_owned).collect(),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => BTreeSet::new(),
            Err(e) => return Err(state_error(f, &e)),
        },
        None => BTreeSet::new(),
    };
    let mut plan = Plan {
        posts: posts.len(),
        skipped_done: posts.iter().filter(|p| done.contains(*p)).count(),
        ..Plan::default()
    };
    for p in posts.iter().filter(|p| !done.contains(*p)) {
        match PostId::parse(p) {
            Ok(id) => plan.todo.push(id),
            Err(_) => plan.invalid_ids.push(p.clone()),
        }
    }
    plan.items = items.load(Ordering::Relaxed);
    plan.scan_items_per_sec = plan.items as f64 / scan_secs.max(1e-9);
    Ok(plan)
}

/// Recounts the plan's posts, `concurrency` at a time; `progress` hears (done, total).
pub async fn run<L: LikesAdmin, C: CountsAdmin>(
    s: &Stores<L, C>,
    plan: &Plan,
    state: Option<PathBuf>,
    concurrency: usize,
    progress: &(dyn Fn(u64, u64) + Sync),
) -> Result<Done, AdminError> {
    let started = Instant::now();
    let total = plan.todo.len() as u64;
    let finished = AtomicU64::new(0);
    let corrected = AtomicU64::new(0);
    let (state, finished, corrected) = (&state, &finished, &corrected);
    // Each post's outcome: `Err` of a post is named in the report and the others go on; only
    // a state file that cannot be written stops the run (its resume would not be what it says).
    let results: Vec<Result<Option<(String, String)>, AdminError>> = stream::iter(plan.todo.iter())
        .map(|post| async move {
            let r = match recount_post(s, post, &[], true).await {
                Ok(r) => r,
                Err(e) => return Ok(Some((post.to_string(), e.to_string()))),
            };
            corrected.fetch_add(
                r.iter().filter(|b| b.corrected).count() as u64,
                Ordering::Relaxed,
            );
            if let Some(f) = state {
                use std::io::Write;
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(f)
                    .and_then(|mut file| writeln!(file, "{post}"))
                    .map_err(|e| state_error(f, &e))?;
            }
            progress(finished.fetch_add(1, Ordering::Relaxed) + 1, total);
            Ok(None)
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    let mut failed = Vec::new();
    for r in results {
        failed.extend(r?);
    }
    Ok(Done {
        corrected_buckets: corrected.load(Ordering::Relaxed) as usize,
        failed,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// `backfill`: plans, then (unless a dry run) recounts every post the plan holds; reports what
/// was recounted and what could not be.
pub async fn command(
    cli: &Cli,
    t: &DynamoStores,
    segments: u32,
    state: &Option<PathBuf>,
    concurrency: usize,
    dry_run: bool,
) -> Result<Report, AdminError> {
    let scan = progress(cli.json, "scanning the tables for posts", None);
    let plan = plan(t, segments, state.as_deref()).await?;
    scan.finish_and_clear();
    let mut doc = json!({"items": plan.items, "posts": plan.posts,
        "skipped_done": plan.skipped_done, "invalid_ids": plan.invalid_ids,
        "to_recount": plan.todo.len(), "scan_items_per_sec": plan.scan_items_per_sec});
    let mut human = format!(
        "backfill: {} likes in {} posts scanned at {:.0} items/s ({} done before, {} with invalid ids left alone); {} to recount",
        plan.items, plan.posts, plan.scan_items_per_sec, plan.skipped_done, plan.invalid_ids.len(), plan.todo.len()
    );
    if dry_run {
        doc["dry_run"] = json!(true);
        doc["posts_to_recount"] = json!(plan.todo);
        return Ok(Report::done(human + " (dry run: nothing changed)", doc));
    }
    let bar = progress(cli.json, "posts recounted", Some(plan.todo.len() as u64));
    let tick = |done: u64, _: u64| bar.set_position(done);
    let done = run(t, &plan, state.clone(), concurrency, &tick).await?;
    bar.finish_and_clear();
    for (post, why) in &done.failed {
        human = format!("not recounted: post {post}: {why}\n{human}");
    }
    human += &format!(
        "; {} buckets corrected, {} posts not recounted; {:.1} s",
        done.corrected_buckets,
        done.failed.len(),
        done.seconds
    );
    let failed: Vec<Value> = done
        .failed
        .iter()
        .map(|(post, why)| json!({"post_id": post, "error": why}))
        .collect();
    doc["corrected_buckets"] = json!(done.corrected_buckets);
    doc["seconds"] = json!(done.seconds);
    doc["failed"] = json!(failed);
    Ok(Report {
        clean: true,
        failed: failed.len(),
        human,
        doc,
    })
}
