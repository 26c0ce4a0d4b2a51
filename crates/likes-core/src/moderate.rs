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
            let hide = hide_user(store, user, sweep);
            moved += while_decided(hide, suspensions, user, true).await?;
            tokio::time::sleep_until(settled).await;
            // Restored while this run waited: no second sweep out of sight; the next round
            // brings back what the first moved.
            if suspensions.is_suspended(user).await? {
                let hide = hide_user(store, user, sweep);
                moved += while_decided(hide, suspensions, user, true).await?;
            }
        } else {
            let unhide = unhide_user(store, user, sweep);
            moved += while_decided(unhide, suspensions, user, false).await?;
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

/// How often a sweep checks that the decision it sweeps for still stands.
const WATCH: Duration = Duration::from_millis(500);

/// Runs `sweep` while the user's recorded state is `state`: a sweep for a decision a later one
/// replaced stops (each move is one step, so stopping between any two is safe), instead of
/// moving items back and forth against the sweep of that later decision until one of them
/// finds nothing. What it moved before it stopped is not counted.
async fn while_decided(
    sweep: impl std::future::Future<Output = Result<usize, StoreError>>,
    suspensions: &dyn Suspensions,
    user: &UserId,
    state: bool,
) -> Result<usize, StoreError> {
    let replaced = async {
        loop {
            tokio::time::sleep(WATCH).await;
            // A read that fails stops nothing: the sweep goes on, and the next read decides.
            match suspensions.is_suspended(user).await {
                Ok(now) if now != state => return,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(user_id = %user, error = %e, "the recorded state unread while sweeping")
                }
            }
        }
    };
    tokio::select! {
        moved = sweep => moved,
        () = replaced => Ok(0),
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::ids::PostId;
    use crate::store::memory::{MemoryLikes, MemorySuspensions};
    use crate::store::LikesStore;
    use crate::write_token::WriteToken;

    /// A suspension and a restore applied at once, in every interleaving the scheduler finds:
    /// the user ends as the later decision says, nothing left hidden after the restore.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn racing_decisions_converge_on_the_latest() {
        for round in 0..12u64 {
            let store = Arc::new(MemoryLikes::default());
            let state = Arc::new(MemorySuspensions::default());
            let user = UserId::new_random();
            for _ in 0..30 {
                let at = crate::time::now_ts();
                let post = PostId::new_random();
                store
                    .like(&post, &user, &at, &WriteToken::random())
                    .await
                    .unwrap();
            }
            let run = |suspended: bool, at: &'static str, delay: u64| {
                let (store, state, user) = (store.clone(), state.clone(), user.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(Duration::from_millis(delay)).await;
                    let sweep = Sweep {
                        progress: &|_| {},
                        empty_sweeps: 2,
                        pause: Duration::from_millis(2),
                        before: None,
                    };
                    let settle = Duration::from_millis(20);
                    apply(
                        store.as_ref(),
                        state.as_ref(),
                        &user,
                        suspended,
                        at,
                        &sweep,
                        settle,
                    )
                    .await
                    .unwrap()
                })
            };
            let t1 = "2026-12-07T10:00:00.000Z";
            let t2 = "2026-12-07T11:00:00.000Z";
            let a = run(true, t1, 0);
            let b = run(false, t2, (round * 3) % 30);
            // A redelivery of the suspension, racing both.
            let c = run(true, t1, (round * 7) % 40);
            // Racing sweeps that never stop (a livelock) fail the test rather than hang it.
            let all = async { (a.await.unwrap(), b.await.unwrap(), c.await.unwrap()) };
            tokio::time::timeout(Duration::from_secs(30), all)
                .await
                .expect("the racing runs ended");
            assert!(!state.is_suspended(&user).await.unwrap());
            let (hidden, _) = store.hidden(&user, None).await.unwrap();
            let (visible, _) = store.user_likes(&user, None, None).await.unwrap();
            assert_eq!((hidden.len(), visible.len()), (0, 30), "round {round}");
        }
    }
}
