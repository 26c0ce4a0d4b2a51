//! What a user made since a time, from their own indexes (`by_user`, `by_reactor`): a feed
//! summary's "mine" in one or two queries instead of a key per post and kind
//! (`SummaryMine=fast`, docs/api.md). An index query is eventually consistent: an index trails
//! its table.

use std::collections::HashMap;

use likes_core::reaction::Held;
use likes_core::{Kind, Kinds, PostId, StoreError, UserId};

use super::erase::{Made, UserIndex, LIKES_BY_USER, REACTIONS_BY_USER};
use super::DynamoLikes;

impl DynamoLikes {
    /// The user's likes and (unless the deployment is like-only) reactions of `kinds` made at
    /// or after `since`, or `None` past `cap` items.
    pub(super) async fn read_held_since(
        &self,
        user: &UserId,
        since: &str,
        kinds: &Kinds,
        cap: usize,
    ) -> Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError> {
        let mut held: HashMap<PostId, Vec<Kind>> = HashMap::new();
        let mut budget = cap;
        let Some(likes) = self.made_since(&LIKES_BY_USER, user, since, budget).await? else {
            return Ok(None);
        };
        budget -= likes.len();
        for (post, _) in likes {
            held.entry(post).or_default().push(Kind::like());
        }
        if !kinds.like_only() {
            let Some(others) = self
                .made_since(&REACTIONS_BY_USER, user, since, budget)
                .await?
            else {
                return Ok(None);
            };
            for (post, sk) in others {
                // A key not written by this API, or of a kind this deployment no longer has,
                // is nobody's reaction here.
                let Some(kind) = Held::of(&sk).kind().and_then(|k| kinds.get(k)) else {
                    continue;
                };
                held.entry(post).or_default().push(kind.clone());
            }
        }
        held.values_mut().for_each(|k| k.sort());
        Ok(Some(held))
    }

    /// Every (post, sort key) of `index` for `user` made at or after `since`, page by page, or
    /// `None` once more than `cap`.
    async fn made_since(
        &self,
        index: &UserIndex,
        user: &UserId,
        since: &str,
        cap: usize,
    ) -> Result<Option<Vec<(PostId, String)>>, StoreError> {
        let mut found = Vec::new();
        let mut from = None;
        loop {
            let made = Made::Since(since, cap + 1 - found.len());
            let (items, next) = self.user_page(index, user, made, from).await?;
            found.extend(items.into_iter().map(|(b, sk)| (b.post, sk)));
            if found.len() > cap {
                return Ok(None);
            }
            match next {
                Some(key) => from = Some(key),
                None => return Ok(Some(found)),
            }
        }
    }
}
