//! `GET /likes/summary`: a feed's counts and the caller's own, for up to 100 posts. A like-only
//! deployment reads as it always did (the count cache, one `BatchGetItem` of counts, one of
//! likes); with other kinds, the Counts items give every kind's count and one batch per kind
//! the caller's reactions.

use std::collections::{BTreeMap, HashMap};

use lambda_http::Request;
use likes_core::reaction::LIKE;
use likes_core::{CountsRead, Kind, PostId, ReactionsStore, UserId};
use serde_json::{json, Value};

use crate::reactions::shown_counts;
use crate::request::summary_ids;
use crate::{public_count, Answer, App};

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    pub(crate) async fn summary(&self, req: &Request, me: &UserId) -> Answer {
        let ids = summary_ids(req)?;
        if !self.reactions.kinds.like_only() {
            return self.summary_of_kinds(&ids, me).await;
        }
        let mut counts: HashMap<PostId, i64> = HashMap::with_capacity(ids.len());
        let mut misses = Vec::new();
        for post in &ids {
            match self.cache.get(post) {
                Some(n) => {
                    counts.insert(post.clone(), n);
                }
                None => misses.push(post.clone()),
            }
        }
        // Two round trips, in parallel: the counts' items, and the caller's likes.
        let fetched = async {
            if misses.is_empty() {
                Ok(HashMap::new())
            } else {
                self.counts.post_counts(&misses).await
            }
        };
        let liked = self.likes.liked_among(me, &ids);
        let (fetched, liked) = futures::try_join!(fetched, liked)?;
        for post in &misses {
            let n = fetched.get(post).copied().unwrap_or(0);
            self.cache.put(post, n);
            counts.insert(post.clone(), n);
        }
        let items: Vec<Value> = ids
            .iter()
            .map(|post| {
                let n = public_count(counts.get(post).copied().unwrap_or(0));
                let mine: &[&str] = if liked.contains(post) { &["like"] } else { &[] };
                json!({
                    "post_id": post,
                    "like_count": n,
                    "liked_by_me": liked.contains(post),
                    "reactions": { "like": n },
                    "my_reactions": mine,
                })
            })
            .collect();
        Ok(json!({ "items": items }))
    }

    /// The summary of a deployment with several kinds: each post's counts per kind and the
    /// caller's own, in two reads in parallel (the Counts items, the caller's reactions' keys).
    pub(crate) async fn summary_of_kinds(&self, ids: &[PostId], me: &UserId) -> Answer {
        let kinds = &self.reactions.kinds;
        let counts = self.counts.kind_counts_among(ids);
        let mine = self.likes.reacted_among(me, ids, kinds);
        let (counts, mine) = futures::try_join!(counts, mine)?;
        let none = BTreeMap::new();
        let items: Vec<Value> = ids
            .iter()
            .map(|post| {
                let post_counts = counts.get(post).unwrap_or(&none);
                let (shown, _) = shown_counts(kinds.iter(), post_counts);
                let like = public_count(post_counts.get(LIKE).copied().unwrap_or(0));
                self.cache.put(post, like);
                let my: &[Kind] = mine.get(post).map_or(&[], Vec::as_slice);
                json!({
                    "post_id": post,
                    "like_count": like,
                    "liked_by_me": my.iter().any(Kind::is_like),
                    "reactions": shown,
                    "my_reactions": my,
                })
            })
            .collect();
        Ok(json!({ "items": items }))
    }
}
