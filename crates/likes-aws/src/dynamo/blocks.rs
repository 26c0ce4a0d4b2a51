//! Who blocks whom (`likes_core::block`), in the pending-erasures table beside the users'
//! moderation state and the posts' policies: one item per pair with a decision
//! (`block#<blocker>#<blocked>`: blocking or not, as of when; no user id holds a `#`) and the
//! count of such pairs (`block#~count`), recorded as `dynamo::decisions` records every decision.

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_core::block::{compare, Blocks};
use likes_core::erase_job::Call;
use likes_core::moderation::Decided;
use likes_core::{StoreError, UserId};

use super::calls::Item;
use super::decisions::Decisions;
use super::schema::erase_requests::{BLOCKING, BLOCK_COUNT_KEY, BLOCK_PREFIX};

#[derive(Clone, Debug)]
pub struct DynamoBlocks {
    decisions: Decisions,
}

impl DynamoBlocks {
    /// On the pending-erasures table (`ERASE_REQUESTS_TABLE_NAME`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            decisions: Decisions {
                client,
                table: table.into(),
            },
        }
    }

    fn key(blocker: &UserId, blocked: &UserId) -> String {
        format!("{BLOCK_PREFIX}{blocker}#{blocked}")
    }
}

fn blocking(item: &Item) -> Result<bool, StoreError> {
    item.get(BLOCKING)
        .and_then(|v| v.as_bool().ok())
        .copied()
        .ok_or_else(|| StoreError::Internal(format!("a block without {BLOCKING}: {item:?}")))
}

impl Blocks for DynamoBlocks {
    fn decide<'a>(
        &'a self,
        blocker: &'a UserId,
        blocked: &'a UserId,
        now: bool,
        at: &'a str,
    ) -> Call<'a, Decided> {
        Box::pin(async move {
            let attrs = [(BLOCKING, AttributeValue::Bool(now))];
            self.decisions
                .decide(
                    &Self::key(blocker, blocked),
                    at,
                    blocking,
                    |recorded| compare(recorded.map(|(b, t)| (*b, t)), now, at),
                    &attrs,
                    // A pair's first decision counts it.
                    |first| first.then_some((BLOCK_COUNT_KEY, 1)),
                )
                .await
        })
    }

    fn blocks<'a>(&'a self, blocker: &'a UserId, blocked: &'a UserId) -> Call<'a, bool> {
        Box::pin(async move {
            let key = Self::key(blocker, blocked);
            // Strongly, as a policy: the API's bound on following a change is its cache time.
            match self.decisions.recorded(&key, true).await? {
                Some((item, _)) => blocking(&item),
                None => Ok(false),
            }
        })
    }

    fn pair_count(&self) -> Call<'_, i64> {
        Box::pin(self.decisions.count(BLOCK_COUNT_KEY, true))
    }
}
