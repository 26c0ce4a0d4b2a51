//! A decision about a user applied: recorded if it is the latest ([`crate::moderation`]), then
//! the user's likes and reactions moved out of sight or back ([`crate::suspend`]) until they
//! match what is recorded. The erase worker runs it for the product's `UserSuspended` and
//! `UserRestored`; `likes-admin suspend-user` and `restore-user` for an operator's.
//!
//! A suspension sweeps, waits until `settle` after it was recorded (`SUSPENSION_SETTLE`: every
//! API environment then refuses the user's writes, and one admitted before has landed), and
//! sweeps again. Decisions race (a restore applied while the suspension's sweep runs
//! elsewhere): after its sweep, a run reads the recorded state again and, if it changed, sweeps
//! for that one, so the last run to finish leaves the user as the latest decision says.

use std::time::Duration;

use tokio::time::Instant;

use crate::erase::{EraseStore, Sweep};
use crate::ids::UserId;
use crate::moderation::{Decided, Suspensions};
use crate::store::StoreError;
use crate::suspend::{hide_user, unhide_user};

/// Sweeps for a state before a run gives up on a user whose decisions keep changing.
const ROUNDS: usize = 4;

/// What applying a decision did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Applied {
    pub decided: Decided,
    /// Items moved out of sight or back.
    pub moved: usize,
    /// The state recorded when the run ended: the latest decision's, whichever that is.
    pub suspended: bool,
}

/// Records that `user` is (or is no longer) suspended as of `at`, and, unless a later decision
/// is recorded, moves their items until they match the recorded state. A redelivered decision
/// (`Decided::Same`) sweeps again without waiting: its first run waited from when it was
/// recorded, at least as long ago.
pub async fn apply<S: EraseStore>(
    store: &S,
    suspensions: &dyn Suspensions,
    user: &UserId,
    suspended: bool,
    at: &str,
    sweep: &Sweep<'_>,
    settle: Duration,
) -> Result<Applied, StoreError> {
    let recorded = Instant::now();
    let decided = suspensions.decide(user, suspended, at).await?;
    if !decided.stands() {
        let now = suspensions.is_suspended(user).await?;
        return Ok(Applied {
            decided,
            moved: 0,
            suspended: now,
        });
    }
    let settle = match decided {
        Decided::Newer { .. } => settle,
        _ => Duration::ZERO,
    };
    let (moved, now) = converge(store, suspensions, user, recorded + settle, sweep).await?;
    Ok(Applied {
        decided,
        moved,
        suspended: now,
    })
}

/// Sweeps for the recorded state until it stays put; (items moved, the state it ended in).
async fn converge<S: EraseStore>(
    store: &S,
    suspensions: &dyn Suspensions,
    user: &UserId,
    settled: Instant,
    sweep: &Sweep<'_>,
) -> Result<(usize, bool), StoreError> {
    let mut moved = 0;
    let mut state = suspensions.is_suspended(user).await?;
    for _ in 0..ROUNDS {
        if state {
            moved += hide_user(store, user, sweep).await?;
            tokio::time::sleep_until(settled).await;
            // Restored while this run waited: no second sweep out of sight; the next round
            // brings back what the first moved.
            if suspensions.is_suspended(user).await? {
                moved += hide_user(store, user, sweep).await?;
            }
        } else {
            moved += unhide_user(store, user, sweep).await?;
        }
        let now = suspensions.is_suspended(user).await?;
        if now == state {
            return Ok((moved, now));
        }
        state = now;
    }
    Err(StoreError::Unavailable(format!(
        "{user}'s suspension kept changing over {ROUNDS} sweeps"
    )))
}
