//! The notification rules against an independent model of what the issue asks, on random
//! histories, and under redelivery from any point with the state as any later write left it.

use super::*;
use proptest::prelude::*;

const W: i64 = 100;

/// (insert, created_secs) per record; sequence numbers are 21 digits, growing with gaps.
fn changes(history: &[(bool, i64)]) -> Vec<(String, bool, i64)> {
    history
        .iter()
        .enumerate()
        .map(|(i, &(insert, t))| {
            let seq = (100_000_000_000_000_000_000u128 + 3 * i as u128).to_string();
            (seq, insert, t)
        })
        .collect()
}

fn as_changes(owned: &[(String, bool, i64)]) -> Vec<Change<'_>> {
    owned
        .iter()
        .map(|(s, insert, t)| Change {
            seq: Seq::parse(s).expect("a sequence number"),
            insert: *insert,
            created_secs: *t,
        })
        .collect()
}

/// What the issue asks, written plainly: a like notifies unless a notification was made less
/// than W before it; an unlike less than W after the notification retracts it, once.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Model {
    Nothing,
    Suppressed,
    Notify(usize),
    Retract(usize),
}

fn model(history: &[(bool, i64)]) -> Vec<Model> {
    let mut open: Option<(usize, i64, bool)> = None;
    history
        .iter()
        .enumerate()
        .map(|(i, &(insert, t))| match (insert, open) {
            (true, Some((_, at, _))) if t < at + W => Model::Suppressed,
            (true, _) => {
                open = Some((i, t, false));
                Model::Notify(i)
            }
            (false, Some((n, at, false))) if t < at + W => {
                open = Some((n, at, true));
                Model::Retract(n)
            }
            (false, _) => Model::Nothing,
        })
        .collect()
}

fn as_model(steps: &[Step], owned: &[(String, bool, i64)]) -> Vec<Model> {
    let index = |seq: &str| {
        owned
            .iter()
            .position(|(s, _, _)| s == seq)
            .expect("a record")
    };
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| match &s.decision {
            Decision::Nothing => Model::Nothing,
            Decision::Suppressed => Model::Suppressed,
            Decision::Notify { .. } => Model::Notify(i),
            Decision::Retract { notified } => Model::Retract(index(notified)),
            Decision::Unknown => panic!("record {i}: unknown decision"),
        })
        .collect()
}

/// A like/unlike alternation (as the Likes table's records of one pair are) with times.
fn history() -> impl Strategy<Value = Vec<(bool, i64)>> {
    (any::<bool>(), prop::collection::vec(0i64..60, 1..40)).prop_map(|(start_liked, gaps)| {
        let mut t = 1_000;
        gaps.iter()
            .enumerate()
            .map(|(i, gap)| {
                t += gap;
                // Starting liked (a like made before the function ran): the first record is
                // an unlike.
                ((i % 2 == 0) != start_liked, t)
            })
            .collect()
    })
}

#[test]
fn like_unlike_like_inside_the_window_notifies_once_and_retracts_once() {
    let owned = changes(&[(true, 0), (false, 5), (true, 10), (false, 15), (true, 20)]);
    let steps = fold(&PairState::default(), &as_changes(&owned), W);
    let decisions: Vec<&Decision> = steps.iter().map(|s| &s.decision).collect();
    assert_eq!(
        decisions,
        [
            &Decision::Notify { until_secs: W },
            &Decision::Retract {
                notified: owned[0].0.clone()
            },
            &Decision::Suppressed,
            &Decision::Nothing,
            &Decision::Suppressed,
        ]
    );
}

#[test]
fn a_like_after_the_window_notifies_again_and_an_unlike_after_it_retracts_nothing() {
    let owned = changes(&[(true, 0), (false, W + 1), (true, W + 2), (false, W + 3)]);
    let steps = fold(&PairState::default(), &as_changes(&owned), W);
    assert_eq!(steps[1].decision, Decision::Nothing);
    assert_eq!(
        steps[2].decision,
        Decision::Notify {
            until_secs: 2 * W + 2
        }
    );
    assert_eq!(
        steps[3].decision,
        Decision::Retract {
            notified: owned[2].0.clone()
        }
    );
    // The window before is kept: a redelivery from the first unlike decides as before.
    let again = fold(&steps[3].state, &as_changes(&owned[1..]), W);
    let first: Vec<_> = steps[1..].iter().map(|s| &s.decision).collect();
    let second: Vec<_> = again.iter().map(|s| &s.decision).collect();
    assert_eq!(first, second);
}

#[test]
fn a_redelivered_record_gives_its_own_event_again() {
    let owned = changes(&[(true, 0), (false, 5)]);
    let c = as_changes(&owned);
    let steps = fold(&PairState::default(), &c, W);
    let after = &steps[1].state;
    assert_eq!(decide(after, &c[0], W).decision, steps[0].decision);
    assert_eq!(decide(after, &c[1], W).decision, steps[1].decision);
    // And changes nothing.
    assert_eq!(&decide(after, &c[1], W).state, after);
}

#[test]
fn a_state_from_another_stream_is_set_aside() {
    let owned = changes(&[(true, 0)]);
    let before = fold(&PairState::default(), &as_changes(&owned), W);
    // A restored table's stream numbers again from below, later in time.
    let restored = [Change {
        seq: Seq::parse("5").expect("seq"),
        insert: true,
        created_secs: 50,
    }];
    let step = decide(&before[0].state, &restored[0], W);
    assert!(step.mark_ahead);
    assert_eq!(step.decision, Decision::Notify { until_secs: 50 + W });
}

#[test]
fn a_record_older_than_the_last_two_windows_is_unknown_not_guessed() {
    let owned = changes(&[(true, 0), (true, W), (true, 2 * W), (true, 3 * W)]);
    let steps = fold(&PairState::default(), &as_changes(&owned), 10);
    let c = as_changes(&owned);
    assert_eq!(
        decide(&steps[3].state, &c[0], 10).decision,
        Decision::Unknown
    );
    assert_eq!(
        decide(&steps[3].state, &c[2], 10).decision,
        Decision::Notify {
            until_secs: 2 * W + 10
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    /// Invariants 4 and 5: the rules are the model's.
    #[test]
    fn the_rules_are_the_models(h in history()) {
        let owned = changes(&h);
        let steps = fold(&PairState::default(), &as_changes(&owned), W);
        prop_assert_eq!(as_model(&steps, &owned), model(&h));
    }

    /// Invariant 4: redelivered from any record `from`, with the state any later write left
    /// (after record `written`, at or past `from - 1`), every record decides as it first did —
    /// provided the redelivered records span less than the window (records older than the
    /// window are given up by the mapping, never redelivered).
    #[test]
    fn a_redelivery_decides_as_the_first_delivery(
        h in history(),
        from in any::<prop::sample::Index>(),
        written in any::<prop::sample::Index>(),
    ) {
        let owned = changes(&h);
        let c = as_changes(&owned);
        let steps = fold(&PairState::default(), &c, W);
        let from = from.index(c.len());
        // The state as written after record `written - 1`; 0: no write reached this pair.
        let written = from + written.index(c.len() - from + 1);
        let state = match written.checked_sub(1) {
            None => PairState::default(),
            Some(w) if w < from => steps[w].state.clone(),
            Some(w) => {
                // Held within a window of `from` (the mapping's age limit).
                let w = (from..=w)
                    .rev()
                    .find(|&w| c[w].created_secs - c[from].created_secs < W)
                    .unwrap_or(from);
                steps[w].state.clone()
            }
        };
        let again = fold(&state, &c[from..], W);
        for (i, (first, second)) in steps[from..].iter().zip(&again).enumerate() {
            prop_assert_eq!(&first.decision, &second.decision, "record {}", from + i);
        }
    }
}
