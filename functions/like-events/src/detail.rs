//! The events' detail-types and details: the published format (schemas in `functions/like-events/schemas/`,
//! version 1; a persistent format, changed only by a new version). Pure.
//!
//! Every detail has `schema_version`, `event_id` (invariant 3), `post_id`, `user_id`, `kind`
//! (`like`, or the reaction's kind), `occurred_at` (the record's creation, RFC 3339 UTC with
//! milliseconds) and `sequence_number` (the stream record's, as received); a notification adds
//! until when it suppresses others, a retraction the notification it retracts, a milestone the
//! milestone and the count read.
//!
//! Reactions keep the like's detail-types: a reaction is the like's record under another sort
//! key, its events are the like's with another `kind`, and a consumer that wants likes only
//! matches `"kind": ["like"]` in its rule. `kind` was added to version 1 (optional in its
//! schemas: events published before it have none, and mean `like`); every other field of a
//! like's event is as it was.

use likes_core::store::events::BusEntry;
use serde_json::{json, Map, Value};

use crate::ids;
use crate::records::Rec;

pub const LIKE_ADDED: &str = "LikeAdded";
pub const LIKE_REMOVED: &str = "LikeRemoved";
pub const NOTIFICATION: &str = "LikeNotification";
pub const RETRACTION: &str = "LikeRetraction";
pub const MILESTONE: &str = "LikeMilestone";

/// Every detail-type published, with its schema's file name in `functions/like-events/schemas/`.
pub const DETAIL_TYPES: [(&str, &str); 5] = [
    (LIKE_ADDED, "like-added.json"),
    (LIKE_REMOVED, "like-removed.json"),
    (NOTIFICATION, "like-notification.json"),
    (RETRACTION, "like-retraction.json"),
    (MILESTONE, "like-milestone.json"),
];

pub const SCHEMA_VERSION: u64 = 1;

fn rfc3339_ms(epoch_ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(epoch_ms)
        .unwrap_or_default()
        .to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

fn entry(detail_type: &'static str, id: String, r: &Rec<'_>, extra: Value) -> BusEntry {
    let mut detail = Map::new();
    detail.insert("schema_version".into(), SCHEMA_VERSION.into());
    detail.insert("event_id".into(), id.into());
    detail.insert("post_id".into(), r.post.as_str().into());
    detail.insert("user_id".into(), r.user.as_str().into());
    detail.insert("kind".into(), r.kind.as_str().into());
    detail.insert("occurred_at".into(), rfc3339_ms(r.created_ms).into());
    detail.insert("sequence_number".into(), r.seq.raw().into());
    if let Value::Object(more) = extra {
        detail.extend(more);
    }
    BusEntry {
        detail_type,
        detail: Value::Object(detail).to_string(),
        time_secs: r.created_secs(),
    }
}

fn id(event: ids::Kind, r: &Rec<'_>, seq: &str) -> String {
    ids::record_event(event, r.stream, r.post_bucket, seq)
}

/// A like's or an unlike's event (a reaction's or its removal's).
pub fn change(r: &Rec<'_>) -> BusEntry {
    let (event, detail_type) = match r.insert {
        true => (ids::Kind::Added, LIKE_ADDED),
        false => (ids::Kind::Removed, LIKE_REMOVED),
    };
    entry(detail_type, id(event, r, r.seq.raw()), r, json!({}))
}

/// The notification of the like `r`, suppressing others until `until_secs`.
pub fn notification(r: &Rec<'_>, until_secs: i64) -> BusEntry {
    let extra = json!({ "suppressed_until": rfc3339_ms(until_secs.saturating_mul(1000)) });
    entry(
        NOTIFICATION,
        id(ids::Kind::Notification, r, r.seq.raw()),
        r,
        extra,
    )
}

/// The retraction, by the unlike `r`, of the notification of the like `notified` (its
/// sequence number: the like is the same (user, post, kind)'s, so of the same key).
pub fn retraction(r: &Rec<'_>, notified: &str) -> BusEntry {
    let extra = json!({ "retracts": id(ids::Kind::Notification, r, notified) });
    entry(
        RETRACTION,
        id(ids::Kind::Retraction, r, r.seq.raw()),
        r,
        extra,
    )
}

/// The post's milestone of its like count, announced on behalf of its like `r` (so of kind
/// `like`) with the count read.
pub fn milestone(r: &Rec<'_>, milestone: u64, like_count: i64) -> BusEntry {
    let extra = json!({ "milestone": milestone, "like_count": like_count });
    entry(
        MILESTONE,
        ids::milestone(r.post.as_str(), milestone),
        r,
        extra,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use likes_core::{Kind, PostId, Seq, UserId};

    fn rec(kind: &str, insert: bool) -> Rec<'static> {
        Rec {
            seq: Seq::parse("100000000000000000001").unwrap(),
            insert,
            created_ms: 1_796_061_600_123,
            post: PostId::parse("p").unwrap(),
            user: UserId::parse("u").unwrap(),
            kind: Kind::parse(kind).unwrap(),
            bucket: 3,
            post_bucket: "p#3",
            stream: "2026-11-30T00:00:00.000",
        }
    }

    fn detail(e: &BusEntry) -> Value {
        serde_json::from_str(&e.detail).unwrap()
    }

    /// A like's event is exactly what it was before reactions, plus `kind: "like"`: every field,
    /// its value and its type (the id pinned in `ids`).
    #[test]
    fn a_likes_event_is_as_it_was_plus_its_kind() {
        let e = change(&rec("like", true));
        assert_eq!(e.detail_type, LIKE_ADDED);
        assert_eq!(e.time_secs, 1_796_061_600);
        let before_reactions = json!({
            "schema_version": 1,
            "event_id": "d3185522-9559-5667-b480-c04adaf3d658",
            "post_id": "p",
            "user_id": "u",
            "occurred_at": "2026-11-30T18:00:00.123Z",
            "sequence_number": "100000000000000000001",
        });
        let mut d = detail(&e);
        assert_eq!(
            d.as_object_mut().unwrap().remove("kind"),
            Some("like".into())
        );
        assert_eq!(d, before_reactions);
        // And the others: one field more each, `kind`, the rest as before.
        let n = detail(&notification(&rec("like", true), 1_796_148_000));
        assert_eq!(n["kind"], "like");
        assert_eq!(n["suppressed_until"], "2026-12-01T18:00:00.000Z");
        assert_eq!(n.as_object().unwrap().len(), 8);
        let m = detail(&milestone(&rec("like", true), 10, 12));
        assert_eq!(
            (&m["kind"], &m["milestone"], &m["like_count"]),
            (&json!("like"), &json!(10), &json!(12))
        );
        assert_eq!(m.as_object().unwrap().len(), 9);
    }

    /// A reaction's events are the like's detail-types with its kind; their ids are the
    /// record's (its own sequence number), and a retraction names the same kind's notification.
    #[test]
    fn a_reactions_events_name_their_kind() {
        let added = change(&rec("love", true));
        assert_eq!(added.detail_type, LIKE_ADDED);
        assert_eq!(detail(&added)["kind"], "love");
        let removed = rec("love", false);
        let r = retraction(&removed, "100000000000000000001");
        let d = detail(&r);
        assert_eq!((r.detail_type, &d["kind"]), (RETRACTION, &json!("love")));
        let n = notification(&rec("love", true), 0);
        assert_eq!(d["retracts"], detail(&n)["event_id"]);
        assert_eq!(detail(&change(&removed))["kind"], "love");
    }
}
