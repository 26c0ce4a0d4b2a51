//! The reaction routes (docs/reactions.md): add or remove a reaction of a configured kind, a
//! post's counts per kind with the caller's own, and who reacted with a kind. The like is the
//! kind `like`: its routes (in `lib.rs`) write the same items, through `single` mode's
//! replacement when the deployment has it.

use std::collections::BTreeMap;

use lambda_http::Request;
use likes_core::time::now_ts;
use likes_core::{CountsRead, Kind, Mode, PostId, ReactionsStore, UserId};
use serde_json::{json, Map, Value};

use crate::request::{expect_no_body, limit, query_param, write_token};
use crate::{cursor, page_json_kept, public_count, Answer, ApiError, App};

/// Each configured kind's count (0 when none), and their total: what a client shows. A kind
/// no longer configured is not shown.
pub(crate) fn shown_counts<'a>(
    kinds: impl Iterator<Item = &'a Kind>,
    counts: &BTreeMap<String, i64>,
) -> (Value, i64) {
    let mut shown = Map::new();
    let mut total = 0i64;
    for kind in kinds {
        let n = public_count(counts.get(kind.as_str()).copied().unwrap_or(0));
        total = total.saturating_add(n);
        shown.insert(kind.to_string(), json!(n));
    }
    (Value::Object(shown), total)
}

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// The configured kind spelled `raw`, or a 400 naming it and the kinds there are.
    pub(crate) fn kind(&self, raw: &str) -> Result<Kind, ApiError> {
        self.reactions.kinds.get(raw).cloned().ok_or_else(|| {
            let known: Vec<&str> = self.reactions.kinds.iter().map(Kind::as_str).collect();
            let shown: String = raw.chars().take(64).collect();
            ApiError::bad_request(
                "invalid_kind",
                format!(
                    "kind {shown:?} is not one of this deployment's: {}",
                    known.join(", ")
                ),
            )
        })
    }

    /// Adds `kind`: in `single` mode it replaces the caller's other reaction to the post.
    /// Returns whether it changed, and (`single` mode) what it replaced.
    pub(crate) async fn put_reaction(
        &self,
        req: &Request,
        post: &PostId,
        me: &UserId,
        kind: &Kind,
    ) -> Result<(bool, Option<Option<Kind>>), crate::Failure> {
        expect_no_body(req)?;
        let token = write_token(req)?;
        let at = now_ts();
        Ok(match self.reactions.mode {
            Mode::Multi => (self.likes.react(post, me, kind, &at, &token).await?, None),
            Mode::Single => {
                let done = self.likes.react_only(post, me, kind, &at, &token).await?;
                (done.changed, Some(done.replaced))
            }
        })
    }

    pub(crate) async fn react(
        &self,
        req: &Request,
        post: &PostId,
        me: &UserId,
        raw: &str,
    ) -> Answer {
        let kind = self.kind(raw)?;
        let (changed, replaced) = self.put_reaction(req, post, me, &kind).await?;
        let mut body = json!({
            "post_id": post, "user_id": me, "kind": kind, "reacted": true, "changed": changed,
        });
        if let Some(replaced) = replaced {
            body["replaced"] = json!(replaced);
        }
        Ok(body)
    }

    pub(crate) async fn unreact(
        &self,
        req: &Request,
        post: &PostId,
        me: &UserId,
        raw: &str,
    ) -> Answer {
        let kind = self.kind(raw)?;
        expect_no_body(req)?;
        let token = write_token(req)?;
        let changed = self.likes.unreact(post, me, &kind, &token).await?;
        Ok(json!({
            "post_id": post, "user_id": me, "kind": kind, "reacted": false, "changed": changed,
        }))
    }

    /// Counts per kind (eventually consistent: from the count cache, or shown marked when
    /// DynamoDB cannot serve them) and the caller's own (strongly consistent).
    pub(crate) async fn post_reactions(&self, post: &PostId, me: &UserId) -> Answer {
        let counts = self.kind_counts_of_post(post);
        let mine = self.likes.reactions_of(post, me);
        let (counts, mine) = futures::try_join!(counts, mine)?;
        let (shown, total) = match counts.value() {
            Some(c) => {
                let (shown, total) = shown_counts(self.reactions.kinds.iter(), c);
                (shown, json!(total))
            }
            None => (Value::Null, Value::Null),
        };
        let mine: Vec<&Kind> = mine
            .iter()
            .filter(|k| self.reactions.kinds.get(k.as_str()).is_some())
            .collect();
        let mut answer = Map::new();
        answer.insert("post_id".to_owned(), json!(post));
        answer.insert("counts".to_owned(), shown);
        answer.insert("total".to_owned(), total);
        answer.insert("mine".to_owned(), json!(mine));
        counts.mark(&mut answer);
        Ok(Value::Object(answer))
    }

    /// Who reacted with `kind`, newest first, paged as the likers are.
    pub(crate) async fn reactors(
        &self,
        req: &Request,
        post: &PostId,
        raw: &str,
        me: &UserId,
    ) -> Answer {
        let kind = self.kind(raw)?;
        let limit = limit(req)?;
        let after = query_param(req, "cursor")?
            .map(|c| cursor::decode_likers(&self.liker_ids.open(c)?, post))
            .transpose()?;
        let page = self
            .likes
            .reactors_of_post(post, &kind, limit, after)
            .await?;
        let left_out = self.left_out(post, me, page.items.iter().map(|i| &i.user_id));
        let left_out = left_out.await?;
        Ok(page_json_kept(
            &page,
            |i| !left_out.contains(&i.user_id),
            |last| self.liker_ids.seal(cursor::encode_likers(post, last)),
            |i| json!({ "user_id": self.liker_ids.show(&i.user_id), "reacted_at": i.liked_at }),
        ))
    }
}
