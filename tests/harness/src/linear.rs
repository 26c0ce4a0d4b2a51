//! A linearizability check for one (user, post) like register.
//!
//! A history is the requests of one user on one post: what each asked (like or unlike), when it
//! was sent and answered, and what it was told. It is linearizable if the requests can be put in
//! one order, each at one instant inside its own interval, so that starting from "not liked":
//! every `changed: true` flipped the register and every `changed: false` found it already so;
//! a request answered "outcome unknown" either flipped it (once) or did nothing; a request
//! answered "certainly not applied" did nothing; and the register ends as the table says.
//! The search is Wing & Gong's: depth first over which request takes effect next, memoised.

use std::collections::HashSet;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Like,
    Unlike,
    /// `GET …/like`: a strong read, which must see the register as it is at one instant of its
    /// interval.
    Read,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// A 200 with this `changed`.
    Changed(bool),
    /// Refused without effect (`503 unavailable`, or a 4xx).
    NoEffect,
    /// `503 outcome_unknown`: took effect once, or not at all.
    Unknown,
    /// A read's 200: whether it saw the post liked.
    Saw(bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Op {
    pub kind: Kind,
    /// When it was sent and when its answer came: ticks of one clock that gives no two events
    /// the same tick (a shared counter), so that real-time order is never ambiguous.
    pub start: u64,
    pub end: u64,
    pub answer: Answer,
}

/// What an API answer says of a write's effect; any other answer breaks the guarantee.
pub fn answer_of(status: u16, body: &serde_json::Value) -> Answer {
    match (status, body["error"]["code"].as_str()) {
        (200, _) => Answer::Changed(body["changed"] == true),
        (503, Some("outcome_unknown")) => Answer::Unknown,
        (503, Some("unavailable")) => Answer::NoEffect,
        _ => panic!("an answer the guarantee does not allow: {status} {body}"),
    }
}

/// What a read's answer says: what it saw, or nothing (`503 unavailable`).
pub fn read_answer_of(status: u16, body: &serde_json::Value) -> Answer {
    match (status, body["error"]["code"].as_str()) {
        (200, _) => Answer::Saw(body["liked"] == true),
        (503, Some("unavailable")) => Answer::NoEffect,
        _ => panic!("an answer a read may not give: {status} {body}"),
    }
}

/// The register after `op` takes effect on `liked`, if its answer allows that.
fn step(op: &Op, liked: bool) -> Vec<bool> {
    if op.kind == Kind::Read {
        return match op.answer {
            Answer::Saw(seen) if seen == liked => vec![liked],
            _ => vec![],
        };
    }
    let target = op.kind == Kind::Like;
    match op.answer {
        Answer::Saw(_) => vec![],
        Answer::Changed(true) if liked != target => vec![target],
        Answer::Changed(false) if liked == target => vec![liked],
        Answer::Changed(_) => vec![],
        Answer::Unknown if liked == target => vec![liked],
        Answer::Unknown => vec![target, liked],
        Answer::NoEffect => vec![liked],
    }
}

/// Whether `ops` is linearizable, starting from "not liked" and ending in `final_liked`.
pub fn linearizable(ops: &[Op], final_liked: bool) -> bool {
    let ops: Vec<Op> = ops
        .iter()
        .copied()
        .filter(|o| o.answer != Answer::NoEffect)
        .collect();
    let spans: Vec<(u64, u64)> = ops.iter().map(|o| (o.start, o.end)).collect();
    wing_gong(&spans, false, final_liked, |i, liked| step(&ops[i], liked))
}

/// Wing & Gong's search, memoised, for any register: whether the requests whose intervals are
/// `spans` can take effect one at a time, each inside its interval, from `initial` to `last`,
/// where `step(i, state)` lists the states request `i` may leave (none: its answer rules it
/// out in that state).
pub fn wing_gong<S: Copy + Eq + std::hash::Hash>(
    spans: &[(u64, u64)],
    initial: S,
    last: S,
    step: impl Fn(usize, S) -> Vec<S>,
) -> bool {
    let mut seen = HashSet::new();
    search(
        spans,
        &mut vec![false; spans.len()],
        initial,
        last,
        &step,
        &mut seen,
    )
}

fn search<S: Copy + Eq + std::hash::Hash>(
    spans: &[(u64, u64)],
    done: &mut Vec<bool>,
    state: S,
    last: S,
    step: &impl Fn(usize, S) -> Vec<S>,
    seen: &mut HashSet<(Vec<bool>, S)>,
) -> bool {
    let pending: Vec<usize> = (0..spans.len()).filter(|&i| !done[i]).collect();
    if pending.is_empty() {
        return state == last;
    }
    if !seen.insert((done.clone(), state)) {
        return false;
    }
    // The next to take effect cannot have started once another pending request was answered:
    // an interval that merely touches another's end comes after it (a history's clock gives no
    // two events one instant; where a clock could, this reports a violation rather than hide
    // one).
    let may_go_first = |i: usize| {
        pending
            .iter()
            .filter(|&&j| j != i)
            .all(|&j| spans[i].0 < spans[j].1)
    };
    for &i in pending.iter().filter(|&&i| may_go_first(i)) {
        for next in step(i, state) {
            done[i] = true;
            let ok = search(spans, done, next, last, step, seen);
            done[i] = false;
            if ok {
                return true;
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(kind: Kind, start: u64, end: u64, answer: Answer) -> Op {
        Op {
            kind,
            start,
            end,
            answer,
        }
    }

    #[test]
    fn sequential_histories() {
        let like = op(Kind::Like, 0, 1, Answer::Changed(true));
        let again = op(Kind::Like, 2, 3, Answer::Changed(false));
        let unlike = op(Kind::Unlike, 4, 5, Answer::Changed(true));
        assert!(linearizable(&[like, again, unlike], false));
        assert!(!linearizable(&[like, again, unlike], true), "final state");
        let wrong = op(Kind::Like, 2, 3, Answer::Changed(true));
        assert!(!linearizable(&[like, wrong], true), "two flips to liked");
    }

    /// The unlike whose retry removed the like a second device was told about.
    #[test]
    fn an_unlike_that_removes_a_later_confirmed_like_is_caught() {
        let first = op(Kind::Like, 0, 1, Answer::Changed(true));
        let unlike = op(Kind::Unlike, 2, 10, Answer::Changed(true));
        let second = op(Kind::Like, 3, 5, Answer::Changed(true));
        assert!(!linearizable(&[first, unlike, second], false));
        // Answered honestly, the same effects are fine.
        let honest = op(Kind::Unlike, 2, 10, Answer::Unknown);
        assert!(!linearizable(&[first, honest, second], false));
        assert!(linearizable(&[first, honest, second], true));
    }

    /// A strong read sees the register at one instant of its interval: after an answered like,
    /// never "not liked"; during an unanswered one, either.
    #[test]
    fn reads_see_the_register_at_an_instant_of_their_interval() {
        let like = op(Kind::Like, 0, 1, Answer::Changed(true));
        let stale = op(Kind::Read, 2, 3, Answer::Saw(false));
        assert!(!linearizable(&[like, stale], true), "a stale strong read");
        let fresh = op(Kind::Read, 2, 3, Answer::Saw(true));
        assert!(linearizable(&[like, fresh], true));
        let slow = op(Kind::Like, 0, 10, Answer::Changed(true));
        let before = op(Kind::Read, 2, 3, Answer::Saw(false));
        let after = op(Kind::Read, 4, 5, Answer::Saw(true));
        assert!(linearizable(&[slow, before, after], true));
        let seen = op(Kind::Read, 2, 3, Answer::Saw(true));
        let unseen = op(Kind::Read, 4, 5, Answer::Saw(false));
        assert!(
            !linearizable(&[slow, seen, unseen], true),
            "seen, then unseen"
        );
        let unknown = op(Kind::Like, 0, 10, Answer::Unknown);
        let saw = op(Kind::Read, 11, 12, Answer::Saw(true));
        assert!(
            !linearizable(&[unknown, saw], false),
            "the read pins the effect"
        );
    }

    /// One device's two requests, the second sent the instant the first was answered: they
    /// cannot be reordered, so "already liked", then "I liked it", with nothing between, is a
    /// violation.
    #[test]
    fn touching_intervals_keep_their_order() {
        let first = op(Kind::Like, 0, 1, Answer::Changed(false));
        let second = op(Kind::Like, 1, 2, Answer::Changed(true));
        assert!(!linearizable(&[first, second], true));
        let apart = op(Kind::Like, 2, 3, Answer::Changed(true));
        assert!(!linearizable(&[first, apart], true));
    }

    #[test]
    fn overlapping_requests_may_take_effect_in_either_order() {
        let a = op(Kind::Like, 0, 10, Answer::Changed(false));
        let b = op(Kind::Like, 1, 2, Answer::Changed(true));
        assert!(linearizable(&[a, b], true));
        let early = op(Kind::Like, 0, 2, Answer::Changed(false));
        let late = op(Kind::Like, 3, 4, Answer::Changed(true));
        assert!(
            linearizable(&[a, late], true),
            "late may take effect inside a's interval"
        );
        assert!(
            !linearizable(&[early, late], true),
            "early found a like that was not there"
        );
        let refused = op(Kind::Unlike, 0, 1, Answer::NoEffect);
        assert!(linearizable(&[refused, b], true));
    }
}
