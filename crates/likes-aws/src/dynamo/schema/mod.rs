//! The tables, as data.
//!
//! `template.yaml` deploys these tables; the local stack and the integration tests create them
//! from the definitions below. `tests::template_matches_schema` fails when the two drift apart,
//! so there is one schema with two spellings and a guard between them.

use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType,
    LocalSecondaryIndex, Projection, ProjectionType, ScalarAttributeType, StreamSpecification,
    StreamViewType, TimeToLiveSpecification,
};
use aws_sdk_dynamodb::Client;

use likes_core::StoreError;

use super::classify::{build, classify};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttrType {
    S,
    N,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Key {
    pub hash: &'static str,
    pub range: Option<&'static str>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Index {
    pub name: &'static str,
    pub key: Key,
    /// Every index here projects keys only: the keys already carry everything its queries return.
    pub projection: &'static str,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableDef {
    /// The CloudFormation logical id in `template.yaml`.
    pub logical_id: &'static str,
    pub attributes: &'static [(&'static str, AttrType)],
    pub key: Key,
    pub local_indexes: &'static [Index],
    pub global_indexes: &'static [Index],
    pub stream_view: Option<&'static str>,
    /// The attribute DynamoDB's TTL expires items by, if any.
    pub ttl_attribute: Option<&'static str>,
}

pub mod likes {
    pub const PK: &str = "post_bucket";
    pub const SK: &str = "user_id";
    pub const POST_ID: &str = "post_id";
    pub const LIKED_AT: &str = "liked_at";
    /// The token of the request that wrote a like.
    pub const TOKEN: &str = "tok";
    /// A hidden copy's move (`dynamo::likes::hide`): a fresh id per hide, so that a restore
    /// deletes the copy it read and never one a racing suspension made since (the same time and
    /// token, copied from the same like).
    pub const MOVED: &str = "moved";
    /// Request markers: what a named request did (`like`, `unlike`, or its `-noop`).
    pub const OP: &str = "op";
    /// When a control item (a marker, a fence, a window entry) expires: the table's TTL
    /// attribute, so that none outlives its use.
    pub const EXPIRES_AT: &str = "expires_at";
    /// Recount window entries (`likes_core::control::window_key`, one per change, its sequence
    /// number in the key): the change's event (`I` like, `R` unlike).
    pub const EVENT: &str = "ev";
    pub const BY_USER: &str = "by_user";
    pub const BY_TIME: &str = "by_time";
    /// A reaction other than the like (`likes_core::reaction`): when it was made (its own
    /// attribute, not `liked_at`, so that no like index sees it), its `by_kind` key
    /// (`likes_core::reaction::kind_key`) and its user (`by_reactor`'s key).
    pub const REACTED_AT: &str = "reacted_at";
    pub const KIND_KEY: &str = "kind_key";
    pub const REACTOR: &str = "reactor";
    /// A named `single`-mode reaction's marker: the kind it replaced.
    pub const REPLACED: &str = "rp";
    /// Who reacted to a post with a kind, newest first (the likers' `by_time`, for reactions).
    pub const BY_KIND: &str = "by_kind";
    /// A user's reactions (the likes' `by_user`, for reactions): what an erase sweeps.
    pub const BY_REACTOR: &str = "by_reactor";
}

pub mod counts {
    /// One item per post; its per-bucket attributes are named in `dynamo::counts`.
    pub const PK: &str = "post_id";
    pub const UPDATED_AT: &str = "updated_at";
    /// A post's recount lease, on the post's item: the job holding it, its beat (incremented
    /// at each renewal) and its term (seconds within which it is renewed).
    pub const LEASE_JOB: &str = "lj";
    pub const LEASE_BEAT: &str = "lb";
    pub const LEASE_TERM: &str = "lt";
    /// A repair note's key is `repair#<post_id>` (no post id holds a `#`, so none is a post's),
    /// with the post, when it was noted (epoch ms), the note's own id (new each time it is
    /// written: what a clear is conditional on) and the lowest unapplied sequence number.
    pub const NOTE_PREFIX: &str = "repair#";
    pub const NOTE_POST: &str = "post";
    pub const NOTE_MS: &str = "noted_ms";
    pub const NOTE_ID: &str = "note_id";
    pub const NOTE_FROM: &str = "from_seq";
}

/// The events function's state (`dynamo::suppression`, `dynamo::milestones`): one item per
/// (user, post, kind) that notified within its window, and one per post that reached a milestone.
pub mod event_state {
    use likes_core::{Kind, PostId, UserId};

    pub const PK: &str = "pk";
    /// When a suppression item expires: the table's TTL attribute. Milestone items have none:
    /// a milestone is announced once for good.
    pub const EXPIRES_AT: &str = "expires_at";
    /// A suppression item: the current window's notifying like (its sequence number), when it
    /// was created (epoch seconds), the unlike that retracted it; the same of the window before.
    pub const NOTIFIED: &str = "n";
    pub const NOTIFIED_AT: &str = "nt";
    pub const RETRACTED: &str = "r";
    pub const PREV_NOTIFIED: &str = "pn";
    pub const PREV_AT: &str = "pt";
    pub const PREV_RETRACTED: &str = "pr";
    /// A milestone item: the highest milestone announced, the highest before the last
    /// announcement, and the record (bucket, sequence number) it was announced for.
    pub const ANNOUNCED: &str = "m";
    pub const BEFORE: &str = "mf";
    pub const BY_BUCKET: &str = "mb";
    pub const BY_SEQ: &str = "ms";

    /// The key of a (user, post, kind)'s suppression item: `n#{post}#{user}` for the like, as
    /// it was before reactions (a like-only deployment's items keep their keys), and
    /// `n#{post}#{user}#{kind}` for another kind. `#` is outside the id and kind grammars, so
    /// the key reads back unambiguously.
    pub fn pair_key(post: &PostId, user: &UserId, kind: &Kind) -> String {
        if kind.is_like() {
            format!("n#{post}#{user}")
        } else {
            format!("n#{post}#{user}#{kind}")
        }
    }

    /// The key of a post's milestone item.
    pub fn milestone_key(post: &PostId) -> String {
        format!("m#{post}")
    }

    #[cfg(test)]
    mod tests {
        use super::*;

        #[test]
        fn a_likes_key_is_as_it_was_and_a_reactions_adds_its_kind() {
            let post = PostId::parse("urn:post:42").unwrap();
            let user = UserId::parse("auth0|abc").unwrap();
            let love = Kind::parse("love").unwrap();
            // Pinned: stored items are found under these keys.
            assert_eq!(
                pair_key(&post, &user, &Kind::like()),
                "n#urn:post:42#auth0|abc"
            );
            assert_eq!(
                pair_key(&post, &user, &love),
                "n#urn:post:42#auth0|abc#love"
            );
        }
    }
}

/// Named requests' markers (`dynamo::likes::write`), in their own table when the deployment
/// has one: keyed by the user, so that no post's partition, and no item collection under the
/// Likes table's LSI, holds them.
pub mod markers {
    use likes_core::{Kind, PostId, WriteToken};

    pub const PK: &str = "user_id";
    pub const SK: &str = "request";
    /// What the request did, and when the marker expires (the table's TTL attribute): spelled
    /// as in the Likes table's markers, so that one write builds either.
    pub use super::likes::{EXPIRES_AT, OP};

    /// The sort key of the user's request named `token` on `post` (and, for a reaction other
    /// than the like, its kind). `#` is outside the three grammars, so the key reads back
    /// unambiguously.
    pub fn request_key(post: &PostId, kind: &Kind, token: &WriteToken) -> String {
        match kind.is_like() {
            true => format!("{post}#{}", token.as_str()),
            false => format!("{post}#{kind}#{}", token.as_str()),
        }
    }
}

/// Pending erasures (`dynamo::erasures`): one item per user whose erase job is pending.
pub mod erase_requests {
    pub const PK: &str = "user_id";
    pub const JOB_ID: &str = "job_id";
    /// The latest request's time (`likes_core::time`): the job erases the likes made up to it.
    pub const REQUESTED_AT: &str = "requested_at";
    /// When the job's message was last sent to the erase queue.
    pub const SENT_AT: &str = "sent_at";
    /// A user's moderation state shares the table under `suspension#<user>` (no user id holds a
    /// `#`): suspended or not, as of when (`dynamo::suspensions`).
    pub const SUSPENSION_PREFIX: &str = "suspension#";
    pub const SUSPENDED: &str = "suspended";
    pub const DECIDED_AT: &str = "decided_at";
    /// How many users are suspended: the item `suspension#~count`, attribute `n`.
    pub const SUSPENDED_COUNT_KEY: &str = "suspension#~count";
    pub const COUNT: &str = "n";
    /// A post's policy shares it under `policy#<post>` (`dynamo::policies`): its author, whether
    /// it takes likes, who sees its counts and its likers, as of `decided_at`.
    pub const POLICY_PREFIX: &str = "policy#";
    pub const AUTHOR: &str = "author_id";
    pub const LIKES_ON: &str = "likes_on";
    pub const COUNTS: &str = "counts";
    pub const LIKERS: &str = "likers";
    /// How many posts have a policy: the item `policy#~count`, attribute `n`.
    pub const POLICY_COUNT_KEY: &str = "policy#~count";
    /// Who blocks whom shares it under `block#<blocker>#<blocked>` (`dynamo::blocks`): blocking
    /// or not, as of `decided_at`.
    pub const BLOCK_PREFIX: &str = "block#";
    pub const BLOCKING: &str = "blocking";
    /// How many pairs ever had a decision: the item `block#~count`, attribute `n`.
    pub const BLOCK_COUNT_KEY: &str = "block#~count";
    /// The homes the region serves (`dynamo::homes`): the item `region#homes`, a string set.
    pub const HOMES_KEY: &str = "region#homes";
    pub const HOMES: &str = "homes";
}

pub const LIKES: TableDef = TableDef {
    logical_id: "LikesTable",
    attributes: &[
        (likes::PK, AttrType::S),
        (likes::SK, AttrType::S),
        (likes::LIKED_AT, AttrType::S),
        (likes::KIND_KEY, AttrType::S),
        (likes::REACTOR, AttrType::S),
        (likes::REACTED_AT, AttrType::S),
    ],
    key: Key {
        hash: likes::PK,
        range: Some(likes::SK),
    },
    // The LSI is load-bearing beyond "who liked P, newest first": a table with an LSI never
    // splits one item collection (one post_bucket) across partitions, so all stream records of
    // one key stay in one shard, in order. The aggregator's high-water marks depend on that.
    local_indexes: &[Index {
        name: likes::BY_TIME,
        key: Key {
            hash: likes::PK,
            range: Some(likes::LIKED_AT),
        },
        projection: "KEYS_ONLY",
    }],
    // A like has no `kind_key`, `reactor` or `reacted_at`, and a reaction no `liked_at`: each
    // index holds one of the two only, so a like-only deployment writes what it always did.
    global_indexes: &[
        Index {
            name: likes::BY_USER,
            key: Key {
                hash: likes::SK,
                range: Some(likes::LIKED_AT),
            },
            projection: "KEYS_ONLY",
        },
        Index {
            name: likes::BY_KIND,
            key: Key {
                hash: likes::KIND_KEY,
                range: Some(likes::REACTED_AT),
            },
            projection: "KEYS_ONLY",
        },
        Index {
            name: likes::BY_REACTOR,
            key: Key {
                hash: likes::REACTOR,
                range: Some(likes::REACTED_AT),
            },
            projection: "KEYS_ONLY",
        },
    ],
    // The keys carry the post, the bucket and the user: nothing else is needed to count.
    stream_view: Some("KEYS_ONLY"),
    // Request markers of named requests expire by themselves.
    ttl_attribute: Some(likes::EXPIRES_AT),
};

pub const COUNTS: TableDef = TableDef {
    logical_id: "CountsTable",
    attributes: &[(counts::PK, AttrType::S)],
    key: Key {
        hash: counts::PK,
        range: None,
    },
    local_indexes: &[],
    global_indexes: &[],
    stream_view: None,
    ttl_attribute: None,
};

pub const EVENT_STATE: TableDef = TableDef {
    logical_id: "EventStateTable",
    attributes: &[(event_state::PK, AttrType::S)],
    key: Key {
        hash: event_state::PK,
        range: None,
    },
    local_indexes: &[],
    global_indexes: &[],
    stream_view: None,
    ttl_attribute: Some(event_state::EXPIRES_AT),
};

pub const ERASE_REQUESTS: TableDef = TableDef {
    logical_id: "EraseRequestsTable",
    attributes: &[(erase_requests::PK, AttrType::S)],
    key: Key {
        hash: erase_requests::PK,
        range: None,
    },
    local_indexes: &[],
    global_indexes: &[],
    stream_view: None,
    // An item goes when its job is done, never by age: a pending erasure must not expire.
    ttl_attribute: None,
};

pub const MARKERS: TableDef = TableDef {
    logical_id: "MarkersTable",
    attributes: &[(markers::PK, AttrType::S), (markers::SK, AttrType::S)],
    key: Key {
        hash: markers::PK,
        range: Some(markers::SK),
    },
    local_indexes: &[],
    global_indexes: &[],
    stream_view: None,
    ttl_attribute: Some(markers::EXPIRES_AT),
};

fn key_schema(key: &Key) -> Result<Vec<KeySchemaElement>, StoreError> {
    let mut out = vec![KeySchemaElement::builder()
        .attribute_name(key.hash)
        .key_type(KeyType::Hash)
        .build()
        .map_err(build)?];
    if let Some(range) = key.range {
        out.push(
            KeySchemaElement::builder()
                .attribute_name(range)
                .key_type(KeyType::Range)
                .build()
                .map_err(build)?,
        );
    }
    Ok(out)
}

fn projection(p: &str) -> Projection {
    Projection::builder()
        .projection_type(ProjectionType::from(p))
        .build()
}

/// Creates `def` under `name` (on-demand billing, as deployed). Used by the local stack and
/// tests; production tables come from `template.yaml`.
pub async fn create_table(client: &Client, def: &TableDef, name: &str) -> Result<(), StoreError> {
    let mut req = client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .set_key_schema(Some(key_schema(&def.key)?));
    for (attr, ty) in def.attributes {
        let ty = match ty {
            AttrType::S => ScalarAttributeType::S,
            AttrType::N => ScalarAttributeType::N,
        };
        req = req.attribute_definitions(
            AttributeDefinition::builder()
                .attribute_name(*attr)
                .attribute_type(ty)
                .build()
                .map_err(build)?,
        );
    }
    for idx in def.local_indexes {
        req = req.local_secondary_indexes(
            LocalSecondaryIndex::builder()
                .index_name(idx.name)
                .set_key_schema(Some(key_schema(&idx.key)?))
                .projection(projection(idx.projection))
                .build()
                .map_err(build)?,
        );
    }
    for idx in def.global_indexes {
        req = req.global_secondary_indexes(
            GlobalSecondaryIndex::builder()
                .index_name(idx.name)
                .set_key_schema(Some(key_schema(&idx.key)?))
                .projection(projection(idx.projection))
                .build()
                .map_err(build)?,
        );
    }
    if let Some(view) = def.stream_view {
        req = req.stream_specification(
            StreamSpecification::builder()
                .stream_enabled(true)
                .stream_view_type(StreamViewType::from(view))
                .build()
                .map_err(build)?,
        );
    }
    req.send().await.map_err(classify)?;
    if let Some(attr) = def.ttl_attribute {
        client
            .update_time_to_live()
            .table_name(name)
            .time_to_live_specification(
                TimeToLiveSpecification::builder()
                    .attribute_name(attr)
                    .enabled(true)
                    .build()
                    .map_err(build)?,
            )
            .send()
            .await
            .map_err(classify)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests;
