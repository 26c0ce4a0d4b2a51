//! `DELETE /users/me/likes`: a person's erase, queued as a job, one pending job per person.

use lambda_http::Request;
use likes_core::erase_job::EraseJob;
use likes_core::time::now_ts;
use likes_core::{CountsRead, ReactionsStore, UserId};
use serde_json::{json, Value};

use crate::request::expect_no_body;
use crate::{Answer, ApiError, App};

/// How long an erase request that joined a job being sent waits for the send to be noted:
/// a send takes tens of milliseconds.
const JOIN_WAIT: std::time::Duration = std::time::Duration::from_millis(50);
const JOIN_WAITS: u32 = 10;

/// The 202's body: the job that will erase the caller's likes made up to `requested_at`.
fn accepted(job: &EraseJob) -> Value {
    json!({ "job_id": job.job_id, "user_id": job.user_id, "status": "accepted",
            "requested_at": job.requested_at })
}

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// Hands the erase to the queue and answers 202 with the job's id: the worker erases
    /// every like the caller made up to now, however long that takes. A caller with a job
    /// pending joins it (its time moves to now) rather than queueing another.
    pub(crate) async fn erase_mine(&self, req: &Request, me: &UserId) -> Answer {
        expect_no_body(req)?;
        let queue = self
            .erase
            .as_ref()
            .ok_or_else(ApiError::erase_unconfigured)?;
        let offered = uuid::Uuid::new_v4().to_string();
        let at = now_ts();
        let Some(erasures) = &self.erasures else {
            let job = EraseJob {
                job_id: offered,
                user_id: me.clone(),
                requested_at: at,
                account_deleted: false,
            };
            queue.submit(&job).await?;
            return Ok(accepted(&job));
        };
        let mut pending = erasures.request(me, &offered, &at).await?;
        // Joined a job created a moment ago whose creator is sending it now: wait for it to be
        // noted as sent, briefly, rather than send it again. Still unsent after that (its
        // creator failed), this request sends it: a 202 always means a job is on the queue.
        let mut waits = 0;
        while pending.job_id != offered && pending.sent_at.is_none() && waits < JOIN_WAITS {
            tokio::time::sleep(JOIN_WAIT).await;
            waits += 1;
            match erasures.read(me).await? {
                Some(now) if now.job_id == pending.job_id => pending = now,
                _ => break,
            }
        }
        let job = pending.job(me);
        if pending.must_send(&offered, chrono::Utc::now()) {
            // Sent before it is noted as sent: a failure in between leaves it noted as unsent,
            // and the caller's retry sends it (a 503 says to retry).
            queue.submit(&job).await?;
            if let Err(e) = erasures.sent(me, &job.job_id, &now_ts()).await {
                // The job is queued; an unnoted send only means a repeat request sends again.
                tracing::warn!(job_id = %job.job_id, error = %e, "erase job sent, not noted as sent");
            }
            tracing::info!(job_id = %job.job_id, user_id = %me, "erase of a user's likes queued");
        } else {
            tracing::info!(job_id = %job.job_id, user_id = %me, "erase request joined the pending job");
        }
        Ok(accepted(&job))
    }
}
