//! An exhaustive model check of the repair protocol (count-aggregator's invariants 3 and 9,
//! the recount's lease, fences, window and settle): every interleaving of the production code's
//! store calls over small scopes, explored by `stateright`.
//!
//! Why this shape: the protocol's code is async functions over store traits, and its bugs live
//! between two of their calls. Rewritten as a state machine it would check a copy. Here the
//! actors run the real aggregator and the real steps of a recount (`actors`), one DynamoDB call
//! per step, and a state is the tables, the stream in order and what each actor has been told
//! (`likes_harness::stepped`), so stateright merges the interleavings that reach the same state
//! and counts the distinct ones. (`loom` and `shuttle` explore schedules of real code too, but
//! without merging states: the same scope is millions of schedules.) A state is reached by
//! replaying its schedule: a future cannot be copied.
//!
//! What is the model's own, not production's (`actors`): the event source mapping (batches of
//! two from a checkpoint, a halved retry after a function error, the same batch again after
//! success); the jobs' lease (taken free, or taken over as `lease::acquire` does once a holder
//! fell silent, no heartbeat), their wait for the end fences (no deadline: a job whose fences
//! the aggregator passed without noting them times out), and their buckets fenced and
//! finished one after another where `recount_post` runs them all at once. Every record has the
//! same creation time: invariant 10 (a mark ahead) and the abandoned window's close are the
//! business of `repair_model.rs`.
//!
//! The invariants, checked in every state:
//! - only the lease's holder settles a correction, and no fence is applied at or below its
//!   bucket's mark (monitors on the store calls, `Stepped`);
//! - a recount that reports a bucket reports its exact count at its end fence (the truth from
//!   the stream up to the fence); none finds its window disturbed (nobody deletes entries
//!   here); no job fails while it holds the lease;
//! - the aggregator reports no anomaly and no mark ahead; no actor panics; the actors never
//!   all wait with some not ended;
//! - once every actor has ended, each bucket's count equals its likes — the drifted one only
//!   if a recount finished it, else still exactly its drift above — and a job that finished
//!   left no control item.

mod actors;
mod world;

use std::hash::{Hash, Hasher};
use std::sync::atomic::Ordering;
use std::time::Instant;

use likes_harness::stepped::Actors;
use stateright::{Checker, Model, Property};
use world::{JobEnd, Scope, Tables, JOBS};

/// A step: an actor let past its gate, or the option it picks at a choice.
type Step = (usize, Option<usize>);

#[derive(Clone, Debug)]
pub struct State {
    path: Vec<Step>,
    fingerprint: u64,
    next: Vec<Step>,
    /// The first invariant broken, if any.
    broken: Option<String>,
    /// Whether a recount corrected the drifted bucket (the scope reaches a settle).
    corrected: bool,
    /// Whether a change was recorded in a recount's window (the scope reaches the window).
    windowed: bool,
    /// Whether the first job was refused after the second took its lease over.
    resumed_late: bool,
}

impl Hash for State {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.fingerprint.hash(h);
    }
}

impl PartialEq for State {
    fn eq(&self, other: &Self) -> bool {
        self.fingerprint == other.fingerprint
    }
}

fn replay(scope: &Scope, path: Vec<Step>) -> State {
    let (t, mut a) = world::world(scope);
    // An actor's panic (or a schedule its world refuses) is a broken state, with its schedule.
    let stepped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        for &(actor, option) in &path {
            a.step(actor, option);
        }
    }));
    if let Err(e) = stepped {
        let what = e
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default();
        let mut h = std::collections::hash_map::DefaultHasher::new();
        path.hash(&mut h);
        return State {
            fingerprint: h.finish(),
            broken: Some(format!("an actor panicked: {what}")),
            path,
            next: Vec::new(),
            windowed: false,
            corrected: false,
            resumed_late: false,
        };
    }
    let running = a.running();
    let next: Vec<Step> = running
        .iter()
        .filter(|&&r| a.turns.ready(r))
        .flat_map(|&r| match a.turns.choosing(r) {
            Some(n) => (0..n).map(|k| (r, Some(k))).collect::<Vec<_>>(),
            None => vec![(r, None)],
        })
        .collect();
    let ended = world::lock_ended(&t);
    let corrected = ended
        .iter()
        .any(|(_, b, e, _)| *b == t.buckets[0] && matches!(e, JobEnd::Recounted(r) if r.corrected));
    let resumed_late = ended.iter().any(|(j, _, e, _)| {
        j == JOBS[0].1 && matches!(e, JobEnd::Failed(f) if f.contains("LeaseLost"))
    });
    let windowed = t.window_entries() > 0;
    let stuck = (next.is_empty() && !running.is_empty())
        .then(|| format!("no actor can move, yet {running:?} have not ended"));
    State {
        windowed,
        fingerprint: world::fingerprint(&t, &a),
        broken: stuck.or_else(|| broken(&t, &a, &ended)),
        path,
        next,
        corrected,
        resumed_late,
    }
}

/// The first invariant the state breaks.
fn broken(t: &Tables, a: &Actors, ended: &[world::Ending]) -> Option<String> {
    if let Some(f) = a.turns.findings().first() {
        return Some(f.clone());
    }
    if t.anomalies.load(Ordering::SeqCst) > 0 {
        return Some("the aggregator reported an anomaly or a mark ahead".into());
    }
    for (job, b, e, holds) in ended {
        match e {
            JobEnd::Recounted(r) => {
                let Some(at) = t.end_fence_at(job, *b) else {
                    return Some(format!("{job} recounted bucket {b} without an end fence"));
                };
                let truth = t.truth_before(*b, at);
                if r.exact != truth {
                    return Some(format!(
                        "{job} found {} in bucket {b}, which held {truth} at its end fence",
                        r.exact
                    ));
                }
            }
            JobEnd::Failed(f) if f.contains("WindowDisturbed") => {
                return Some(format!("{job} found its window disturbed: {f}"));
            }
            JobEnd::Failed(f) if f != "busy" && *holds => {
                return Some(format!("{job} failed holding its lease: {f}"));
            }
            JobEnd::Failed(_) => {}
        }
    }
    if !a.running().is_empty() {
        return None;
    }
    let item = t.counts.read_post_now(&t.post).unwrap_or_default();
    let log_len = t.log_len();
    for (i, b) in t.buckets.into_iter().enumerate() {
        let truth = t.truth_before(b, log_len);
        let recounted = ended
            .iter()
            .any(|(_, x, e, _)| *x == b && matches!(e, JobEnd::Recounted(_)));
        let drift = if i == 0 && !recounted {
            world::DRIFT
        } else {
            0
        };
        let count = item.buckets[usize::from(b)].count;
        if count != truth + drift {
            return Some(format!(
                "bucket {b} counts {count} once quiet; its likes: {truth}, drift left: {drift}"
            ));
        }
        for (job, _, _, _) in ended
            .iter()
            .filter(|(_, x, e, _)| *x == b && matches!(e, JobEnd::Recounted(_)))
        {
            let left = t.controls_of(job, b);
            if !left.is_empty() {
                return Some(format!("{job} finished bucket {b} and left {left:?}"));
            }
        }
    }
    None
}

struct RepairModel(Scope);

impl Model for RepairModel {
    type State = State;
    type Action = Step;

    fn init_states(&self) -> Vec<State> {
        vec![replay(&self.0, Vec::new())]
    }

    fn actions(&self, state: &State, actions: &mut Vec<Step>) {
        actions.extend(state.next.iter().copied());
    }

    fn next_state(&self, state: &State, step: Step) -> Option<State> {
        let mut path = state.path.clone();
        path.push(step);
        Some(replay(&self.0, path))
    }

    fn properties(&self) -> Vec<Property<Self>> {
        // The `sometimes` properties show the scope reaches what it is for.
        let mut properties = vec![
            Property::always("the repair protocol's invariants hold", |_, s: &State| {
                s.broken.is_none()
            }),
            Property::sometimes("a recount corrects the drift", |_, s: &State| s.corrected),
            Property::sometimes("a change lands in a window", |_, s: &State| s.windowed),
        ];
        if self.0.jobs.len() > 1 {
            properties.push(Property::sometimes(
                "a job resumes after its lease was taken over",
                |_, s: &State| s.resumed_late,
            ));
        }
        properties
    }
}

/// Checks every interleaving of `scope`; the distinct states and the time.
fn check(name: &str, scope: Scope) {
    let started = Instant::now();
    let checker = RepairModel(scope).checker().threads(2).spawn_bfs().join();
    println!(
        "repair protocol, {name}: {} states visited, {} distinct, depth {}, in {:.1?}",
        checker.state_count(),
        checker.unique_state_count(),
        checker.max_depth(),
        started.elapsed()
    );
    if let Some(path) = checker.discovery("the repair protocol's invariants hold") {
        let last = path.last_state();
        panic!(
            "{}\nschedule (actor, choice): {:?}",
            last.broken.as_deref().unwrap_or("?"),
            last.path
        );
    }
    checker.assert_properties();
}

/// One job over both buckets while likes and unlikes land in each, with one delivery fault
/// anywhere: a function error after its first write, or a batch delivered twice.
#[test]
fn every_interleaving_of_a_recount_under_delivery_faults_keeps_counts_exact() {
    check(
        "one job, two buckets, a fault",
        Scope {
            changes: &[(0, true), (2, false)],
            jobs: &[&[0, 1]],
            faults: 1,
        },
    );
}

/// Two jobs on the drifted bucket: the second takes the lease over at any moment (the first
/// suspended past its term), and the first resumes after it, at any step.
#[test]
fn every_interleaving_of_a_lapsed_lease_keeps_counts_exact() {
    check(
        "two jobs, a lease taken over",
        Scope {
            changes: &[(0, true)],
            jobs: &[&[0], &[0]],
            faults: 0,
        },
    );
}
