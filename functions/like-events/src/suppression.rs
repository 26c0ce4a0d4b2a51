//! The notification rules of one (user, post, kind): invariants 4 and 5. Pure: no I/O. The
//! rules know no kinds: each kind of a (user, post) is folded on its own, from its own state
//! ("like" and "unlike" below read "reaction" and "its removal" for the other kinds).
//!
//! A like notifies unless the pair notified within the suppression window before it (by the
//! stream's clock: the records' creation times, never the time of processing, so that a
//! redelivery decides as the first delivery did). An unlike inside the window retracts that
//! notification, once. A record the state already holds — the like that notified, the unlike
//! that retracted — gives its own event again: suppression never swallows the event of the
//! record being retried.

use likes_core::store::events::{Epoch, PairState};
use likes_core::Seq;

/// Creation times this far apart are the same moment (the stream's clock is approximate).
const SKEW_SECS: i64 = 2;

/// What a record's notification rule decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// No notification event (an unlike with nothing to retract).
    Nothing,
    /// A like inside the window of an earlier notification.
    Suppressed,
    /// This like notifies (or notified, on a redelivery).
    Notify { until_secs: i64 },
    /// This unlike retracts the notification of the like `notified`.
    Retract { notified: String },
    /// A record older than the state's last two windows: its decision cannot be known again
    /// (unreachable while records older than the window are given up; see invariant 4).
    Unknown,
}

/// A record as the rule sees it.
#[derive(Debug, Clone, Copy)]
pub struct Change<'a> {
    pub seq: Seq<'a>,
    pub insert: bool,
    pub created_secs: i64,
}

/// What one record did to the pair.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub decision: Decision,
    /// The state after the record.
    pub state: PairState,
    /// The state was found ahead of the stream (a restored table's new stream) and set aside.
    pub mark_ahead: bool,
}

fn epoch(change: &Change<'_>) -> Epoch {
    Epoch {
        notified: change.seq.to_owned(),
        at: change.created_secs,
        retracted: None,
    }
}

/// The rule for one record, from the pair's state before it.
pub fn decide(state: &PairState, x: &Change<'_>, window_secs: i64) -> Step {
    let same = |s: &likes_core::SeqNo| s.as_seq() == x.seq;
    let keep = |decision| Step {
        decision,
        state: state.clone(),
        mark_ahead: false,
    };
    let Some(cur) = &state.current else {
        return fresh(state, x, None, window_secs, false);
    };
    let n = cur.notified.as_seq();
    if x.seq < n && x.created_secs > cur.at + SKEW_SECS {
        // Numbered before the notifying like yet created after it: the state comes from
        // another stream (a restored table). Decide as if there were none.
        return fresh(state, x, None, window_secs, true);
    }
    if same(&cur.notified) {
        return keep(Decision::Notify {
            until_secs: cur.at + window_secs,
        });
    }
    if cur.retracted.as_ref().is_some_and(same) {
        return keep(Decision::Retract {
            notified: cur.notified.raw().to_owned(),
        });
    }
    if x.seq > n {
        let inside = x.created_secs < cur.at + window_secs;
        return match (x.insert, inside) {
            (true, true) => keep(Decision::Suppressed),
            (true, false) => fresh(state, x, Some(cur.clone()), window_secs, false),
            (false, true) if cur.retracted.is_none() => Step {
                decision: Decision::Retract {
                    notified: cur.notified.raw().to_owned(),
                },
                state: PairState {
                    current: Some(Epoch {
                        retracted: Some(x.seq.to_owned()),
                        ..cur.clone()
                    }),
                    previous: state.previous.clone(),
                },
                mark_ahead: false,
            },
            (false, _) => keep(Decision::Nothing),
        };
    }
    // Older than the current window's like: decided within the window before, if at all.
    match &state.previous {
        Some(p) if same(&p.notified) => keep(Decision::Notify {
            until_secs: p.at + window_secs,
        }),
        Some(p) if p.retracted.as_ref().is_some_and(same) => keep(Decision::Retract {
            notified: p.notified.raw().to_owned(),
        }),
        // Inside the window before (had it been after it, it would have opened a window).
        Some(p) if x.seq > p.notified.as_seq() && x.insert => keep(Decision::Suppressed),
        Some(p) if x.seq > p.notified.as_seq() => keep(Decision::Nothing),
        // An unlike before the pair ever notified retracts nothing.
        None if !x.insert => keep(Decision::Nothing),
        _ => keep(Decision::Unknown),
    }
}

/// A like that notifies, opening a window after `previous`; an unlike does nothing.
fn fresh(
    state: &PairState,
    x: &Change<'_>,
    previous: Option<Epoch>,
    window_secs: i64,
    mark_ahead: bool,
) -> Step {
    if !x.insert {
        return Step {
            decision: Decision::Nothing,
            state: state.clone(),
            mark_ahead,
        };
    }
    let e = epoch(x);
    Step {
        decision: Decision::Notify {
            until_secs: e.at + window_secs,
        },
        state: PairState {
            current: Some(e),
            previous,
        },
        mark_ahead,
    }
}

/// The rule over a pair's records in stream order: one step per record.
pub fn fold(state: &PairState, changes: &[Change<'_>], window_secs: i64) -> Vec<Step> {
    let mut now = state.clone();
    changes
        .iter()
        .map(|x| {
            let step = decide(&now, x, window_secs);
            now = step.state.clone();
            step
        })
        .collect()
}

#[cfg(test)]
mod tests;
