//! `GET /likes/summary`: a feed's counts and the caller's own, for up to 100 posts. A like-only
//! deployment reads as it always did (one `BatchGetItem` of the counts the cache lacks, one of
//! likes); with other kinds, the Counts items the cache lacks give every kind's count, and one
//! batch per kind the caller's reactions. Counts DynamoDB cannot serve are shown marked
//! (`count_reads`), not a 503.

use lambda_http::Request;
use likes_core::reaction::LIKE;
use likes_core::{CountsRead, Kind, PostId, ReactionsStore, UserId};
use serde_json::{json, Map, Value};

use crate::count_reads::Shown;
use crate::reactions::shown_counts;
use crate::request::summary_ids;
use crate::{public_count, Answer, App};

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

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    pub(crate) async fn summary(&self, req: &Request, me: &UserId) -> Answer {
        let ids = summary_ids(req)?;
        if !self.reactions.kinds.like_only() {
            return self.summary_of_kinds(&ids, me).await;
        }
        // Two round trips, in parallel: the counts' items, and the caller's likes.
        let counts = self.like_counts(&ids);
        let liked = self.likes.liked_among(me, &ids);
        let (counts, liked) = futures::try_join!(counts, liked)?;
        let items: Vec<Value> = ids
            .iter()
            .map(|post| {
                let shown = counts.get(post).unwrap_or(&Shown::Unavailable);
                let n = shown.value().map(|n| public_count(*n));
                let mine = if liked.contains(post) {
                    vec![Kind::like()]
                } else {
                    vec![]
                };
                let reactions = n.map(|n| json!({ LIKE: n }));
                item(post, shown, n, reactions, &mine)
            })
            .collect();
        Ok(json!({ "items": items }))
    }

    /// The summary of a deployment with several kinds: each post's counts per kind and the
    /// caller's own, in two reads in parallel (the Counts items the cache lacks, the caller's
    /// reactions' keys).
    pub(crate) async fn summary_of_kinds(&self, ids: &[PostId], me: &UserId) -> Answer {
        let kinds = &self.reactions.kinds;
        let counts = self.kind_counts_of(ids);
        let mine = self.likes.reacted_among(me, ids, kinds);
        let (counts, mine) = futures::try_join!(counts, mine)?;
        let items: Vec<Value> = ids
            .iter()
            .map(|post| {
                let shown = counts.get(post).unwrap_or(&Shown::Unavailable);
                let value = shown.value();
                let reactions = value.map(|c| shown_counts(kinds.iter(), c).0);
                let like = value.map(|c| public_count(c.get(LIKE).copied().unwrap_or(0)));
                let my: &[Kind] = mine.get(post).map_or(&[], Vec::as_slice);
                item(post, shown, like, reactions, my)
            })
            .collect();
        Ok(json!({ "items": items }))
    }
}
