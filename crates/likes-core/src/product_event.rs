//! The product's decisions, as its EventBridge bus carries them (the template's
//! `ProductEventBusName`, `ProductEventSource`; docs/product-events.md): an account or a post
//! deleted, a user suspended or restored, a post's policy set. A rule on the bus puts each event, whole, on the erase queue, where the erase worker
//! reads it beside the API's erase jobs.
//!
//! An event is delivered at least once and in any order; each one here ends in an erase, which
//! is idempotent and cannot be undone, so neither a repeat nor the order changes the outcome.
//! A malformed event (a detail-type or field this service does not know) changes nothing: its
//! consumer sends it to a failure queue, where an alarm shows it.

use serde::Deserialize;
use serde_json::Value;
use thiserror::Error;

use crate::ids::{PostId, UserId};
use crate::policy::{Audience, Policy};
use crate::time::{format_ts, parse_ts};

pub const USER_DELETED: &str = "UserDeleted";
pub const POST_DELETED: &str = "PostDeleted";
pub const USER_SUSPENDED: &str = "UserSuspended";
pub const USER_RESTORED: &str = "UserRestored";
pub const POST_POLICY_CHANGED: &str = "PostPolicyChanged";
pub const USER_BLOCKED: &str = "UserBlocked";
pub const USER_UNBLOCKED: &str = "UserUnblocked";
/// Every detail-type acted on: the bus's rule matches these (the template's
/// `ProductEventsRule`, checked against this list by `e2e::template`).
pub const DETAIL_TYPES: [&str; 7] = [
    USER_DELETED,
    POST_DELETED,
    USER_SUSPENDED,
    USER_RESTORED,
    POST_POLICY_CHANGED,
    USER_BLOCKED,
    USER_UNBLOCKED,
];

/// What the product decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// The account is gone: every like and reaction of the user made up to `at`, and (once
    /// every access token issued before `at` has expired) any made with such a token since.
    UserDeleted { user: UserId, at: String },
    /// The post is gone: every like and reaction of it.
    PostDeleted { post: PostId, at: String },
    /// The user is suspended (`suspended`) or restored as of `at`: their likes and reactions
    /// out of sight or back (`crate::suspend`), the latest `at` winning (`crate::moderation`).
    Moderated {
        user: UserId,
        suspended: bool,
        at: String,
    },
    /// The post's policy as of `at`, the latest `at` winning (`crate::policy`).
    PolicyChanged {
        post: PostId,
        policy: Policy,
        at: String,
    },
    /// `blocker` blocks `blocked` (or no longer does) as of `at`, each pair's latest `at`
    /// winning (`crate::block`).
    Blocked {
        blocker: UserId,
        blocked: UserId,
        blocking: bool,
        at: String,
    },
}

/// One event off the bus.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProductEvent {
    /// EventBridge's id of the put: the same on every delivery of it.
    pub id: String,
    pub decision: Decision,
}

#[derive(Debug, Error, PartialEq, Eq)]
pub enum Malformed {
    #[error("not an EventBridge event: {0}")]
    Envelope(String),
    #[error("detail-type {0:?} is not one this service acts on")]
    DetailType(String),
    #[error("{detail_type}: {why}")]
    Detail { detail_type: String, why: String },
}

/// The envelope EventBridge delivers (its other fields are not used).
#[derive(Deserialize)]
struct Envelope {
    id: String,
    #[serde(rename = "detail-type")]
    detail_type: String,
    detail: Value,
}

/// Fields the product adds later are ignored: a new field is not a malformed event.
#[derive(Deserialize)]
struct UserDetail {
    user_id: String,
    at: String,
}

#[derive(Deserialize)]
struct PostDetail {
    post_id: String,
    at: String,
}

/// `likes`, `counts` and `likers` may be left out: the post then takes likes, and its counts
/// and likers are public.
#[derive(Deserialize)]
struct PolicyDetail {
    post_id: String,
    author_id: String,
    #[serde(default = "on")]
    likes: String,
    #[serde(default = "public")]
    counts: String,
    #[serde(default = "public")]
    likers: String,
    at: String,
}

#[derive(Deserialize)]
struct BlockDetail {
    blocker_id: String,
    blocked_id: String,
    at: String,
}

fn on() -> String {
    "on".into()
}

fn public() -> String {
    "public".into()
}

fn policy_of(d: &PolicyDetail) -> Result<(PostId, Policy), String> {
    let post = PostId::parse_field("post_id", &d.post_id).map_err(|e| e.to_string())?;
    let author = UserId::parse_field("author_id", &d.author_id).map_err(|e| e.to_string())?;
    let likes_on = match d.likes.as_str() {
        "on" => true,
        "off" => false,
        other => return Err(format!("likes {other:?} is neither \"on\" nor \"off\"")),
    };
    let audience = |field: &str, raw: &str| {
        Audience::parse(raw)
            .ok_or_else(|| format!("{field} {raw:?} is neither \"public\" nor \"author\""))
    };
    let policy = Policy {
        author,
        likes_on,
        counts: audience("counts", &d.counts)?,
        likers: audience("likers", &d.likers)?,
    };
    Ok((post, policy))
}

/// Reads a queue message: `None` when it is not an EventBridge event (an erase job), else the
/// event or why it is malformed.
pub fn read(body: &str) -> Option<Result<ProductEvent, Malformed>> {
    let value: Value = serde_json::from_str(body).ok()?;
    value.get("detail-type")?;
    Some(event(value))
}

fn event(value: Value) -> Result<ProductEvent, Malformed> {
    let envelope: Envelope =
        serde_json::from_value(value).map_err(|e| Malformed::Envelope(e.to_string()))?;
    let detail_type = envelope.detail_type;
    let wrong = |why: String| Malformed::Detail {
        detail_type: detail_type.clone(),
        why,
    };
    let decision = match detail_type.as_str() {
        USER_DELETED | USER_SUSPENDED | USER_RESTORED => {
            let d: UserDetail =
                serde_json::from_value(envelope.detail).map_err(|e| wrong(e.to_string()))?;
            let user =
                UserId::parse_field("user_id", &d.user_id).map_err(|e| wrong(e.to_string()))?;
            let at = instant(&d.at).map_err(wrong)?;
            match detail_type.as_str() {
                USER_DELETED => Decision::UserDeleted { user, at },
                kind => Decision::Moderated {
                    user,
                    suspended: kind == USER_SUSPENDED,
                    at,
                },
            }
        }
        POST_DELETED => {
            let d: PostDetail =
                serde_json::from_value(envelope.detail).map_err(|e| wrong(e.to_string()))?;
            Decision::PostDeleted {
                post: PostId::parse_field("post_id", &d.post_id)
                    .map_err(|e| wrong(e.to_string()))?,
                at: instant(&d.at).map_err(wrong)?,
            }
        }
        POST_POLICY_CHANGED => {
            let d: PolicyDetail =
                serde_json::from_value(envelope.detail).map_err(|e| wrong(e.to_string()))?;
            let (post, policy) = policy_of(&d).map_err(wrong)?;
            Decision::PolicyChanged {
                post,
                policy,
                at: instant(&d.at).map_err(wrong)?,
            }
        }
        USER_BLOCKED | USER_UNBLOCKED => {
            let d: BlockDetail =
                serde_json::from_value(envelope.detail).map_err(|e| wrong(e.to_string()))?;
            let id = |field: &'static str, raw: &str| {
                UserId::parse_field(field, raw).map_err(|e| wrong(e.to_string()))
            };
            Decision::Blocked {
                blocker: id("blocker_id", &d.blocker_id)?,
                blocked: id("blocked_id", &d.blocked_id)?,
                blocking: detail_type == USER_BLOCKED,
                at: instant(&d.at).map_err(wrong)?,
            }
        }
        _ => return Err(Malformed::DetailType(detail_type)),
    };
    Ok(ProductEvent {
        id: envelope.id,
        decision,
    })
}

/// An RFC 3339 time, in the tables' own format (UTC, milliseconds), so that it compares with
/// the times stored as strings.
fn instant(raw: &str) -> Result<String, String> {
    parse_ts(raw)
        .map(format_ts)
        .ok_or_else(|| format!("at {raw:?} is not an RFC 3339 time"))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn put(detail_type: &str, detail: Value) -> String {
        json!({
            "version": "0", "id": "7f1c", "detail-type": detail_type, "source": "product",
            "account": "123456789012", "time": "2026-12-07T10:00:00Z", "region": "us-east-1",
            "resources": [], "detail": detail
        })
        .to_string()
    }

    #[test]
    fn reads_each_decision_with_its_time_in_the_tables_format() {
        let body = put(
            USER_DELETED,
            json!({"user_id": "u-1", "at": "2026-12-07T11:00:00+01:00"}),
        );
        assert_eq!(
            read(&body),
            Some(Ok(ProductEvent {
                id: "7f1c".into(),
                decision: Decision::UserDeleted {
                    user: UserId::parse("u-1").unwrap(),
                    at: "2026-12-07T10:00:00.000Z".into(),
                },
            }))
        );
        let body = put(
            POST_DELETED,
            json!({"post_id": "p-1", "at": "2026-12-07T10:00:00Z"}),
        );
        let Some(Ok(ProductEvent {
            decision: Decision::PostDeleted { post, .. },
            ..
        })) = read(&body)
        else {
            panic!("not read: {body}");
        };
        assert_eq!(post.as_str(), "p-1");
    }

    #[test]
    fn reads_a_policy_its_left_out_fields_public_and_on() {
        let body = put(
            POST_POLICY_CHANGED,
            json!({"post_id": "p-1", "author_id": "a-1", "counts": "author", "at": "2026-12-07T10:00:00Z"}),
        );
        let Some(Ok(ProductEvent {
            decision: Decision::PolicyChanged { post, policy, at },
            ..
        })) = read(&body)
        else {
            panic!("not read: {body}");
        };
        assert_eq!(
            (post.as_str(), at.as_str()),
            ("p-1", "2026-12-07T10:00:00.000Z")
        );
        assert_eq!(
            policy,
            Policy {
                author: UserId::parse("a-1").unwrap(),
                likes_on: true,
                counts: Audience::Author,
                likers: Audience::Public,
            }
        );
    }

    #[test]
    fn an_erase_job_is_not_an_event() {
        let job = r#"{"job_id":"j","user_id":"u","requested_at":"2026-12-07T10:00:00.000Z"}"#;
        assert_eq!(read(job), None);
        assert_eq!(read("not json"), None);
    }

    #[test]
    fn anything_else_is_malformed_and_says_why() {
        let cases = [
            (put("UserSuspendedd", json!({})), "is not one"),
            (
                put(USER_DELETED, json!({"user_id": "u"})),
                "missing field `at`",
            ),
            (
                put(
                    USER_DELETED,
                    json!({"user_id": "a b", "at": "2026-12-07T10:00:00Z"}),
                ),
                "user_id",
            ),
            (
                put(POST_DELETED, json!({"post_id": "p", "at": "yesterday"})),
                "not an RFC 3339",
            ),
            (
                json!({"detail-type": USER_DELETED}).to_string(),
                "missing field",
            ),
            (
                put(
                    POST_POLICY_CHANGED,
                    json!({"post_id": "p", "author_id": "a", "likes": "no", "at": "2026-12-07T10:00:00Z"}),
                ),
                "likes \"no\"",
            ),
            (
                put(
                    POST_POLICY_CHANGED,
                    json!({"post_id": "p", "author_id": "a", "likers": "friends", "at": "2026-12-07T10:00:00Z"}),
                ),
                "likers \"friends\"",
            ),
            (
                put(
                    POST_POLICY_CHANGED,
                    json!({"post_id": "p", "at": "2026-12-07T10:00:00Z"}),
                ),
                "author_id",
            ),
            (
                put(
                    USER_BLOCKED,
                    json!({"blocker_id": "a", "at": "2026-12-07T10:00:00Z"}),
                ),
                "blocked_id",
            ),
        ];
        for (body, why) in cases {
            match read(&body) {
                Some(Err(e)) => assert!(e.to_string().contains(why), "{e} for {body}"),
                other => panic!("{other:?} for {body}"),
            }
        }
    }
}
