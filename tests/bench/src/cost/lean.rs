//! The lean profile's goal, $1.00 per million likes (issue 23), and the provisioned
//! utilisation at which it is met.

use super::{Measured, Profile};
use crate::template::target_utilisation;

/// The lean profile's goal, $ per million likes.
pub const LEAN_TARGET: f64 = 1.00;

/// The provisioned utilisation at which the lean profile's like costs exactly `LEAN_TARGET`.
pub fn lean_break_even_utilisation(m: &Measured) -> Option<f64> {
    let lean = Profile::lean(m.jwt_ms, 1.0);
    let like = lean.like(m);
    let budget = LEAN_TARGET - (like.total() - like.writes);
    // At utilisation u the writes cost like.writes / u (like.writes being the cost at 100 %).
    (budget > 0.0).then(|| like.writes / budget)
}

/// The cost table's line on the goal.
pub fn verdict(m: &Measured) -> String {
    let lean = Profile::lean(m.jwt_ms, target_utilisation());
    let lean_like = lean.like(m).total();
    match lean_break_even_utilisation(m) {
        Some(u) if lean_like <= LEAN_TARGET => format!(
            "lean profile: ${lean_like:.2} per million likes, within the ${LEAN_TARGET:.2} target (break-even at {:.0} % utilisation)",
            u * 100.0
        ),
        Some(u) => format!(
            "lean profile: ${lean_like:.2} per million likes, OVER the ${LEAN_TARGET:.2} target at {:.0} % utilisation: the 3 + {:.3} write units per like cost ${:.3} provisioned; within target from {:.0} % utilisation",
            target_utilisation() * 100.0,
            m.counts_units_per_like,
            lean.like(m).writes,
            u * 100.0
        ),
        None => format!(
            "lean profile: ${lean_like:.2} per million likes, OVER the ${LEAN_TARGET:.2} target at any utilisation"
        ),
    }
}
