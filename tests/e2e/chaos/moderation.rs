//! The chaos run's moderation: two active users suspended (the product's `UserSuspended` put on
//! the local bus) in the middle of the run, and restored later, while everyone's requests, the
//! faults and the stack's restart go on. Their requests are refused (`403 suspended`) once the
//! API sees the suspension; their likes leave the counts and come back, so the run's end
//! (every bucket exact, every user's last acknowledged state held) covers them too.

use std::time::{Duration, Instant};

use likes_aws::DynamoSuspensions;
use likes_core::control::unhidden;
use likes_core::moderation::Suspensions;
use likes_core::UserId;
use serde_json::json;

use crate::common::put_product_event;

/// The users (indexes into the run's users) suspended and then restored.
pub const MODERATED: [usize; 2] = [0, 1];

/// Puts `UserSuspended` (or `UserRestored`) for each moderated user, dated now.
pub async fn decide(endpoint: &str, users: &[String], suspended: bool) {
    let detail_type = if suspended {
        "UserSuspended"
    } else {
        "UserRestored"
    };
    let at = likes_core::time::now_ts();
    for u in MODERATED {
        let detail = json!({"user_id": users[u], "at": at});
        put_product_event(endpoint, detail_type, &detail).await;
    }
}

/// The moderated users' items out of sight (consistent scan of the Likes table).
pub async fn hidden(client: &aws_sdk_dynamodb::Client, users: &[String]) -> usize {
    let owned = |sk: &str| MODERATED.iter().any(|u| sk.starts_with(users[*u].as_str()));
    likes_harness::scan(client, "likes")
        .await
        .iter()
        .filter_map(|item| item.get("user_id").and_then(|v| v.as_s().ok()))
        .filter(|sk| unhidden(sk).is_some_and(owned))
        .count()
}

/// Waits until the suspension has moved something of theirs out of sight (the worker ran).
pub async fn wait_hidden(client: &aws_sdk_dynamodb::Client, users: &[String]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let n = hidden(client, users).await;
        if n > 0 {
            return n;
        }
        assert!(
            Instant::now() < deadline,
            "the suspension hid nothing of {MODERATED:?} within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}

/// Waits until the restore is recorded for each moderated user and nothing of theirs is
/// hidden any more: the erase queue's worker has converged on the latest decision.
pub async fn wait_restored(client: &aws_sdk_dynamodb::Client, users: &[String]) {
    let state = DynamoSuspensions::new(client.clone(), "erase-requests");
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let mut suspended = 0;
        for u in MODERATED {
            let id = UserId::parse(&users[u]).expect("a user id");
            suspended += usize::from(state.is_suspended(&id).await.expect("the state read"));
        }
        let hidden = hidden(client, users).await;
        if suspended == 0 && hidden == 0 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not restored within 120 s: {suspended} still suspended, {hidden} items hidden"
        );
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
}
