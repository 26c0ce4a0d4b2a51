//! Runs several actors' production code one store call at a time, in an order the caller picks:
//! the executor of the repair protocol's model check (`tests/integration/repair_check/`).
//!
//! Each actor is an async block over the real code (the aggregator's `process`, the recount's
//! `fence_bucket` and `finish_bucket`, the stores' conditional updates in memory). Its stores
//! are wrapped in [`Stepped`], which stops the actor before every call until the scheduler
//! grants it a turn: one call to DynamoDB is one atomic step, as it is on AWS, and any actor
//! may move between two of another's. The scheduler polls the futures itself with a no-op
//! waker: nothing runs unless it is stepped, so a run is a pure function of its schedule.
//!
//! A future cannot be copied, so a state is reached again by replaying its schedule from a new
//! world. What an actor does next is a function of the answers it was given (its code is
//! deterministic), so every answer is folded into the actor's trace: equal tables and equal
//! traces are the same state, which is what lets the checker merge interleavings.

mod stores;

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

pub use stores::Stepped;

/// What an actor waits for, read from the tables it shares.
pub type Condition = Arc<dyn Fn() -> bool + Send + Sync>;

#[derive(Default)]
struct Turns {
    /// The actor allowed past its next gate.
    granted: Option<usize>,
    /// The option picked for an actor waiting at a choice.
    picked: Option<(usize, usize)>,
    /// Per actor: how many options its pending choice offers.
    choosing: BTreeMap<usize, usize>,
    /// Per actor: a hash of every answer and choice it was given, in order.
    traces: BTreeMap<usize, u64>,
    /// The actors, and those that have ended.
    actors: usize,
    ended: BTreeSet<usize>,
    /// Per actor waiting for a condition: the condition (see [`Gate::until`]).
    conditions: BTreeMap<usize, Condition>,
    /// Per actor: the waker of the future waiting at its gate. Futures inside an actor that
    /// poll only what was woken (`buffer_unordered`'s) must be woken to pass.
    wakers: BTreeMap<usize, Waker>,
    /// What the stores' monitors saw break (see [`Stepped`]'s `settle` and `fence`).
    findings: Vec<String>,
}

impl Debug for Turns {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Turns")
            .field("granted", &self.granted)
            .field("picked", &self.picked)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// The turns of one world's actors.
#[derive(Debug, Clone, Default)]
pub struct Scheduler(Arc<Mutex<Turns>>);

/// One actor's handle on the scheduler: its gates.
#[derive(Debug, Clone)]
pub struct Gate {
    turns: Scheduler,
    actor: usize,
}

fn mix(old: u64, answer: &dyn Debug) -> u64 {
    let mut h = std::collections::hash_map::DefaultHasher::new();
    old.hash(&mut h);
    format!("{answer:?}").hash(&mut h);
    h.finish()
}

impl Scheduler {
    fn lock(&self) -> std::sync::MutexGuard<'_, Turns> {
        // A poisoned lock means an actor panicked: the check has failed already.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn gate(&self, actor: usize) -> Gate {
        Gate {
            turns: self.clone(),
            actor,
        }
    }

    /// The actor's trace so far.
    pub fn trace(&self, actor: usize) -> u64 {
        self.lock().traces.get(&actor).copied().unwrap_or(0)
    }

    /// The actors still running.
    pub fn running(&self) -> Vec<usize> {
        let t = self.lock();
        (0..t.actors).filter(|a| !t.ended.contains(a)).collect()
    }

    /// What the monitors saw break, in order.
    pub fn findings(&self) -> Vec<String> {
        self.lock().findings.clone()
    }

    /// Whether the actor can take a step: it waits for no condition, or its condition holds.
    /// (A step that would only find its condition false changes nothing: it is not offered.)
    pub fn ready(&self, actor: usize) -> bool {
        let condition = self.lock().conditions.get(&actor).cloned();
        condition.is_none_or(|c| c())
    }

    /// How many options the actor's pending choice offers, if it waits at one.
    pub fn choosing(&self, actor: usize) -> Option<usize> {
        self.lock().choosing.get(&actor).copied()
    }

    fn grant(&self, actor: usize, option: Option<usize>) {
        let waker = {
            let mut t = self.lock();
            match option {
                Some(k) => t.picked = Some((actor, k)),
                None => t.granted = Some(actor),
            }
            t.wakers.remove(&actor)
        };
        if let Some(w) = waker {
            w.wake();
        }
    }

    /// Whether the last grant was used (an actor at a gate passed it).
    fn used(&self) -> bool {
        let t = self.lock();
        t.granted.is_none() && t.picked.is_none()
    }
}

impl Gate {
    /// Waits for this actor's turn.
    pub fn turn(&self) -> impl Future<Output = ()> + Send + '_ {
        std::future::poll_fn(move |cx| {
            let mut t = self.turns.lock();
            if t.granted == Some(self.actor) {
                t.granted = None;
                // A step moves the actor on even before it is told anything: its place in its
                // code is part of its state.
                let old = t.traces.get(&self.actor).copied().unwrap_or(0);
                t.traces.insert(self.actor, mix(old, &"step"));
                Poll::Ready(())
            } else {
                t.wakers.insert(self.actor, cx.waker().clone());
                Poll::Pending
            }
        })
    }

    /// Waits for this actor's turn once `condition` holds: polling a table until it changes,
    /// without a step for each look.
    pub async fn until(&self, condition: impl Fn() -> bool + Send + Sync + 'static) {
        self.turns
            .lock()
            .conditions
            .insert(self.actor, Arc::new(condition));
        self.turn().await;
        self.turns.lock().conditions.remove(&self.actor);
    }

    /// Waits for the scheduler to pick one of `options`: a branch the checker explores whole.
    pub fn choose(&self, options: usize) -> impl Future<Output = usize> + Send + '_ {
        std::future::poll_fn(move |cx| {
            let mut t = self.turns.lock();
            match t.picked {
                Some((a, k)) if a == self.actor => {
                    t.picked = None;
                    t.choosing.remove(&self.actor);
                    let old = t.traces.get(&self.actor).copied().unwrap_or(0);
                    t.traces.insert(self.actor, mix(old, &("chose", k)));
                    Poll::Ready(k)
                }
                _ => {
                    t.choosing.insert(self.actor, options);
                    t.wakers.insert(self.actor, cx.waker().clone());
                    Poll::Pending
                }
            }
        })
    }

    /// Replaces this actor's trace with `state`: at a point of its code where `state` is all it
    /// carries forward (what it was told before no longer matters), so that interleavings that
    /// differ only in what it was told then merge.
    pub fn restart(&self, state: &dyn Debug) {
        self.turns.lock().traces.insert(self.actor, mix(0, state));
    }

    /// A broken rule a monitor saw.
    pub fn found(&self, what: String) {
        self.turns.lock().findings.push(what);
    }

    /// Folds an answer into this actor's trace.
    pub fn record(&self, answer: &dyn Debug) {
        let mut t = self.turns.lock();
        let old = t.traces.get(&self.actor).copied().unwrap_or(0);
        t.traces.insert(self.actor, mix(old, answer));
    }
}

/// An actor: its code as a future (polled on the thread that made it: it need not be `Send`).
pub type Actor = Pin<Box<dyn Future<Output = ()>>>;

/// The actors of one world, and their scheduler.
pub struct Actors {
    pub turns: Scheduler,
    running: BTreeMap<usize, Actor>,
}

impl Actors {
    pub fn new(turns: Scheduler, actors: Vec<Actor>) -> Self {
        turns.lock().actors = actors.len();
        let mut all = Self {
            turns,
            running: actors.into_iter().enumerate().collect(),
        };
        // Each runs to its first gate.
        let ids: Vec<usize> = all.running.keys().copied().collect();
        for id in ids {
            all.poll(id);
        }
        all
    }

    fn poll(&mut self, actor: usize) {
        let mut cx = Context::from_waker(Waker::noop());
        if let Some(f) = self.running.get_mut(&actor) {
            if f.as_mut().poll(&mut cx).is_ready() {
                self.running.remove(&actor);
                self.turns.lock().ended.insert(actor);
            }
        }
    }

    /// The actors still running.
    pub fn running(&self) -> BTreeSet<usize> {
        self.running.keys().copied().collect()
    }

    /// Lets `actor` past its gate (or picks `option` at its choice) and runs it to its next
    /// one. Panics if the actor was not waiting there: a schedule that does not fit its world.
    pub fn step(&mut self, actor: usize, option: Option<usize>) {
        assert!(self.running.contains_key(&actor), "actor {actor} has ended");
        self.turns.grant(actor, option);
        self.poll(actor);
        assert!(self.turns.used(), "actor {actor} was not at a gate");
    }
}

/// The answer of a future that never waits (the in-memory stores'), outside any actor.
pub fn now<T>(f: impl Future<Output = T>) -> T {
    let mut f = std::pin::pin!(f);
    match f.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(v) => v,
        Poll::Pending => panic!("a future that waits, outside any actor"),
    }
}
