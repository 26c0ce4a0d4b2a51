//! The listing routes: the caller's likes, and who liked a post (a page of them, or which of
//! the users named by `among` did).

use lambda_http::Request;
use std::collections::HashSet;

use likes_core::{CountsRead, PostId, ReactionsStore, StoreError, UserId};
use serde_json::json;

use crate::request::{among_ids, limit, query_param};
use crate::{cursor, page_json, page_json_kept, Answer, App};

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    pub(crate) async fn my_likes(&self, req: &Request, me: &UserId) -> Answer {
        let limit = limit(req)?;
        let after = query_param(req, "cursor")?
            .map(|c| cursor::decode_mine(c, me))
            .transpose()?;
        let page = self.likes.likes_of_user(me, limit, after).await?;
        Ok(page_json(
            &page,
            |last| cursor::encode_mine(me, last),
            |i| json!({ "post_id": &i.post_bucket.post, "liked_at": i.liked_at }),
        ))
    }

    pub(crate) async fn likers(&self, req: &Request, post: &PostId, me: &UserId) -> Answer {
        if let Some(users) = among_ids(req)? {
            // Named by the caller, so shown as named: `among` says whether each liked, which
            // the caller asked about; opaque ids keep the likers it did not name unnamed.
            let likers = self.likes.likers_among(post, &users).await?;
            let left_out = self.left_out(post, me, likers.iter().map(|i| &i.user_id));
            let left_out = left_out.await?;
            let items: Vec<_> = likers
                .iter()
                .filter(|i| !left_out.contains(&i.user_id))
                .map(|i| json!({ "user_id": i.user_id, "liked_at": i.liked_at }))
                .collect();
            return Ok(json!({ "items": items, "next_cursor": null }));
        }
        let limit = limit(req)?;
        let after = query_param(req, "cursor")?
            .map(|c| cursor::decode_likers(&self.liker_ids.open(c)?, post))
            .transpose()?;
        let page = self.likes.likers_of_post(post, limit, after).await?;
        let left_out = self.left_out(post, me, page.items.iter().map(|i| &i.user_id));
        let left_out = left_out.await?;
        Ok(page_json_kept(
            &page,
            |i| !left_out.contains(&i.user_id),
            |last| self.liker_ids.seal(cursor::encode_likers(post, last)),
            |i| json!({ "user_id": self.liker_ids.show(&i.user_id), "liked_at": i.liked_at }),
        ))
    }

    /// Who, of `users`, the post's author leaves out of their own lists (those they block),
    /// when the author (known from the post's policy) is the caller.
    pub(crate) async fn left_out(
        &self,
        post: &PostId,
        me: &UserId,
        users: impl Iterator<Item = &UserId>,
    ) -> Result<HashSet<UserId>, StoreError> {
        let policy = self.policies.in_force(post).await?;
        if policy.author.as_ref() != Some(me) {
            return Ok(HashSet::new());
        }
        self.blocks.blocked_among(me, users).await
    }
}
