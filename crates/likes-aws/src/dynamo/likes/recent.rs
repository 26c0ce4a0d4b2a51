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
    /// or after `since`, or `None` past `cap` items in all.
    pub(super) async fn read_held_since(
        &self,
        user: &UserId,
        since: &str,
        kinds: &Kinds,
        cap: usize,
    ) -> Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError> {
        // The two indexes at once: a summary waits for one round trip, not two.
        let reactions = async {
            match kinds.like_only() {
                true => Ok(Some(Vec::new())),
                false => self.made_since(&REACTIONS_BY_USER, user, since, cap).await,
            }
        };
        let (likes, reactions) =
            futures::try_join!(self.made_since(&LIKES_BY_USER, user, since, cap), reactions)?;
        let (Some(likes), Some(reactions)) = (likes, reactions) else {
            return Ok(None);
        };
        if likes.len() + reactions.len() > cap {
            return Ok(None);
        }
        let mut held: HashMap<PostId, Vec<Kind>> = HashMap::new();
        for (post, _) in likes {
            held.entry(post).or_default().push(Kind::like());
        }
        for (post, sk) in reactions {
            // A key not written by this API, or of a kind this deployment no longer has, is
            // nobody's reaction here.
            let Some(kind) = Held::of(&sk).kind().and_then(|k| kinds.get(k)) else {
                continue;
            };
            held.entry(post).or_default().push(kind.clone());
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
            let (items, next) = self.user_page(index, user.as_str(), made, from).await?;
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
