//! The product's decisions off its bus (`likes_core::product_event`), run as the erases that
//! exist: a deleted account as `likes-admin erase-user` does it (every like and reaction up to
//! the deletion now, and a last sweep once no access token issued before it is left), a deleted
//! post as `erase-post` (and once more after the settle, for a like still landing). Both are
//! idempotent, so a repeated delivery, or one out of order, ends the same.
//!
//! Unlike `erase-post`, a deleted post's erase does not hold the post's recount lease (the
//! worker has no access to the Counts table): a recount of that post running meanwhile finds
//! its window short and exits 3, to be run again (docs/design.md); no count is wrong for it.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use likes_core::erase::{erase_post, settling, EraseStore};
use likes_core::erase_job::{EraseJob, MAX_DELAY, SETTLE};
use likes_core::policy::Policy;
use likes_core::product_event::{Decision, Malformed, ProductEvent};
use likes_core::time::now_ts;
use likes_core::PostId;
use tokio::time::Instant;

use crate::{Outcome, Worker, DEADLINE_MARGIN};

impl<S: EraseStore> Worker<S> {
    pub(crate) async fn decided(
        &self,
        event: ProductEvent,
        body: &str,
        deadline: Option<Instant>,
    ) -> Outcome {
        match event.decision {
            Decision::UserDeleted { user, at } => {
                let Some(queue) = &self.requeue else {
                    return Outcome::Retry(
                        "a deleted account, and no queue for its last sweep".into(),
                    );
                };
                let last = EraseJob {
                    // The event's id: the deletion's jobs are named for it in the logs.
                    job_id: format!("deleted-{}", event.id),
                    user_id: user,
                    requested_at: at,
                    account_deleted: true,
                };
                // Now: every like made up to the deletion, or up to now if it is dated ahead
                // (the last sweep takes the rest), so that no run waits for a future time.
                let now = now_ts();
                let first = EraseJob {
                    requested_at: last.requested_at.clone().min(now),
                    account_deleted: false,
                    ..last.clone()
                };
                let outcome = self.run(first, deadline).await;
                if matches!(outcome, Outcome::Retry(_)) {
                    return outcome;
                }
                // Then the last sweep, which the worker holds until it is due. Queued once the
                // first run is done (or continued), so that a delivery retried for the first
                // run does not queue it again; lost only if this delivery's answer is.
                match queue.submit(&last).await {
                    Ok(()) => outcome,
                    Err(e) => {
                        Outcome::Retry(format!("a deleted account's last sweep not queued: {e}"))
                    }
                }
            }
            Decision::PostDeleted { post, at } => {
                self.post_deleted(&post, &at, body, deadline).await
            }
            Decision::Moderated {
                user,
                suspended,
                at,
            } => self.moderated(body, &user, suspended, &at, deadline).await,
            Decision::PolicyChanged { post, policy, at } => {
                self.policy_changed(&post, &policy, &at).await
            }
            Decision::Blocked {
                blocker,
                blocked,
                blocking,
                at,
            } => {
                let Some(blocks) = &self.blocks else {
                    return Outcome::Retry("a block, and nowhere to record it".into());
                };
                match blocks.decide(&blocker, &blocked, blocking, &at).await {
                    Ok(d) if d.stands() => Outcome::PolicySet,
                    Ok(_) => Outcome::Superseded,
                    Err(e) => Outcome::Retry(format!("a block not recorded: {e}")),
                }
            }
        }
    }

    /// Records the post's policy if it is the latest; nothing else changes (the API reads it).
    async fn policy_changed(&self, post: &PostId, policy: &Policy, at: &str) -> Outcome {
        let Some(policies) = &self.policies else {
            return Outcome::Retry("a post's policy, and nowhere to record it".into());
        };
        match policies.decide(post, policy, at).await {
            Ok(decided) if decided.stands() => {
                tracing::info!(post_id = %post, at, ?policy, "a post's policy recorded");
                Outcome::PolicySet
            }
            Ok(_) => {
                tracing::info!(post_id = %post, at, "a policy older than the recorded one: nothing to do");
                Outcome::Superseded
            }
            Err(e) => Outcome::Retry(format!("a post's policy not recorded: {e}")),
        }
    }

    /// Every like and reaction of the post. Out of time after some progress, the event goes
    /// back on the queue as it came and this delivery is done (a viral post takes many); done
    /// before the settle past the deletion, it comes back once that has passed, for a like
    /// stamped before the deletion that was still being written.
    async fn post_deleted(
        &self,
        post: &PostId,
        at: &str,
        body: &str,
        deadline: Option<Instant>,
    ) -> Outcome {
        let deleted = AtomicUsize::new(0);
        let progress = |n: usize| deleted.store(n, Ordering::Relaxed);
        let erase = erase_post(&self.likes, post, &progress);
        let done = match deadline {
            Some(d) => tokio::time::timeout_at(d - DEADLINE_MARGIN, erase)
                .await
                .ok(),
            None => Some(erase.await),
        };
        match done {
            Some(Ok(n)) => match settling(at, SETTLE) {
                None => {
                    tracing::info!(post_id = %post, deleted = n, "a deleted post's likes erased");
                    Outcome::Erased(n)
                }
                Some(wait) => {
                    self.again(
                        body,
                        wait,
                        n,
                        "a deleted post, the settle past the deletion",
                    )
                    .await
                }
            },
            Some(Err(e)) => Outcome::Retry(e.to_string()),
            None => {
                let n = deleted.load(Ordering::Relaxed);
                if n == 0 {
                    return Outcome::Retry("a deleted post, out of time; the rerun resumes".into());
                }
                self.again(body, Duration::ZERO, n, "a deleted post, out of time")
                    .await
            }
        }
    }

    /// The event back on the queue, as it came, after `delay`: this delivery is done.
    pub(crate) async fn again(
        &self,
        body: &str,
        delay: Duration,
        deleted: usize,
        why: &str,
    ) -> Outcome {
        let Some(queue) = &self.requeue else {
            return Outcome::Retry(format!("{why}, and no queue to continue on"));
        };
        // Whole seconds, rounded up by the queue: never back before it is due.
        let delay = delay.min(MAX_DELAY);
        match queue.forward(body, delay).await {
            Ok(()) if delay.is_zero() => Outcome::Continued(deleted),
            Ok(()) => Outcome::Deferred(delay),
            Err(e) => Outcome::Retry(format!("{why}, and not sent again: {e}")),
        }
    }

    /// Nothing is changed; the event goes, unchanged, where an operator sees it.
    pub(crate) async fn reject(&self, body: &str, why: Malformed) -> Outcome {
        let why = why.to_string();
        let Some(rejects) = &self.rejects else {
            return Outcome::Retry(format!("malformed product event: {why}"));
        };
        match rejects.forward(body, Duration::ZERO).await {
            Ok(()) => {
                tracing::error!(%why, "a malformed product event, set aside on the failure queue");
                Outcome::Rejected(why)
            }
            Err(e) => Outcome::Retry(format!(
                "malformed product event ({why}), not set aside: {e}"
            )),
        }
    }
}
