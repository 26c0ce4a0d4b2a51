//! One batch, start to end: read the pairs' states (a pair is a (user, post, kind)), decide
//! (invariants 4–6), publish (8), find the checkpoint and write what the accepted events
//! decided (2, 4, 6).

use futures::stream::{self, StreamExt};
use likes_aws::env::Published as Mode;
use likes_core::bucket::fnv1a64;
use likes_core::store::events::{
    CountsProgress, EventBus, MilestoneStore, PairState, SuppressionStore,
};
use likes_core::stream_event::StreamEvent;
use tokio::time::Instant;

use crate::checks::{self, PostRun};
use crate::detail;
use crate::publish::{publish, Fate, Limits, Planned};
use crate::records::{self, Parsed};
use crate::report::BatchReport;
use crate::suppression::{fold, Change, Decision, Step};
use crate::LikeEvents;

/// A pair's decisions: the state they were made from, and a step per record.
struct PairRun {
    seen: PairState,
    steps: Vec<Step>,
}

fn lane(key: &str, user: &str) -> u64 {
    fnv1a64(format!("{key}\u{0}{user}").as_bytes())
}

pub async fn run<S, M, C, B>(
    f: &LikeEvents<S, M, C, B>,
    event: &StreamEvent<'_>,
    deadline: Option<Instant>,
) -> BatchReport
where
    S: SuppressionStore,
    M: MilestoneStore,
    C: CountsProgress,
    B: EventBus,
{
    let parsed = records::parse(event);
    let mut report = BatchReport {
        records: parsed.records.len(),
        ignored: parsed.ignored,
        skipped: parsed.skipped,
        repeated: parsed.repeated,
        oldest_created_ms: parsed
            .records
            .iter()
            .map(|r| r.created_ms)
            .filter(|t| *t > 0)
            .min(),
        ..BatchReport::default()
    };
    let rules = f.settings.rules;
    // Invariant 9.
    let Some(first) = parsed.records.first() else {
        return report;
    };
    if rules.published == Mode::None {
        return report;
    }
    // Time left before the deadline, less a call's and the state writes' (never an instant
    // computed below the deadline: shortly after boot that would underflow the clock).
    let reserve = 2 * f.settings.budget;
    let left = || {
        deadline.map(|d| {
            d.saturating_duration_since(Instant::now())
                .saturating_sub(reserve)
        })
    };
    if left().is_some_and(|l| l.is_zero()) {
        report.checkpoint = Some(first.seq.raw().to_owned());
        return report;
    }
    let window = rules.window.as_secs() as i64;
    let pairs: Vec<_> = parsed.pairs.iter().map(|(p, _)| p.clone()).collect();
    let states = match f.suppression.read_pairs(&pairs).await {
        Ok(s) => s,
        Err(e) => {
            tracing::warn!(error = %e, "the pairs' states could not be read; the batch is retried");
            report.checkpoint = Some(first.seq.raw().to_owned());
            return report;
        }
    };
    let runs: Vec<PairRun> = parsed
        .pairs
        .iter()
        .map(|(pair, idxs)| {
            let seen = states.get(pair).cloned().unwrap_or_default();
            let changes: Vec<Change<'_>> = idxs
                .iter()
                .map(|&i| Change {
                    seq: parsed.records[i].seq,
                    insert: parsed.records[i].insert,
                    created_secs: parsed.records[i].created_secs(),
                })
                .collect();
            let steps = fold(&seen, &changes, window);
            PairRun { seen, steps }
        })
        .collect();
    let until = Instant::now() + left().map_or(rules.count_wait, |l| l.min(rules.count_wait));
    let checks = checks::run(f, &parsed, until, &mut report).await;
    let posts = checks.posts;
    // A held record and those after it are redelivered (`checks`): nothing of them now.
    let stop = checks.hold.unwrap_or(parsed.records.len());
    let planned = plan(&parsed, &runs, &posts, stop, rules.published, &mut report);

    let published = publish(
        &f.bus,
        &planned,
        Limits {
            lanes: rules.concurrency,
            deadline,
            reserve,
        },
    )
    .await;
    report.published = published.count(Fate::Accepted);
    report.failed_entries = published.count(Fate::Failed);
    report.unsent_entries = published.count(Fate::Unsent);
    report.retried_entries = published.retried;
    let mut checkpoint = match (published.lowest_unpublished(&planned), checks.hold) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    };

    // Invariant 4: each pair's state as of its records below the checkpoint.
    let writes = parsed
        .pairs
        .iter()
        .zip(&runs)
        .filter_map(|((pair, idxs), run)| {
            let done = idxs
                .iter()
                .take_while(|&&i| checkpoint.is_none_or(|c| i < c))
                .count();
            let state = &run.steps[..done].last()?.state;
            (state != &run.seen).then_some((pair, idxs[0], &run.seen, state))
        });
    let written: Vec<Option<usize>> = stream::iter(writes)
        .map(|(pair, first, seen, state)| async move {
            let expires = state.current.as_ref().map_or(0, |e| e.at) + 2 * window;
            match f.suppression.write_pair(pair, seen, state, expires).await {
                Ok(true) => None,
                Ok(false) => {
                    tracing::error!(post_id = %pair.post, user_id = %pair.user, kind = %pair.kind, "a pair's state changed under the batch; its records are redelivered");
                    Some(first)
                }
                Err(e) => {
                    tracing::warn!(post_id = %pair.post, kind = %pair.kind, error = %e, "a pair's state was not written; its records are redelivered");
                    Some(first)
                }
            }
        })
        .buffer_unordered(rules.concurrency)
        .collect()
        .await;
    for first in written.into_iter().flatten() {
        report.failed_writes += 1;
        checkpoint = Some(checkpoint.map_or(first, |c| c.min(first)));
    }
    // Invariant 6: a milestone is recorded once its events were accepted.
    let accepted = |by: usize| {
        planned
            .iter()
            .zip(&published.fates)
            .filter(|(p, _)| p.record == by && p.entry.detail_type == detail::MILESTONE)
            .all(|(_, fate)| *fate == Some(Fate::Accepted))
    };
    for post in posts.iter().filter(|p| accepted(p.by)) {
        let rec = &parsed.records[post.by];
        if let Err(e) = f
            .milestones
            .record_milestone(&rec.post, &post.announcement.state)
            .await
        {
            report.failed_writes += 1;
            tracing::warn!(post_id = %rec.post, error = %e, "a milestone was announced but not recorded; it may be announced again, under the same id");
        }
    }
    report.checkpoint = checkpoint.map(|c| parsed.records[c].seq.raw().to_owned());
    report
}

/// The entries to put, in batch order, for the records before `stop`: per record its change
/// (`all`), its notification or retraction, and the milestones announced for it.
fn plan(
    parsed: &Parsed<'_>,
    runs: &[PairRun],
    posts: &[PostRun],
    stop: usize,
    mode: Mode,
    report: &mut BatchReport,
) -> Vec<Planned> {
    let mut decisions: Vec<Option<&Step>> = vec![None; parsed.records.len()];
    for ((_, idxs), run) in parsed.pairs.iter().zip(runs) {
        for (&i, step) in idxs.iter().zip(&run.steps) {
            decisions[i] = Some(step);
        }
    }
    let mut out = Vec::new();
    for (i, (rec, step)) in parsed.records.iter().zip(decisions).enumerate().take(stop) {
        // One lane per (user, post): its kinds share it, so each kind's events keep their order.
        let lane = lane(rec.post_bucket, rec.user.as_str());
        let mut put = |entry| {
            out.push(Planned {
                record: i,
                lane,
                entry,
            })
        };
        if mode == Mode::All {
            put(detail::change(rec));
        }
        let Some(step) = step else { continue };
        report.marks_ahead += usize::from(step.mark_ahead);
        match &step.decision {
            Decision::Notify { until_secs } => {
                report.notifications += 1;
                put(detail::notification(rec, *until_secs));
            }
            Decision::Retract { notified } => {
                report.retractions += 1;
                put(detail::retraction(rec, notified));
            }
            Decision::Suppressed => report.suppressed += 1,
            Decision::Unknown => {
                report.unknown += 1;
                tracing::error!(post_id = %rec.post, user_id = %rec.user, kind = %rec.kind, sequence_number = rec.seq.raw(), "a redelivered record's notification decision cannot be known again; none published");
            }
            Decision::Nothing => {}
        }
        for post in posts.iter().filter(|p| p.by == i) {
            let lane = fnv1a64(rec.post.as_str().as_bytes());
            for m in &post.announcement.milestones {
                out.push(Planned {
                    record: i,
                    lane,
                    entry: detail::milestone(rec, *m, post.count),
                });
            }
        }
    }
    out
}
