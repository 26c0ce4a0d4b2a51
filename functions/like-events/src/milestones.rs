//! The milestone rules of a post: invariant 6. Pure: no I/O.
//!
//! A post's milestones are 1, 10, 100, … (powers of ten). After a batch, a post with likes in
//! it whose count (as the aggregator has counted it, at least up to the batch's records) has
//! reached milestones above the highest one announced announces each of them, and the highest
//! announced is recorded, monotonic: a count that moves back and forth (unlikes, a recount)
//! never announces a milestone twice. The record the announcement is made for announces the
//! same milestones again when it is redelivered.

use likes_core::store::events::MilestoneState;
use likes_core::{PostCounts, Seq, SeqNo};

/// The highest milestone `count` has reached: 0 below 1.
pub fn reached(count: i64) -> u64 {
    let mut m = 0u64;
    let mut next = 1u64;
    while i64::try_from(next).is_ok_and(|n| n <= count) {
        m = next;
        match next.checked_mul(10) {
            Some(n) => next = n,
            None => break,
        }
    }
    m
}

/// The milestones above `from` up to `to`, both milestones (or 0).
pub fn between(from: u64, to: u64) -> Vec<u64> {
    std::iter::successors(Some(1u64), |m| m.checked_mul(10))
        .skip_while(|m| *m <= from)
        .take_while(|m| *m <= to)
        .collect()
}

/// An announcement: the milestones to publish, and the state to record once they are.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Announcement {
    pub milestones: Vec<u64>,
    pub state: MilestoneState,
}

/// The rule, for a post whose count reads `count`, on behalf of its record `by` (bucket,
/// sequence number: the batch's last like of the post).
pub fn decide(state: &MilestoneState, count: i64, by: (u8, &SeqNo)) -> Option<Announcement> {
    let redelivered = state.by.as_ref().is_some_and(|(b, s)| (*b, s) == by);
    let (base, floor) = if redelivered {
        (state.before, state.announced)
    } else {
        (state.announced, 0)
    };
    let upto = reached(count).max(floor);
    (upto > base).then(|| Announcement {
        milestones: between(base, upto),
        state: MilestoneState {
            announced: upto,
            before: base,
            by: Some((by.0, by.1.clone())),
        },
    })
}

/// Whether the aggregator has counted the post at least up to these records (each bucket's
/// last record in the batch): its mark on every such bucket is at or past it.
pub fn covered(item: &PostCounts, lasts: &[(u8, Seq<'_>)]) -> bool {
    lasts.iter().all(|(bucket, seq)| {
        item.buckets
            .get(usize::from(*bucket))
            .and_then(|b| b.hwm.as_ref())
            .is_some_and(|h| h.as_seq() >= *seq)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn seq(n: u32) -> SeqNo {
        SeqNo::parse(&(100_000_000_000_000_000_000u128 + u128::from(n)).to_string()).unwrap()
    }

    #[test]
    fn milestones_are_powers_of_ten() {
        assert_eq!(reached(0), 0);
        assert_eq!(reached(-3), 0);
        assert_eq!(reached(1), 1);
        assert_eq!(reached(9), 1);
        assert_eq!(reached(10), 10);
        assert_eq!(reached(999), 100);
        assert_eq!(reached(i64::MAX), 1_000_000_000_000_000_000);
        assert_eq!(between(0, 1000), [1, 10, 100, 1000]);
        assert_eq!(between(10, 10), Vec::<u64>::new());
        assert_eq!(between(1, 100), [10, 100]);
    }

    #[test]
    fn a_count_that_goes_back_and_forth_announces_each_milestone_once() {
        let mut state = MilestoneState::default();
        let mut announced = Vec::new();
        // A recount moves 10 → 9 → 10, unlikes 12 → 0 → 1, a backfill jumps to 150.
        for (i, count) in [1, 9, 10, 9, 10, 12, 0, 1, 150, 99, 150]
            .into_iter()
            .enumerate()
        {
            if let Some(a) = decide(&state, count, (3, &seq(i as u32))) {
                announced.extend(a.milestones.iter().copied());
                state = a.state;
            }
        }
        assert_eq!(announced, [1, 10, 100]);
    }

    #[test]
    fn the_announcing_record_redelivered_announces_the_same_again() {
        let by = seq(7);
        let a = decide(&MilestoneState::default(), 12, (3, &by)).expect("announces");
        assert_eq!(a.milestones, [1, 10]);
        // Redelivered when the count has dropped, or grown: the same, and what is new.
        let again = decide(&a.state, 5, (3, &by)).expect("announces again");
        assert_eq!(again.milestones, [1, 10]);
        let more = decide(&a.state, 120, (3, &by)).expect("announces again");
        assert_eq!(more.milestones, [1, 10, 100]);
        // Another record: nothing below what was announced.
        assert_eq!(decide(&a.state, 12, (3, &seq(8))), None);
        assert_eq!(decide(&a.state, 12, (4, &by)), None);
    }

    #[test]
    fn covered_means_every_bucket_marked_at_or_past_its_last_record() {
        let mut item = PostCounts::default();
        let s5 = seq(5);
        let s9 = seq(9);
        item.buckets[2].hwm = Some(s9.clone());
        assert!(covered(&item, &[(2, s5.as_seq())]));
        assert!(covered(&item, &[(2, s9.as_seq())]));
        assert!(!covered(&item, &[(2, seq(10).as_seq())]));
        assert!(!covered(&item, &[(2, s5.as_seq()), (3, s5.as_seq())]));
        assert!(covered(&item, &[]));
    }

    proptest! {
        /// Whatever the counts read, each milestone is announced at most once, only once
        /// reached, and every milestone of the highest count read is announced.
        #[test]
        fn each_milestone_once_whatever_the_counts(counts in prop::collection::vec(-5i64..20_000, 1..30)) {
            let mut state = MilestoneState::default();
            let mut announced = Vec::new();
            for (i, c) in counts.iter().enumerate() {
                if let Some(a) = decide(&state, *c, (0, &seq(i as u32))) {
                    prop_assert!(a.milestones.iter().all(|m| *m as i64 <= *c));
                    announced.extend(a.milestones.iter().copied());
                    state = a.state;
                }
            }
            let max = counts.iter().copied().max().unwrap_or(0);
            prop_assert_eq!(announced, between(0, reached(max)));
        }
    }
}
