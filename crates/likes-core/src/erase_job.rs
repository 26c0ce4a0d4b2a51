//! A person's request to erase their likes (`DELETE /users/me/likes`): the API hands the job to
//! a durable queue and answers 202; a worker runs it (`erase-worker`, SQS-triggered; the queue
//! is `likes_aws::sqs_erase_queue`). SQS keeps the job until a worker has finished it: a worker
//! that crashes or times out leaves the message to reappear after its visibility timeout, and
//! the erase, idempotent, picks up where it was.

//!
//! A person has at most one pending job ([`ErasureRequests`], the `EraseRequestsTable`): asking
//! again while one is pending moves its `requested_at` forward and answers with its id, so a
//! flood of requests from one token queues one job, not thousands.

use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::store::StoreError;
use crate::time::parse_ts;

/// What the worker needs: whose likes, up to when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraseJob {
    pub job_id: String,
    pub user_id: UserId,
    /// Likes made up to this moment are erased; one made after the request is a new like.
    pub requested_at: String,
    /// The account itself was deleted at `requested_at` (`likes-admin erase-user`): every
    /// like and reaction of the user goes, whenever made, and the job runs only once every
    /// access token issued before the deletion has expired (the worker's longest token
    /// lifetime after `requested_at`), so that none made with such a token survives.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub account_deleted: bool,
}

/// The longest an SQS message can be delayed (`DelaySeconds`): a job due later is delayed
/// again each time it comes back.
pub const MAX_DELAY: Duration = Duration::from_secs(900);

pub type Submitted<'a> = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

/// A boxed store call (object-safe, as [`EraseQueue`]).
pub type Call<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// Where erase jobs go. A trait object, so that the API's type does not grow a parameter for
/// one route.
pub trait EraseQueue: Send + Sync {
    fn submit<'a>(&'a self, job: &'a EraseJob) -> Submitted<'a>;
    /// The job, delivered no earlier than `delay` (at most [`MAX_DELAY`]) from now.
    fn submit_after<'a>(&'a self, job: &'a EraseJob, delay: Duration) -> Submitted<'a>;
    /// A message as it came, unchanged, delivered no earlier than `delay` (at most
    /// [`MAX_DELAY`]) from now: a product event continued or run again later, or set aside on
    /// a failure queue (`likes_core::product_event`).
    fn forward<'a>(&'a self, body: &'a str, delay: Duration) -> Submitted<'a>;
}

/// How long after an erase request a like stamped before it may still be written: the API
/// stamps `liked_at` when a like arrives and writes it within its bound (3 attempts of 3 s,
/// `likes_aws::dynamo::likes::write`), and the by-user index follows the table within a second
/// or so. A job's last sweep starts no earlier than this long after its `requested_at`, so
/// that such a like is found.
pub const SETTLE: Duration = Duration::from_secs(15);

/// A user's pending erasure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pending {
    pub job_id: String,
    /// The latest request's time: the job erases every like made up to it.
    pub requested_at: String,
    /// When its message was last sent to the queue; `None` if no send is known to have worked.
    pub sent_at: Option<String>,
}

/// How long a pending job's message is trusted to be on the queue. A request repeated after
/// this long sends it again: a message the queue lost (its 14-day retention ran out while the
/// worker was down), or a send that failed after the job was recorded. The worker's run is
/// idempotent, so a second message costs a sweep, never a wrong result.
pub const RESEND_AFTER: Duration = Duration::from_secs(15 * 60);

impl Pending {
    /// Whether the request that offered `offered` as a new job id must send the job's message:
    /// it created the job, or the last send is unknown or older than [`RESEND_AFTER`].
    pub fn must_send(&self, offered: &str, now: DateTime<Utc>) -> bool {
        if self.job_id == offered {
            return true;
        }
        match self.sent_at.as_deref().and_then(parse_ts) {
            None => true,
            // More than a minute ahead of this clock: a clock that was wrong, not a send.
            Some(sent) if sent - now > chrono::TimeDelta::minutes(1) => true,
            Some(sent) => (now - sent).to_std().is_ok_and(|age| age >= RESEND_AFTER),
        }
    }

    pub fn job(&self, user: &UserId) -> EraseJob {
        EraseJob {
            job_id: self.job_id.clone(),
            user_id: user.clone(),
            requested_at: self.requested_at.clone(),
            account_deleted: false,
        }
    }
}

/// Pending erasures, one per user at most (`likes_aws::DynamoErasureRequests`).
pub trait ErasureRequests: Send + Sync {
    /// A request made at `at`: the user's pending job with its `requested_at` moved forward to
    /// `at` if later, or, if none is pending, a new one with the id `offered`.
    fn request<'a>(&'a self, user: &'a UserId, offered: &'a str, at: &'a str) -> Call<'a, Pending>;
    /// The user's pending job, read with strong consistency.
    fn read<'a>(&'a self, user: &'a UserId) -> Call<'a, Option<Pending>>;
    /// The job's message was sent at `at`. Nothing if the job is no longer pending.
    fn sent<'a>(&'a self, user: &'a UserId, job_id: &'a str, at: &'a str) -> Call<'a, ()>;
    /// The job erased the likes made up to `erased_to`: it is no longer pending, unless a later
    /// request moved its `requested_at` past that; then that later time, still pending.
    fn finish<'a>(
        &'a self,
        user: &'a UserId,
        job_id: &'a str,
        erased_to: &'a str,
    ) -> Call<'a, Option<String>>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_job_is_the_json_the_worker_reads() {
        let job = EraseJob {
            job_id: "j1".into(),
            user_id: UserId::parse("auth0|abc").unwrap(),
            requested_at: "2026-12-01T10:00:00.000Z".into(),
            account_deleted: false,
        };
        let text = serde_json::to_string(&job).unwrap();
        assert_eq!(
            text,
            r#"{"job_id":"j1","user_id":"auth0|abc","requested_at":"2026-12-01T10:00:00.000Z"}"#
        );
        assert_eq!(serde_json::from_str::<EraseJob>(&text).unwrap(), job);
        // A user id outside the grammar is refused on the way in, as everywhere.
        let bad = r#"{"job_id":"j1","user_id":"a b","requested_at":"x"}"#;
        assert!(serde_json::from_str::<EraseJob>(bad).is_err());
        // An account's erase says so; the field is absent from a person's own.
        let account = EraseJob {
            account_deleted: true,
            ..job
        };
        let text = serde_json::to_string(&account).unwrap();
        assert!(text.ends_with(r#","account_deleted":true}"#), "{text}");
        assert_eq!(serde_json::from_str::<EraseJob>(&text).unwrap(), account);
    }

    #[test]
    fn a_pending_job_is_sent_by_its_creator_and_again_only_when_its_send_is_old_or_unknown() {
        let now = parse_ts("2026-12-01T10:00:00.000Z").unwrap();
        let pending = |sent_at: Option<&str>| Pending {
            job_id: "j1".into(),
            requested_at: "2026-12-01T09:59:00.000Z".into(),
            sent_at: sent_at.map(str::to_owned),
        };
        assert!(pending(None).must_send("j1", now), "its creator sends it");
        assert!(
            pending(None).must_send("j2", now),
            "no send known to have worked"
        );
        assert!(!pending(Some("2026-12-01T09:50:00.000Z")).must_send("j2", now));
        assert!(pending(Some("2026-12-01T09:45:00.000Z")).must_send("j2", now));
        // A send stamped a little ahead (another environment's clock) is trusted; far ahead
        // (a clock that was wrong) it would be trusted for good, so it is not.
        assert!(!pending(Some("2026-12-01T10:00:30.000Z")).must_send("j2", now));
        assert!(pending(Some("2026-12-01T10:05:00.000Z")).must_send("j2", now));
    }
}
