//! The erase worker: SQS messages in (one erase job each, from `DELETE /users/me/likes`),
//! the user's likes deleted through the `by_user` index (`likes_core::erase`), and a partial
//! batch response out. A job that fails or runs out of time is reported as a batch item
//! failure: SQS makes it visible again after the queue's visibility timeout, and the rerun,
//! idempotent, deletes what is left. One that keeps failing goes to the dead-letter queue.
//!
//! A job that runs out of time after deleting some likes is not a failure: it is sent again as
//! a new message (its receive count starts over) and this one is done, so a person with very
//! many likes is not sent to the dead-letter queue for having them. One that made no progress
//! is retried like any failure, so a job that can never progress still ends in the DLQ.
//!
//! The product's decisions come on the same queue (`product`): a deleted account is the
//! erase-user job, a deleted post the erase-post; a malformed event goes to the failure queue.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_lambda_events::event::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent};
use likes_core::erase::{erase_user_settled, settling, EraseStore, Sweep};
use likes_core::erase_job::{EraseJob, EraseQueue, ErasureRequests, MAX_DELAY};
use likes_core::time::{now_ts, parse_ts};
use tokio::time::Instant;

mod moderate;
mod product;

/// Time kept back from the invocation's deadline to answer before Lambda stops the function.
pub const DEADLINE_MARGIN: Duration = Duration::from_secs(5);

pub struct Worker<S> {
    /// The Likes table (`likes_aws::DynamoLikes` on Lambda).
    pub likes: S,
    /// The index lags the table: a job ends after this many empty sweeps, `pause` apart.
    pub empty_sweeps: u32,
    pub pause: Duration,
    /// The last sweep starts no earlier than this long after the request
    /// (`likes_core::erase_job::SETTLE` when deployed).
    pub settle: Duration,
    /// Where a job that ran out of time after some progress goes again (the erase queue).
    /// Without it, such a job is retried as any failure.
    pub requeue: Option<Arc<dyn EraseQueue>>,
    /// The users' pending jobs (the API's record of each): a finished job clears its user's,
    /// or, asked for again while it ran, continues up to the later request.
    pub erasures: Option<Arc<dyn ErasureRequests>>,
    /// The longest an access token lives (`LIKES_MAX_TOKEN_LIFETIME_SECS`): a deleted
    /// account's job waits this long after the deletion, then sweeps once more.
    pub token_lifetime: Duration,
    /// Where a malformed product event goes, unchanged (the dead-letter queue, whose alarm
    /// shows it). Without it, such an event is retried until the redrive moves it there.
    pub rejects: Option<Arc<dyn EraseQueue>>,
    /// The users' moderation state (`likes_core::moderation`), for the product's
    /// `UserSuspended` and `UserRestored`. Without it, those are retried.
    pub suspensions: Option<Arc<dyn likes_core::moderation::Suspensions>>,
    /// The posts' policies (`likes_core::policy`), for the product's `PostPolicyChanged`.
    /// Without it, those are retried.
    pub policies: Option<Arc<dyn likes_core::policy::Policies>>,
    /// Who blocks whom (`likes_core::block`), for the product's `UserBlocked` and
    /// `UserUnblocked`. Without it, those are retried.
    pub blocks: Option<Arc<dyn likes_core::block::Blocks>>,
}

#[derive(Debug, PartialEq, Eq)]
pub enum Outcome {
    Erased(usize),
    /// Out of time after deleting this many: the job is on the queue again, as a new message.
    Continued(usize),
    /// A deleted account's job that is not due yet: on the queue again, delayed this long.
    Deferred(Duration),
    /// Not done this time; SQS will deliver it again.
    Retry(String),
    /// A product event this service cannot act on: on the failure queue, nothing changed.
    Rejected(String),
    /// A suspension or restore applied: this many likes and reactions moved.
    Moderated(usize),
    /// A decision older than the one recorded: nothing to do.
    Superseded,
    /// A post's policy, or a block, recorded (the API follows it within its cache time).
    PolicySet,
}

/// When a deleted account's last sweep is due: its deletion plus the longest token lifetime.
fn account_due(deleted_at: &str, token_lifetime: Duration) -> Option<String> {
    let due = parse_ts(deleted_at)? + chrono::TimeDelta::from_std(token_lifetime).ok()?;
    Some(likes_core::time::format_ts(due))
}

impl<S: EraseStore> Worker<S> {
    pub async fn run_job(&self, body: &str, deadline: Option<Instant>) -> Outcome {
        if let Some(event) = likes_core::product_event::read(body) {
            return match event {
                Ok(event) => self.decided(event, body, deadline).await,
                Err(why) => self.reject(body, why).await,
            };
        }
        let job: EraseJob = match serde_json::from_str(body) {
            Ok(j) => j,
            // Never runnable: retried until the queue moves it to the dead-letter queue,
            // where an operator sees it.
            Err(e) => return Outcome::Retry(format!("not an erase job: {e}")),
        };
        self.run(job, deadline).await
    }

    async fn run(&self, job: EraseJob, deadline: Option<Instant>) -> Outcome {
        // A person's own erase: the likes made up to the request. A deleted account's: those
        // made up to when no token issued before the deletion is left, swept then.
        let since = match job.account_deleted {
            false => job.requested_at.clone(),
            true => match account_due(&job.requested_at, self.token_lifetime) {
                None => return Outcome::Retry("an account job whose time does not read".into()),
                Some(due) => match settling(&due, Duration::ZERO) {
                    Some(wait) => return self.defer(&job, wait).await,
                    None => due,
                },
            },
        };
        let deleted = AtomicUsize::new(0);
        let progress = |n: usize| deleted.store(n, Ordering::Relaxed);
        let sweep = Sweep {
            progress: &progress,
            empty_sweeps: self.empty_sweeps,
            pause: self.pause,
            // For an account, every like made before no old token is left: all there can be.
            before: Some(since.as_str()),
        };
        let erase = erase_user_settled(&self.likes, &job.user_id, &sweep, &since, self.settle);
        let done = match deadline {
            Some(d) => match tokio::time::timeout_at(d - DEADLINE_MARGIN, erase).await {
                Ok(done) => done,
                Err(_) => {
                    return self
                        .out_of_time(&job, deleted.load(Ordering::Relaxed))
                        .await
                }
            },
            None => erase.await,
        };
        match done {
            Ok(n) => self.finish(job, n).await,
            Err(e) => Outcome::Retry(e.to_string()),
        }
    }

    /// The likes made up to the job's time are gone: the job is no longer pending, or it is
    /// continued up to a later request's time.
    async fn finish(&self, job: EraseJob, deleted: usize) -> Outcome {
        let later = match &self.erasures {
            None => None,
            Some(erasures) => {
                match erasures
                    .finish(&job.user_id, &job.job_id, &job.requested_at)
                    .await
                {
                    Ok(later) => later,
                    // Erased, but still recorded as pending: run again (idempotent) to clear it.
                    Err(e) => return Outcome::Retry(format!("erased, not cleared: {e}")),
                }
            }
        };
        let Some(later) = later else {
            tracing::info!(job_id = %job.job_id, user_id = %job.user_id, deleted, "erase done");
            return Outcome::Erased(deleted);
        };
        let again = EraseJob {
            requested_at: later,
            ..job
        };
        match &self.requeue {
            Some(queue) => match queue.submit(&again).await {
                Ok(()) => {
                    self.noted_sent(&again).await;
                    tracing::info!(job_id = %again.job_id, deleted, requested_at = %again.requested_at,
                        "erase asked for again while it ran; continued up to the later request");
                    Outcome::Continued(deleted)
                }
                Err(e) => Outcome::Retry(format!("asked for again, and not sent again: {e}")),
            },
            None => Outcome::Retry("asked for again while it ran; the rerun goes further".into()),
        }
    }

    /// A job not due yet goes back on the queue, delayed as long as SQS allows (it comes back
    /// and is delayed again until it is due): each hop is a message and an invocation.
    async fn defer(&self, job: &EraseJob, wait: Duration) -> Outcome {
        let Some(queue) = &self.requeue else {
            return Outcome::Retry("not due yet, and no queue to defer it on".into());
        };
        let delay = wait.min(MAX_DELAY);
        match queue.submit_after(job, delay).await {
            Ok(()) => {
                tracing::info!(job_id = %job.job_id, delay_secs = delay.as_secs(), "account erase not due yet; deferred");
                Outcome::Deferred(delay)
            }
            Err(e) => Outcome::Retry(format!("not due yet, and not deferred: {e}")),
        }
    }

    async fn out_of_time(&self, job: &EraseJob, deleted: usize) -> Outcome {
        let Some(queue) = self.requeue.as_ref().filter(|_| deleted > 0) else {
            return Outcome::Retry("out of time; the rerun resumes".into());
        };
        match queue.submit(job).await {
            Ok(()) => {
                tracing::info!(job_id = %job.job_id, deleted, "erase out of time; continued as a new message");
                self.noted_sent(job).await;
                Outcome::Continued(deleted)
            }
            Err(e) => Outcome::Retry(format!("out of time, and not sent again: {e}")),
        }
    }

    /// A continuation is a send like the API's: noted, so that the person's next request
    /// does not send the job again while it is still running (each would continue itself).
    async fn noted_sent(&self, job: &EraseJob) {
        if let Some(erasures) = &self.erasures {
            if let Err(e) = erasures.sent(&job.user_id, &job.job_id, &now_ts()).await {
                tracing::warn!(job_id = %job.job_id, error = %e, "a continuation not noted as sent");
            }
        }
    }

    /// One invocation: every message's job, failures reported by message id.
    pub async fn handle(&self, event: &SqsEvent, deadline: Option<Instant>) -> SqsBatchResponse {
        let mut response = SqsBatchResponse::default();
        for message in &event.records {
            let outcome = self
                .run_job(message.body.as_deref().unwrap_or(""), deadline)
                .await;
            if let Outcome::Retry(why) = outcome {
                let id = message.message_id.clone().unwrap_or_default();
                tracing::warn!(message_id = %id, %why, "erase job not done; SQS will deliver it again");
                let mut failure = BatchItemFailure::default();
                failure.item_identifier = id;
                response.batch_item_failures.push(failure);
            }
        }
        response
    }
}
