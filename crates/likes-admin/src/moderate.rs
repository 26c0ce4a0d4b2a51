//! `suspend-user`, `restore-user`: an operator's decision about a user, dated now and applied
//! exactly as the product's `UserSuspended` and `UserRestored` are (`likes_core::moderate`):
//! recorded if it is the latest, then the user's likes and reactions moved out of sight (or
//! back) until they match the recorded state. The product's own decisions and the operator's
//! are one history: the latest `at` wins, whoever sent it.

use likes_aws::{DynamoPolicies, DynamoSuspensions};
use likes_core::moderate::apply;
use likes_core::moderation::SUSPENSION_SETTLE;
use likes_core::policy::{Policies, Policy};
use likes_core::time::now_ts;
use likes_core::PostId;
use likes_core::UserId;
use serde_json::json;

use crate::cli::Cli;
use crate::commands::{operator_sweep, DynamoStores};
use crate::report::{progress, Report};
use crate::AdminError;

pub const TABLE_NEEDED: &str = "suspend-user, restore-user and set-policy need --erase-requests-table (the stack's EraseRequestsTableName output): users' moderation state and posts' policies are recorded there";

/// `set-policy`: the post's policy dated now, recorded as the product's `PostPolicyChanged` is.
pub async fn set_policy(
    state: Option<&DynamoPolicies>,
    post: &PostId,
    policy: &Policy,
) -> Result<Report, AdminError> {
    let state = state.ok_or_else(|| AdminError::Usage(TABLE_NEEDED.into()))?;
    let at = now_ts();
    let decided = state.decide(post, policy, &at).await?;
    if !decided.stands() {
        return Err(AdminError::Incomplete(format!(
            "a policy of post {post} dated at or after {at} is already recorded (the product's clock ahead of this machine's?): nothing was changed"
        )));
    }
    let doc = json!({"post_id": post, "author_id": policy.author, "likes": if policy.likes_on { "on" } else { "off" },
        "counts": policy.counts.as_str(), "likers": policy.likers.as_str(), "decided_at": at});
    Ok(Report::done(
        format!("post {post}'s policy set as of {at}: {doc}; every API environment follows it within 5 s"),
        doc,
    ))
}

pub async fn decide(
    cli: &Cli,
    t: &DynamoStores,
    state: Option<&DynamoSuspensions>,
    user: &UserId,
    suspended: bool,
) -> Result<Report, AdminError> {
    // Checked with the command line; here only if a caller skipped it.
    let state = state.ok_or_else(|| AdminError::Usage(TABLE_NEEDED.into()))?;
    let (command, done, moves) = if suspended {
        ("suspend-user", "suspended", "hidden")
    } else {
        ("restore-user", "restored", "restored")
    };
    let at = now_ts();
    let bar = progress(cli.json, &format!("likes and reactions {moves}"), None);
    let tick = |n: usize| bar.set_position(n as u64);
    let sweep = operator_sweep(&tick);
    let applied = apply(
        &t.likes,
        state,
        user,
        suspended,
        &at,
        &sweep,
        SUSPENSION_SETTLE,
    )
    .await
    .map_err(|e| {
        // Recorded or not, the API may already refuse (or admit) the user's writes while only
        // part of their items moved: say so, and how to finish.
        AdminError::Incomplete(format!(
            "{command} {user} stopped: {e}. The decision dated {at} may be recorded with only part of the user's likes and reactions {moves}; run `likes-admin {command} --user {user}` again to finish (it records a decision dated then, which also overrides any the product sent meanwhile)"
        ))
    })?;
    bar.finish_and_clear();
    let now = if applied.suspended {
        "suspended"
    } else {
        "not suspended"
    };
    if !applied.decided.stands() {
        return Err(AdminError::Incomplete(format!(
            "a decision about {user} dated at or after {at} is already recorded (the product's clock ahead of this machine's?): nothing was changed, and {user} stays {now}. Run `likes-admin {command} --user {user}` again once that time has passed"
        )));
    }
    if applied.suspended != suspended {
        return Err(AdminError::Incomplete(format!(
            "{user} was {done} as of {at}, but a later decision arrived while this ran and now stands: {user} is {now}, and their likes and reactions were moved to match it ({} moves). Run `likes-admin {command} --user {user}` again to decide again",
            applied.moved
        )));
    }
    Ok(Report::done(
        format!(
            "{done} {user} as of {at}: {} likes and reactions {moves} (each post's count follows through the stream)",
            applied.moved
        ),
        json!({"user_id": user, "suspended": suspended, "decided_at": at, "moved": applied.moved}),
    ))
}
