//! Event ids: a name-based UUID (version 5, RFC 9562) of what the event is about, so that the
//! same stream record always gives the same id — a redelivered batch publishes its events
//! again under the ids they had — and consumers can deduplicate on it (invariant 3).
//!
//! The names (a persistent format: never change one in place):
//! - a like's and an unlike's event, a notification, a retraction:
//!   `likes/v1/<kind>/<stream label>/<post_bucket>/<sequence number>`, the record's, where kind
//!   is `added`, `removed`, `notification` or `retraction`: a key's records are in one shard
//!   and its sequence numbers grow, and the stream's label (from its ARN) tells a restored
//!   table's new stream from the old one;
//! - a milestone: `likes/v1/milestone/<post_id>/<threshold>`: one id per milestone of a post,
//!   whichever record announced it.
//!
//! The namespace is the v5 UUID of the URL `urn:likes:events` in RFC 9562's URL namespace.

use uuid::Uuid;

fn namespace() -> Uuid {
    Uuid::new_v5(&Uuid::NAMESPACE_URL, b"urn:likes:events")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Added,
    Removed,
    Notification,
    Retraction,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Removed => "removed",
            Kind::Notification => "notification",
            Kind::Retraction => "retraction",
        }
    }
}

/// The id of the `kind` event of the record `seq` (as received) of `post_bucket`.
pub fn record_event(kind: Kind, stream: &str, post_bucket: &str, seq: &str) -> String {
    let name = format!("likes/v1/{}/{stream}/{post_bucket}/{seq}", kind.name());
    Uuid::new_v5(&namespace(), name.as_bytes()).to_string()
}

/// The id of `post`'s milestone `threshold`.
pub fn milestone(post: &str, threshold: u64) -> String {
    let name = format!("likes/v1/milestone/{post}/{threshold}");
    Uuid::new_v5(&namespace(), name.as_bytes()).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_pinned() {
        // Golden values: consumers may recompute them; they must never change.
        assert_eq!(
            namespace().to_string(),
            "83b7e443-f249-518b-ad3f-9671d6ef4e1d"
        );
        assert_eq!(
            record_event(
                Kind::Added,
                "2026-11-30T00:00:00.000",
                "p#3",
                "100000000000000000001"
            ),
            "d3185522-9559-5667-b480-c04adaf3d658"
        );
        assert_eq!(milestone("p", 10), "4145d195-e654-554d-88b9-ed9b34a096cc");
    }

    #[test]
    fn ids_differ_by_every_part() {
        let base = record_event(Kind::Added, "s", "p#3", "1");
        let others = [
            record_event(Kind::Removed, "s", "p#3", "1"),
            record_event(Kind::Notification, "s", "p#3", "1"),
            record_event(Kind::Retraction, "s", "p#3", "1"),
            record_event(Kind::Added, "t", "p#3", "1"),
            record_event(Kind::Added, "s", "p#4", "1"),
            record_event(Kind::Added, "s", "p#3", "2"),
            milestone("p", 1),
        ];
        for other in others {
            assert_ne!(base, other);
        }
        assert_eq!(base, record_event(Kind::Added, "s", "p#3", "1"));
        assert_ne!(milestone("p", 10), milestone("p", 100));
        assert_eq!(Uuid::parse_str(&base).map(|u| u.get_version_num()), Ok(5));
    }
}
