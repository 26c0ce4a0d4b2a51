//! A suspension or a restore off the product's bus (`likes_core::product_event`), applied as
//! `likes_core::moderate` applies it (recorded if the latest, then the user's likes and
//! reactions moved until they match), within the invocation's time. A run out of time puts its
//! event back on the queue, as it came, for the next invocation at once (as an erase out of time
//! continues): that one finds the decision recorded (`Decided::Same`) and sweeps on, without
//! waiting out the settle again (this run's wait was longer).

use std::time::Duration;

use likes_core::erase::{EraseStore, Sweep};
use likes_core::moderate::apply;
use likes_core::moderation::SUSPENSION_SETTLE;
use likes_core::UserId;
use tokio::time::Instant;

use crate::{Outcome, Worker, DEADLINE_MARGIN};

impl<S: EraseStore> Worker<S> {
    pub(crate) async fn moderated(
        &self,
        body: &str,
        user: &UserId,
        suspended: bool,
        at: &str,
        deadline: Option<Instant>,
    ) -> Outcome {
        let Some(suspensions) = &self.suspensions else {
            return Outcome::Retry("a suspension, and no moderation state to record it in".into());
        };
        let sweep = Sweep {
            progress: &|_| {},
            empty_sweeps: self.empty_sweeps,
            pause: self.pause,
            before: None,
        };
        // Scaled as the worker's own settle (zero in tests that do not exercise it).
        let settle = if self.settle.is_zero() {
            Duration::ZERO
        } else {
            SUSPENSION_SETTLE
        };
        let run = apply(
            &self.likes,
            suspensions.as_ref(),
            user,
            suspended,
            at,
            &sweep,
            settle,
        );
        let done = match deadline {
            Some(d) => tokio::time::timeout_at(d - DEADLINE_MARGIN, run).await.ok(),
            None => Some(run.await),
        };
        match done {
            Some(Ok(applied)) if !applied.decided.stands() => {
                tracing::info!(user_id = %user, at, suspended, "a decision older than the recorded one: nothing to do");
                Outcome::Superseded
            }
            Some(Ok(applied)) => {
                tracing::info!(user_id = %user, suspended, moved = applied.moved, now_suspended = applied.suspended, "moderation applied");
                Outcome::Moderated(applied.moved)
            }
            Some(Err(e)) => Outcome::Retry(e.to_string()),
            None => {
                let why = "a moderation decision, out of time";
                self.again(body, Duration::ZERO, 0, why).await
            }
        }
    }
}
