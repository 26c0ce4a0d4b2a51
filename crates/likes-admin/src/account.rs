//! `erase-user`: a deleted account. The same procedure as a person's own erase
//! (`likes_core::erase::erase_user_settled`: sweep, wait for the settle, sweep again), of every
//! like and reaction whenever made; then a last sweep queued on the erase queue for when every
//! access token issued before the deletion has expired (the erase worker defers it until then:
//! `erase_worker`, `account_deleted`), so that no like made with such a token survives.

use likes_aws::sqs_erase_queue::SqsEraseQueue;
use likes_core::erase::erase_user_settled;
use likes_core::erase_job::{EraseJob, EraseQueue, SETTLE};
use likes_core::time::now_ts;
use likes_core::UserId;
use serde_json::json;

use crate::cli::Cli;
use crate::commands::{confirm, likes_of_user, operator_sweep, DynamoStores};
use crate::report::{progress, Report};
use crate::AdminError;

pub async fn erase_account(
    cli: &Cli,
    t: &DynamoStores,
    queue: Option<&SqsEraseQueue>,
    user: &UserId,
    dry_run: bool,
) -> Result<Report, AdminError> {
    let found = likes_of_user(t, user).await?;
    if dry_run {
        return Ok(Report::done(
            format!("erase-user {user}: would delete {found} likes (the index's count, eventually consistent; dry run: nothing changed)"),
            json!({"user_id": user, "would_delete": found, "dry_run": true}),
        ));
    }
    // Checked with the command line; here only if a caller skipped it.
    let queue = queue.ok_or_else(|| AdminError::Usage(QUEUE_NEEDED.into()))?;
    confirm(
        cli,
        &format!("erase-user {user} ({found} likes)"),
        user.as_str(),
    )?;
    let deleted_at = now_ts();
    let bar = progress(cli.json, "likes deleted", Some(found as u64));
    let tick = |n: usize| bar.set_position(n as u64);
    let sweep = operator_sweep(&tick);
    let n = erase_user_settled(&t.likes, user, &sweep, &deleted_at, SETTLE).await?;
    bar.finish_and_clear();
    let job = EraseJob {
        job_id: format!("account-{}", uuid::Uuid::new_v4()),
        user_id: user.clone(),
        requested_at: deleted_at.clone(),
        account_deleted: true,
    };
    // The likes are gone, the last sweep not yet queued: an error here names what to run.
    queue.submit(&job).await.map_err(|e| {
        AdminError::Incomplete(format!(
            "erased {n} likes of {user}, but the last sweep (for likes made with access tokens issued before now) was not queued: {e}. Run `likes-admin erase-user --user {user} --yes` again"
        ))
    })?;
    Ok(Report::done(
        format!("erased {n} likes of {user}; a last sweep is queued (job {}) for when every access token issued before {deleted_at} has expired (the erase worker's MaxTokenLifetime)", job.job_id),
        json!({"user_id": user, "deleted": n, "deleted_at": deleted_at, "final_sweep_job": job.job_id}),
    ))
}

pub const QUEUE_NEEDED: &str = "erase-user needs --erase-queue-url (the stack's EraseQueueUrl output): after the erase, a last sweep is queued there for when every access token issued before it has expired";
