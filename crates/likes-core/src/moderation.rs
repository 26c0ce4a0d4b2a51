//! The product's decisions about users, as recorded: suspended or not, as of when
//! (`UserSuspended`, `UserRestored`; docs/product-events.md). Delivered at least once and in any
//! order, each decision is recorded only if it is later than the one recorded, so the latest
//! `at` wins whatever the order; a count of suspended users lets the API skip every per-user
//! read while nobody is suspended.

use std::time::Duration;

use crate::erase_job::{Call, SETTLE};
use crate::ids::UserId;

/// How long an API execution environment trusts what it read of the moderation state: the
/// count of suspended users, and a user's own state.
pub const GATE_TTL: Duration = Duration::from_secs(5);

/// How long after a suspension is recorded a write of the user's may still land: every
/// environment refuses the user's writes within two `GATE_TTL`s (the count, then the user's
/// state, each cached that long), and a write admitted just before lands within `SETTLE`. A
/// suspension's last sweep starts no earlier.
pub const SUSPENSION_SETTLE: Duration =
    Duration::from_secs(2 * GATE_TTL.as_secs() + SETTLE.as_secs());

/// What recording a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decided {
    /// Recorded: later than what was (`flipped`: the user's state changed).
    Newer { flipped: bool },
    /// This very decision was recorded already (a redelivery): its sweep may be unfinished.
    Same,
    /// A later decision is recorded (or another one at the same time, recorded first): this one
    /// changes nothing.
    Older,
}

impl Decided {
    /// Whether the decision's sweep is to run (again).
    pub fn stands(self) -> bool {
        !matches!(self, Decided::Older)
    }
}

pub trait Suspensions: Send + Sync {
    /// Records that the user is (or is no longer) suspended as of `at` (RFC 3339, the tables'
    /// format), unless a later decision is recorded.
    fn decide<'a>(&'a self, user: &'a UserId, suspended: bool, at: &'a str) -> Call<'a, Decided>;

    /// Whether the user is suspended, read strongly.
    fn is_suspended<'a>(&'a self, user: &'a UserId) -> Call<'a, bool>;

    /// How many users are suspended (eventually consistent): the API's gate.
    fn suspended_count(&self) -> Call<'_, i64>;
}

/// The latest `at` wins, for a decision whose subject starts with none (a post's policy, a
/// pair's block): `Newer { flipped }` with `flipped` when nothing was recorded before.
pub fn latest<T: PartialEq>(recorded: Option<(&T, &str)>, new: &T, at: &str) -> Decided {
    match recorded {
        None => Decided::Newer { flipped: true },
        Some((_, when)) if when < at => Decided::Newer { flipped: false },
        Some((was, when)) if when == at && was == new => Decided::Same,
        Some(_) => Decided::Older,
    }
}

/// What `decide` makes of the recorded decision (`recorded`: suspended, at) and a new one.
pub fn compare(recorded: Option<(bool, &str)>, suspended: bool, at: &str) -> Decided {
    match recorded {
        None => Decided::Newer { flipped: suspended },
        Some((was, when)) if when < at => Decided::Newer {
            flipped: was != suspended,
        },
        Some((was, when)) if when == at && was == suspended => Decided::Same,
        Some(_) => Decided::Older,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_decision_wins_and_a_redelivery_runs_again() {
        let (t1, t2) = ("2026-12-07T10:00:00.000Z", "2026-12-07T11:00:00.000Z");
        assert_eq!(compare(None, true, t1), Decided::Newer { flipped: true });
        assert_eq!(compare(None, false, t1), Decided::Newer { flipped: false });
        assert_eq!(
            compare(Some((true, t1)), false, t2),
            Decided::Newer { flipped: true }
        );
        assert_eq!(
            compare(Some((true, t1)), true, t2),
            Decided::Newer { flipped: false }
        );
        // A restore older than the suspension applied changes nothing.
        assert_eq!(compare(Some((true, t2)), false, t1), Decided::Older);
        assert_eq!(compare(Some((true, t1)), true, t1), Decided::Same);
        // Two decisions at one time: the first recorded stands.
        assert_eq!(compare(Some((true, t1)), false, t1), Decided::Older);
        assert!(Decided::Same.stands() && !Decided::Older.stands());
    }
}
