//! `GET /likes/summary`: a feed's counts and the caller's own, for up to 100 posts, in two
//! reads in parallel. Counts: one `BatchGetItem` of the Counts items the cache lacks (a feed
//! takes them up to the feed age old, `count_cache`), whatever the number of kinds; counts
//! DynamoDB cannot serve are shown marked (`count_reads`), not a 503. The caller's own
//! (`SummaryMine`, docs/api.md): `strong`, one strongly consistent batch of the posts' keys per
//! kind; `fast` with `since`, one query of the caller's likes (and one of their reactions)
//! made since the feed's oldest post.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use lambda_http::Request;
use likes_aws::env::SummaryMine;
use likes_core::reaction::LIKE;
use likes_core::time::format_ts;
use likes_core::{CountsRead, Kind, PostId, ReactionsStore, StoreError, UserId};
use serde_json::{json, Map, Value};

use crate::count_reads::Shown;
use crate::policies::hide_counts;
use crate::reactions::shown_counts;
use crate::request::{summary_ids, summary_since};
use crate::{public_count, Answer, App};
use likes_core::policy::InForce;

/// How much earlier than the feed's oldest post a like of it may be stamped: the product's
/// clock (its posts' times) and the API's (`liked_at`) may disagree by this much.
pub const SINCE_SKEW: Duration = Duration::from_secs(300);
/// Most likes and reactions made since `since` that a summary reads from the caller's index
/// (a few read units): past it, the posts' keys are read instead (strongly, as `strong` does).
pub const SINCE_CAP: usize = 300;

/// A summary's item: the counts as `shown` (null when unavailable), marked when not fresh.
fn item<T>(
    post: &PostId,
    shown: &Shown<T>,
    like_count: Option<i64>,
    reactions: Option<Value>,
    my: &[Kind],
) -> Value {
    let mut item = Map::new();
    item.insert("post_id".to_owned(), json!(post));
    item.insert("like_count".to_owned(), json!(like_count));
    item.insert(
        "liked_by_me".to_owned(),
        json!(my.iter().any(Kind::is_like)),
    );
    item.insert("reactions".to_owned(), reactions.unwrap_or(Value::Null));
    item.insert("my_reactions".to_owned(), json!(my));
    shown.mark(&mut item);
    Value::Object(item)
}

/// The items, each post's counts hidden where its policy keeps them from `me` (`policies`, in
/// the items' order).
fn hidden_where(
    items: impl Iterator<Item = Value>,
    policies: &[InForce],
    me: &UserId,
) -> Vec<Value> {
    items
        .zip(policies)
        .map(|(mut item, policy)| {
            if let (false, Some(i)) = (policy.shows_counts_to(me), item.as_object_mut()) {
                hide_counts(i);
            }
            item
        })
        .collect()
}

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    pub(crate) async fn summary(&self, req: &Request, me: &UserId) -> Answer {
        let ids = summary_ids(req)?;
        let since = summary_since(req)?;
        let policies = async {
            Ok::<_, StoreError>(
                self.policies
                    .for_counts_all(&ids, self.shared.as_ref())
                    .await,
            )
        };
        let items: Vec<Value> = if !self.reactions.kinds.like_only() {
            let counts = self.kind_counts_of(&ids);
            let (counts, mine, policies) =
                futures::try_join!(counts, self.mine(me, &ids, since), policies)?;
            let kinds = &self.reactions.kinds;
            let items = ids.iter().map(|post| {
                let shown = counts.get(post).unwrap_or(&Shown::Unavailable);
                let value = shown.value();
                let reactions = value.map(|c| shown_counts(kinds.iter(), c).0);
                let like = value.map(|c| public_count(c.get(LIKE).copied().unwrap_or(0)));
                let my: &[Kind] = mine.get(post).map_or(&[], Vec::as_slice);
                item(post, shown, like, reactions, my)
            });
            hidden_where(items, &policies, me)
        } else {
            let counts = self.like_counts(&ids);
            let (counts, mine, policies) =
                futures::try_join!(counts, self.mine(me, &ids, since), policies)?;
            let items = ids.iter().map(|post| {
                let shown = counts.get(post).unwrap_or(&Shown::Unavailable);
                let n = shown.value().map(|n| public_count(*n));
                let my: &[Kind] = mine.get(post).map_or(&[], Vec::as_slice);
                let reactions = n.map(|n| json!({ LIKE: n }));
                item(post, shown, n, reactions, my)
            });
            hidden_where(items, &policies, me)
        };
        Ok(json!({ "items": items }))
    }

    /// What the caller holds among `ids`, as `SummaryMine` reads it.
    async fn mine(
        &self,
        me: &UserId,
        ids: &[PostId],
        since: Option<chrono::DateTime<chrono::Utc>>,
    ) -> Result<HashMap<PostId, Vec<Kind>>, StoreError> {
        let kinds = &self.reactions.kinds;
        if let (SummaryMine::Fast, Some(since)) = (self.summary_mine, since) {
            let from =
                format_ts(since - chrono::Duration::from_std(SINCE_SKEW).unwrap_or_default());
            let held = self.likes.held_since(me, &from, kinds, SINCE_CAP);
            if let Some(held) = held.await? {
                let wanted: HashSet<&PostId> = ids.iter().collect();
                return Ok(held
                    .into_iter()
                    .filter(|(p, _)| wanted.contains(p))
                    .collect());
            }
        }
        self.likes.reacted_among(me, ids, kinds).await
    }
}
