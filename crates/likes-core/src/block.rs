//! Who blocks whom, as the product decided it (`UserBlocked`, `UserUnblocked`;
//! docs/product-events.md): delivered at least once and in any order, each (blocker, blocked)
//! pair's latest `at` wins. A blocked user cannot like or react to the blocker's posts (those
//! whose author a policy names: `crate::policy`), and the blocker does not see them among the
//! likers of their own posts. Counts are unchanged by a block. A count of pairs ever recorded
//! lets the API skip every read while there is none.

use crate::erase_job::Call;
use crate::ids::UserId;
use crate::moderation::Decided;

pub trait Blocks: Send + Sync {
    /// Records that `blocker` blocks `blocked` (or no longer does: `blocking` false) as of `at`
    /// (RFC 3339, the tables' format), unless a later decision about the pair is recorded.
    /// `Decided::Newer { flipped }`: `flipped` when the pair had no decision before.
    fn decide<'a>(
        &'a self,
        blocker: &'a UserId,
        blocked: &'a UserId,
        blocking: bool,
        at: &'a str,
    ) -> Call<'a, Decided>;

    /// Whether `blocker` blocks `blocked` now (strongly consistent).
    fn blocks<'a>(&'a self, blocker: &'a UserId, blocked: &'a UserId) -> Call<'a, bool>;

    /// How many (blocker, blocked) pairs ever had a decision (strongly consistent): the API's
    /// gate.
    fn pair_count(&self) -> Call<'_, i64>;
}

/// What `decide` makes of the pair's recorded decision (blocking, at) and a new one.
pub fn compare(recorded: Option<(bool, &str)>, blocking: bool, at: &str) -> Decided {
    let recorded = recorded.as_ref().map(|(b, t)| (b, *t));
    crate::moderation::latest(recorded, &blocking, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_latest_decision_about_a_pair_wins() {
        let (t1, t2) = ("2026-12-07T10:00:00.000Z", "2026-12-07T11:00:00.000Z");
        assert_eq!(compare(None, true, t1), Decided::Newer { flipped: true });
        assert_eq!(
            compare(Some((true, t1)), false, t2),
            Decided::Newer { flipped: false }
        );
        assert_eq!(compare(Some((false, t2)), true, t1), Decided::Older);
        assert_eq!(compare(Some((true, t1)), true, t1), Decided::Same);
    }
}
