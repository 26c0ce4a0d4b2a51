//! The product's decisions off its bus (`likes_core::product_event`), run as the erases that
//! exist: a deleted account as `likes-admin erase-user` does it (every like and reaction up to
//! the deletion now, and a last sweep once no access token issued before it is left), a deleted
//! post as `erase-post`. Both are idempotent, so a repeated delivery, or one out of order, ends
//! the same.

use std::sync::atomic::{AtomicUsize, Ordering};

use likes_core::erase::{erase_post, EraseStore};
use likes_core::erase_job::EraseJob;
use likes_core::product_event::{Decision, Malformed, ProductEvent};
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
                let job = EraseJob {
                    // The event's id: every delivery of one deletion is one job.
                    job_id: format!("deleted-{}", event.id),
                    user_id: user,
                    requested_at: at,
                    account_deleted: true,
                };
                // The last sweep first, so that it is queued whatever becomes of this run:
                // the worker holds it until it is due.
                let Some(queue) = &self.requeue else {
                    return Outcome::Retry(
                        "a deleted account, and no queue for its last sweep".into(),
                    );
                };
                if let Err(e) = queue.submit(&job).await {
                    return Outcome::Retry(format!(
                        "a deleted account's last sweep not queued: {e}"
                    ));
                }
                let now = EraseJob {
                    account_deleted: false,
                    ..job
                };
                self.run(now, deadline).await
            }
            Decision::PostDeleted { post, .. } => self.post_deleted(&post, body, deadline).await,
        }
    }

    /// Every like and reaction of the post. Out of time after some progress, the event goes
    /// back on the queue as it came and this delivery is done (a viral post takes many).
    async fn post_deleted(&self, post: &PostId, body: &str, deadline: Option<Instant>) -> Outcome {
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
            Some(Ok(n)) => {
                tracing::info!(post_id = %post, deleted = n, "a deleted post's likes erased");
                Outcome::Erased(n)
            }
            Some(Err(e)) => Outcome::Retry(e.to_string()),
            None => {
                let n = deleted.load(Ordering::Relaxed);
                let Some(queue) = self.requeue.as_ref().filter(|_| n > 0) else {
                    return Outcome::Retry("a deleted post, out of time; the rerun resumes".into());
                };
                match queue.forward(body).await {
                    Ok(()) => Outcome::Continued(n),
                    Err(e) => Outcome::Retry(format!("out of time, and not sent again: {e}")),
                }
            }
        }
    }

    /// Nothing is changed; the event goes, unchanged, where an operator sees it.
    pub(crate) async fn reject(&self, body: &str, why: Malformed) -> Outcome {
        let why = why.to_string();
        let Some(rejects) = &self.rejects else {
            return Outcome::Retry(format!("malformed product event: {why}"));
        };
        match rejects.forward(body).await {
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
