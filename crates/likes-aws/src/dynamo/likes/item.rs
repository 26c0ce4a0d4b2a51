//! What a write request names and writes: the like's item, or a reaction's (docs/reactions.md),
//! in one place for the like's path (`write`) and `single` mode's (`single`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use likes_core::reaction::kind_key;
use likes_core::{Kind, PostBucket, PostId, UserId, WriteToken};

use super::reaction_key;
use crate::dynamo::s;
use crate::dynamo::schema::likes::{KIND_KEY, LIKED_AT, POST_ID, REACTED_AT, REACTOR, TOKEN};

/// One request to add or remove a reaction (a like is the kind `like`): whose, of which post,
/// which kind, and its token.
pub(super) struct Request<'a> {
    pub post: &'a PostId,
    pub user: &'a UserId,
    pub kind: &'a Kind,
    pub token: &'a WriteToken,
}

impl Request<'_> {
    /// The key of the item the request writes.
    pub(super) fn key(&self) -> HashMap<String, AttributeValue> {
        reaction_key(self.post, self.user, self.kind)
    }

    /// The item a request writes: a like as it always was, a reaction with its own time
    /// attribute and its two indexes' keys (`schema::likes`).
    pub(super) fn item(&self, at: &str) -> HashMap<String, AttributeValue> {
        let mut item = self.key();
        item.insert(POST_ID.to_owned(), s(self.post.as_str()));
        item.insert(TOKEN.to_owned(), s(self.token.as_str()));
        if self.kind.is_like() {
            item.insert(LIKED_AT.to_owned(), s(at));
        } else {
            let bucket = PostBucket::for_like(self.post, self.user);
            item.insert(REACTED_AT.to_owned(), s(at));
            item.insert(KIND_KEY.to_owned(), s(kind_key(&bucket, self.kind)));
            item.insert(REACTOR.to_owned(), s(self.user.as_str()));
        }
        item
    }
}
