//! The posts' policies (`likes_core::policy`), in the pending-erasures table beside the users'
//! moderation state: one item per post with a policy (`policy#<post>`: its author and settings,
//! as of when) and the count of posts with one (`policy#~count`), recorded as
//! `dynamo::decisions` records every decision.

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_core::erase_job::Call;
use likes_core::moderation::Decided;
use likes_core::policy::{compare, Audience, Policies, Policy};
use likes_core::{PostId, StoreError, UserId};

use super::calls::Item;
use super::decisions::Decisions;
use super::s;
use super::schema::erase_requests::{
    AUTHOR, COUNTS, LIKERS, LIKES_ON, POLICY_COUNT_KEY, POLICY_PREFIX,
};

#[derive(Clone, Debug)]
pub struct DynamoPolicies {
    decisions: Decisions,
}

impl DynamoPolicies {
    /// On the pending-erasures table (`ERASE_REQUESTS_TABLE_NAME`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            decisions: Decisions {
                client,
                table: table.into(),
            },
        }
    }

    fn key(post: &PostId) -> String {
        format!("{POLICY_PREFIX}{post}")
    }
}

fn policy(item: &Item) -> Result<Policy, StoreError> {
    let text = |k: &str| item.get(k).and_then(|v| v.as_s().ok());
    let audience = |k: &str| text(k).and_then(|a| Audience::parse(a));
    let author = text(AUTHOR).and_then(|a| UserId::parse(a).ok());
    let likes_on = item.get(LIKES_ON).and_then(|v| v.as_bool().ok()).copied();
    match (author, likes_on, audience(COUNTS), audience(LIKERS)) {
        (Some(author), Some(likes_on), Some(counts), Some(likers)) => Ok(Policy {
            author,
            likes_on,
            counts,
            likers,
        }),
        _ => Err(StoreError::Internal(format!(
            "a policy item not as written: {item:?}"
        ))),
    }
}

impl Policies for DynamoPolicies {
    fn decide<'a>(&'a self, post: &'a PostId, new: &'a Policy, at: &'a str) -> Call<'a, Decided> {
        Box::pin(async move {
            let attrs = [
                (AUTHOR, s(new.author.as_str())),
                (LIKES_ON, AttributeValue::Bool(new.likes_on)),
                (COUNTS, s(new.counts.as_str())),
                (LIKERS, s(new.likers.as_str())),
            ];
            self.decisions
                .decide(
                    &Self::key(post),
                    at,
                    policy,
                    |recorded| compare(recorded, new, at),
                    &attrs,
                    // A post's first policy counts it; later ones replace it.
                    |first| first.then_some((POLICY_COUNT_KEY, 1)),
                )
                .await
        })
    }

    fn policy<'a>(&'a self, post: &'a PostId) -> Call<'a, Option<Policy>> {
        Box::pin(async move {
            // Strongly: the API's bound on following a change must not wait on a trailing copy.
            match self.decisions.recorded(&Self::key(post), true).await? {
                Some((item, _)) => policy(&item).map(Some),
                None => Ok(None),
            }
        })
    }

    fn policy_count(&self) -> Call<'_, i64> {
        Box::pin(self.decisions.count(POLICY_COUNT_KEY, true))
    }
}
