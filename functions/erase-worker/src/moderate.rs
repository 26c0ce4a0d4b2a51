//! A suspension or a restore off the product's bus (`likes_core::product_event`): the decision
//! recorded if it is the latest (`likes_core::moderation`), then the user's likes and
//! reactions moved out of sight or back (`likes_core::suspend`).
//!
//! A suspension sweeps, waits out `SUSPENSION_SETTLE` from when it was recorded (every API
//! environment then refuses the user's writes, and one admitted before has landed), and sweeps
//! again. Decisions race (a restore delivered while the suspension's sweep runs in another
//! invocation): after its sweep, a run reads the recorded state again and, if it changed,
//! sweeps for that one, so the last run to finish leaves the user as the latest decision says.
//! A run out of time is retried (the redelivery finds its decision recorded: `Decided::Same`).

use std::time::Duration;

use likes_core::erase::{EraseStore, Sweep};
use likes_core::moderation::{Decided, SUSPENSION_SETTLE};
use likes_core::suspend::{hide_user, unhide_user};
use likes_core::{StoreError, UserId};
use tokio::time::Instant;

use crate::{Outcome, Worker, DEADLINE_MARGIN};

/// Sweeps for a state before a run gives up on a user whose decisions keep changing.
const ROUNDS: usize = 4;

impl<S: EraseStore> Worker<S> {
    pub(crate) async fn moderated(
        &self,
        user: &UserId,
        suspended: bool,
        at: &str,
        deadline: Option<Instant>,
    ) -> Outcome {
        let Some(suspensions) = &self.suspensions else {
            return Outcome::Retry("a suspension, and no moderation state to record it in".into());
        };
        let recorded = Instant::now();
        let decided = match suspensions.decide(user, suspended, at).await {
            Ok(d) => d,
            Err(e) => return Outcome::Retry(format!("the decision not recorded: {e}")),
        };
        if !decided.stands() {
            tracing::info!(user_id = %user, at, suspended, "a decision older than the recorded one: nothing to do");
            return Outcome::Superseded;
        }
        let run = self.converge(user, recorded, decided);
        let done = match deadline {
            Some(d) => tokio::time::timeout_at(d - DEADLINE_MARGIN, run).await.ok(),
            None => Some(run.await),
        };
        match done {
            Some(Ok(moved)) => {
                tracing::info!(user_id = %user, suspended, moved, "moderation applied");
                Outcome::Moderated(moved)
            }
            Some(Err(e)) => Outcome::Retry(e.to_string()),
            None => Outcome::Retry("moderation out of time; the rerun resumes".into()),
        }
    }

    /// Sweeps for the recorded state until it stays put; how many items moved.
    async fn converge(
        &self,
        user: &UserId,
        recorded: Instant,
        decided: Decided,
    ) -> Result<usize, StoreError> {
        let Some(suspensions) = &self.suspensions else {
            return Ok(0);
        };
        let sweep = Sweep {
            progress: &|_| {},
            empty_sweeps: self.empty_sweeps,
            pause: self.pause,
            before: None,
        };
        let mut moved = 0;
        let mut state = suspensions.is_suspended(user).await?;
        for _ in 0..ROUNDS {
            if state {
                moved += hide_user(&self.likes, user, &sweep).await?;
                // Only a suspension recorded by this run waits: a redelivery's was recorded
                // earlier, at least as long ago as the first delivery's wait began.
                let settle = match decided {
                    Decided::Newer { .. } => self.settle_of(SUSPENSION_SETTLE),
                    _ => Duration::ZERO,
                };
                tokio::time::sleep_until(recorded + settle).await;
                // Restored while this run waited: no second sweep out of sight; the next round
                // brings back what the first moved.
                if suspensions.is_suspended(user).await? {
                    moved += hide_user(&self.likes, user, &sweep).await?;
                }
            } else {
                moved += unhide_user(&self.likes, user, &sweep).await?;
            }
            let now = suspensions.is_suspended(user).await?;
            if now == state {
                return Ok(moved);
            }
            state = now;
        }
        Err(StoreError::Unavailable(format!(
            "{user}'s suspension kept changing over {ROUNDS} sweeps"
        )))
    }

    /// The settle to wait, scaled as the worker's own (`Worker::settle`, zero in tests that
    /// do not exercise it).
    fn settle_of(&self, settle: Duration) -> Duration {
        if self.settle.is_zero() {
            Duration::ZERO
        } else {
            settle
        }
    }
}
