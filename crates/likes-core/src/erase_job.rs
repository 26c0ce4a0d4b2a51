//! A person's request to erase their likes (`DELETE /users/me/likes`): the API hands the job to
//! a durable queue and answers 202; a worker runs it (`erase-worker`, SQS-triggered; the queue
//! is `likes_aws::sqs_erase_queue`). SQS keeps the job until a worker has finished it: a worker
//! that crashes or times out leaves the message to reappear after its visibility timeout, and
//! the erase, idempotent, picks up where it was.

use std::future::Future;
use std::pin::Pin;

use serde::{Deserialize, Serialize};

use crate::ids::UserId;
use crate::store::StoreError;

/// What the worker needs: whose likes, up to when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EraseJob {
    pub job_id: String,
    pub user_id: UserId,
    /// Likes made up to this moment are erased; one made after the request is a new like.
    pub requested_at: String,
}

pub type Submitted<'a> = Pin<Box<dyn Future<Output = Result<(), StoreError>> + Send + 'a>>;

/// Where erase jobs go. A trait object, so that the API's type does not grow a parameter for
/// one route.
pub trait EraseQueue: Send + Sync {
    fn submit<'a>(&'a self, job: &'a EraseJob) -> Submitted<'a>;
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
    }
}
