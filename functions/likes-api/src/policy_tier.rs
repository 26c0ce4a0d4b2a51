//! Posts' policies in the shared tier (`shared_counts`): once any post has had a policy, a
//! summary needs every shown post's (or its absence), and one environment sees a post of a
//! feed's long tail too rarely to keep it, where the fleet sees it often
//! (docs/performance.md#the-shared-count-tier).
//!
//! An entry is one strong read's answer and when that read was sent: every environment trusts
//! it until `POLICY_TTL` after the read, exactly as it trusts its own reads, so a policy's
//! change is still followed everywhere within `POLICY_TTL` and a read's time.

use std::time::Duration;

use likes_core::policy::{Audience, Policy};
use likes_core::{PostId, UserId};
use serde::{Deserialize, Serialize};

use crate::shared_counts::age_of;

/// The tier's key of a post's policy (one owner of the format).
pub fn key(post: &PostId) -> String {
    format!("likes:policy:{post}")
}

#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// When the strong read was sent, ms since the epoch.
    at: i64,
    /// None: the post has no policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    policy: Option<Recorded>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Recorded {
    author: String,
    likes_on: bool,
    counts: String,
    likers: String,
}

pub fn encode(policy: Option<&Policy>, at: i64) -> Option<String> {
    let entry = Entry {
        at,
        policy: policy.map(|p| Recorded {
            author: p.author.to_string(),
            likes_on: p.likes_on,
            counts: p.counts.as_str().to_owned(),
            likers: p.likers.as_str().to_owned(),
        }),
    };
    serde_json::to_string(&entry).ok()
}

/// The policy (None: the post has none) and the read's age as of `now` (ms since the epoch), if
/// the value is an entry younger than `trusted`.
pub fn decode(raw: &[u8], now: i64, trusted: Duration) -> Option<(Option<Policy>, Duration)> {
    let entry: Entry = serde_json::from_slice(raw).ok()?;
    let age = age_of(entry.at, now)?;
    if age >= trusted {
        return None;
    }
    let policy = match entry.policy {
        None => None,
        Some(r) => Some(Policy {
            author: UserId::parse(&r.author).ok()?,
            likes_on: r.likes_on,
            counts: Audience::parse(&r.counts)?,
            likers: Audience::parse(&r.likers)?,
        }),
    };
    Some((policy, age))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_policy_and_its_absence_come_back_with_their_read_time_until_trusted_no_more() {
        let policy = Policy {
            author: UserId::new_random(),
            likes_on: false,
            counts: Audience::Author,
            likers: Audience::Public,
        };
        let ttl = Duration::from_millis(2_500);
        let now = 1_000_000;
        for kept in [Some(&policy), None] {
            let raw = encode(kept, now - 1_000).expect("an entry");
            let (got, age) = decode(raw.as_bytes(), now, ttl).expect("trusted");
            assert_eq!((got.as_ref(), age), (kept, Duration::from_secs(1)));
            assert_eq!(
                decode(raw.as_bytes(), now + 1_500, ttl),
                None,
                "past the TTL"
            );
        }
        assert_eq!(
            decode(b"{\"at\":1,\"policy\":{}}", 2, ttl),
            None,
            "not an entry"
        );
    }
}
