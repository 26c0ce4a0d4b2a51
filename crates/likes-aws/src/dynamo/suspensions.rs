//! The users' moderation state (`likes_core::moderation`), in the pending-erasures table: one
//! item per user ever suspended (`suspension#<user>`: suspended or not, as of when) and one
//! count of users suspended now (`suspension#~count`), recorded as `dynamo::decisions` records
//! every decision: the count changes in the transaction that flips a user's state.

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_core::erase_job::Call;
use likes_core::moderation::{compare, Decided, Suspensions};
use likes_core::{StoreError, UserId};

use super::calls::Item;
use super::decisions::Decisions;
use super::schema::erase_requests::{SUSPENDED, SUSPENDED_COUNT_KEY, SUSPENSION_PREFIX};

#[derive(Clone, Debug)]
pub struct DynamoSuspensions {
    decisions: Decisions,
}

impl DynamoSuspensions {
    /// On the pending-erasures table (`ERASE_REQUESTS_TABLE_NAME`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            decisions: Decisions {
                client,
                table: table.into(),
            },
        }
    }

    fn key(user: &UserId) -> String {
        format!("{SUSPENSION_PREFIX}{user}")
    }
}

fn suspended(item: &Item) -> Result<bool, StoreError> {
    item.get(SUSPENDED)
        .and_then(|v| v.as_bool().ok())
        .copied()
        .ok_or_else(|| StoreError::Internal(format!("a suspension without {SUSPENDED}: {item:?}")))
}

impl Suspensions for DynamoSuspensions {
    fn decide<'a>(&'a self, user: &'a UserId, now: bool, at: &'a str) -> Call<'a, Decided> {
        Box::pin(async move {
            let attrs = [(SUSPENDED, AttributeValue::Bool(now))];
            let delta = if now { 1 } else { -1 };
            self.decisions
                .decide(
                    &Self::key(user),
                    at,
                    suspended,
                    |recorded| compare(recorded.map(|(s, t)| (*s, t)), now, at),
                    &attrs,
                    |flipped| flipped.then_some((SUSPENDED_COUNT_KEY, delta)),
                )
                .await
        })
    }

    fn is_suspended<'a>(&'a self, user: &'a UserId) -> Call<'a, bool> {
        Box::pin(async move {
            match self.decisions.recorded(&Self::key(user), true).await? {
                Some((item, _)) => suspended(&item),
                None => Ok(false),
            }
        })
    }

    fn suspended_count(&self) -> Call<'_, i64> {
        // Strongly: the gate's bound (GATE_TTL) must not wait on a trailing copy too.
        Box::pin(self.decisions.count(SUSPENDED_COUNT_KEY, true))
    }
}
