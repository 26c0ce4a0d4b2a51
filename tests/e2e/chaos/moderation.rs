//! The chaos run's moderation: two active users suspended (the product's `UserSuspended` put on
//! the local bus) in the middle of the run, and restored later, while everyone's requests, the
//! faults and the stack's restart go on. Their requests are refused (`403 suspended`) once the
//! API sees the suspension; their likes leave the counts and come back, so the run's end
//! (every bucket exact, every user's last acknowledged state held) covers them too.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use likes_aws::{DynamoLikes, DynamoSuspensions};
use likes_core::erase::EraseStore;
use likes_core::moderation::{Suspensions, GATE_TTL};
use likes_core::UserId;
use serde_json::json;

use crate::common::put_product_event;

/// The users (indexes into the run's users) suspended and then restored.
pub const MODERATED: [usize; 2] = [0, 1];

/// How long after a decision is recorded the API may still answer as before it: the gate's two
/// cached reads (the count, then the user's state), and a margin.
const GATE_BOUND: Duration = Duration::from_secs(2 * GATE_TTL.as_secs() + 2);

/// When the suspension and the restore were put, and when each was seen recorded (and the
/// restore done): what a moderated user's answers may be, by when their request began.
#[derive(Debug, Default)]
pub struct Timeline(Mutex<Times>);

#[derive(Debug, Default, Clone, Copy)]
struct Times {
    suspension_put: Option<Instant>,
    suspension_seen: Option<Instant>,
    restore_put: Option<Instant>,
    restore_seen: Option<Instant>,
    settled: Option<Instant>,
}

impl Timeline {
    fn times(&self) -> Times {
        *self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn mark(&self, f: impl FnOnce(&mut Times)) {
        f(&mut self
            .0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner));
    }

    /// Marks a decision put (`seen`: false) or seen recorded for every moderated user.
    pub fn decided(&self, suspended: bool, seen: bool) {
        let now = Some(Instant::now());
        self.mark(|t| match (suspended, seen) {
            (true, false) => t.suspension_put = now,
            (true, true) => t.suspension_seen = now,
            (false, false) => t.restore_put = now,
            (false, true) => t.restore_seen = now,
        });
    }

    pub fn settled(&self) {
        self.mark(|t| t.settled = Some(Instant::now()));
    }

    /// Whether a request begun at `began` and answered now may have seen the user's items out
    /// of sight or part moved (the suspension put by now, the restore not seen done when it
    /// began): its `changed` is not checked.
    pub fn unsettled(&self, began: Instant) -> bool {
        let t = self.times();
        t.suspension_put.is_some() && t.settled.is_none_or(|done| began < done)
    }

    /// Whether a moderated user's request begun at `began`, answered now with `status` (200 or
    /// 403), answered as the decisions allow: refused only once the suspension was put, and not
    /// begun past the gate's bound after the restore was recorded; accepted never when begun
    /// past the gate's bound after the suspension was recorded and answered before the restore
    /// was put.
    pub fn check(&self, status: u16, began: Instant) -> Result<(), String> {
        let (t, now) = (self.times(), Instant::now());
        match (status, t.suspension_put) {
            (403, None) => Err("refused before any suspension was put".into()),
            (403, Some(_)) if t.restore_seen.is_some_and(|r| began > r + GATE_BOUND) => {
                Err(format!(
                    "refused although begun more than {GATE_BOUND:?} after the restore was recorded"
                ))
            }
            (200, _)
                if t.suspension_seen.is_some_and(|s| began > s + GATE_BOUND)
                    && t.restore_put.is_none_or(|r| now < r) =>
            {
                Err(format!(
                    "accepted although begun more than {GATE_BOUND:?} after the suspension was recorded, and answered before the restore was put"
                ))
            }
            _ => Ok(()),
        }
    }
}

/// Waits until every moderated user's recorded state is `suspended`.
pub async fn wait_recorded(client: &aws_sdk_dynamodb::Client, users: &[String], suspended: bool) {
    let state = DynamoSuspensions::new(client.clone(), "erase-requests");
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        let mut matching = 0;
        for u in MODERATED {
            let id = UserId::parse(&users[u]).expect("a user id");
            let now = state.is_suspended(&id).await.expect("the state read");
            matching += usize::from(now == suspended);
        }
        if matching == MODERATED.len() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not every decision (suspended: {suspended}) recorded within 90 s"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

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

/// The moderated users' items out of sight, as the restore lists them (their user indexes
/// under the hidden owner: a query each, where a scan of the table would slow the run).
pub async fn hidden(client: &aws_sdk_dynamodb::Client, users: &[String]) -> usize {
    let store = DynamoLikes::new(client.clone(), "likes");
    let mut n = 0;
    for u in MODERATED {
        let user = UserId::parse(&users[u]).expect("a user id");
        let mut from = None;
        loop {
            let (page, next) = store.hidden(&user, from).await.expect("the hidden listed");
            n += page.len();
            match next {
                Some(next) => from = Some(next),
                None => break,
            }
        }
    }
    n
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
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}

/// Waits until the restore is recorded for each moderated user and nothing of theirs is
/// hidden, in three polls in a row: the erase queue's worker has converged on the latest
/// decision.
pub async fn wait_restored(client: &aws_sdk_dynamodb::Client, users: &[String]) {
    let state = DynamoSuspensions::new(client.clone(), "erase-requests");
    let deadline = Instant::now() + Duration::from_secs(120);
    let mut clean = 0;
    loop {
        let mut suspended = 0;
        for u in MODERATED {
            let id = UserId::parse(&users[u]).expect("a user id");
            suspended += usize::from(state.is_suspended(&id).await.expect("the state read"));
        }
        let hidden = hidden(client, users).await;
        clean = if suspended == 0 && hidden == 0 {
            clean + 1
        } else {
            0
        };
        if clean == 3 {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "not restored within 120 s: {suspended} still suspended, {hidden} items hidden"
        );
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
}
