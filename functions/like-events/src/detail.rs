//! The events' detail-types and details: the published format (schemas in `schemas/events/`,
//! version 1; a persistent format, changed only by a new version). Pure.
//!
//! Every detail has `schema_version`, `event_id` (invariant 3), `post_id`, `user_id`,
//! `occurred_at` (the record's creation, RFC 3339 UTC with milliseconds) and
//! `sequence_number` (the stream record's, as received); a notification adds until when it
//! suppresses others, a retraction the notification it retracts, a milestone the milestone and
//! the count read.

use likes_core::store::events::BusEntry;
use serde_json::{json, Map, Value};

use crate::ids::{self, Kind};
use crate::records::Rec;

pub const LIKE_ADDED: &str = "LikeAdded";
pub const LIKE_REMOVED: &str = "LikeRemoved";
pub const NOTIFICATION: &str = "LikeNotification";
pub const RETRACTION: &str = "LikeRetraction";
pub const MILESTONE: &str = "LikeMilestone";

/// Every detail-type published, with its schema's file name in `schemas/events/`.
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

fn id(kind: Kind, r: &Rec<'_>, seq: &str) -> String {
    ids::record_event(kind, r.stream, r.post_bucket, seq)
}

/// A like's or an unlike's event.
pub fn change(r: &Rec<'_>) -> BusEntry {
    let (kind, detail_type) = match r.insert {
        true => (Kind::Added, LIKE_ADDED),
        false => (Kind::Removed, LIKE_REMOVED),
    };
    entry(detail_type, id(kind, r, r.seq.raw()), r, json!({}))
}

/// The notification of the like `r`, suppressing others until `until_secs`.
pub fn notification(r: &Rec<'_>, until_secs: i64) -> BusEntry {
    let extra = json!({ "suppressed_until": rfc3339_ms(until_secs.saturating_mul(1000)) });
    entry(
        NOTIFICATION,
        id(Kind::Notification, r, r.seq.raw()),
        r,
        extra,
    )
}

/// The retraction, by the unlike `r`, of the notification of the like `notified` (its
/// sequence number: the like is the same pair's, so of the same key).
pub fn retraction(r: &Rec<'_>, notified: &str) -> BusEntry {
    let extra = json!({ "retracts": id(Kind::Notification, r, notified) });
    entry(RETRACTION, id(Kind::Retraction, r, r.seq.raw()), r, extra)
}

/// The post's milestone, announced on behalf of its like `r` with the count read.
pub fn milestone(r: &Rec<'_>, milestone: u64, like_count: i64) -> BusEntry {
    let extra = json!({ "milestone": milestone, "like_count": like_count });
    entry(
        MILESTONE,
        ids::milestone(r.post.as_str(), milestone),
        r,
        extra,
    )
}
