//! Posts' policies in the shared tier (`shared_counts`): once any post has had a policy, a
//! summary needs every shown post's (or its absence), and one environment sees a post of a
//! feed's long tail too rarely to keep it, where the fleet sees it often
//! (docs/performance.md#the-shared-count-tier).
//!
//! An entry is one strong read's answer and when that read was sent: every environment trusts
//! it until `POLICY_TTL` after the read, exactly as it trusts its own reads, so a policy's
//! change is still followed everywhere within `POLICY_TTL` and a read's time. The read's time
//! is another environment's clock: an entry stamped ahead of this one's is no answer, and
//! trust ends [`CLOCK_SKEW`] early, so a writer's clock ahead by less than that cannot stretch
//! it (Lambda's clocks follow the Amazon Time Sync Service, typically within a millisecond).
//! As with counts, an entry in the last sixth of its trust is renewed, not served, and copies
//! are kept a random part of that sixth less long (no herd at expiry).

use std::time::Duration;

use likes_core::policy::{Audience, Policy};
use likes_core::{PostId, UserId};
use serde::{Deserialize, Serialize};

/// How far another environment's clock may run ahead of this one's without stretching trust.
pub const CLOCK_SKEW: Duration = Duration::from_millis(250);

/// The tier's key of a post's policy (one owner of the format; versioned, so that another
/// version's entries are never read as this one's).
pub fn key(post: &PostId) -> String {
    format!("likes:policy:v1:{post}")
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct Entry {
    /// When the strong read was sent, ms since the epoch.
    at: i64,
    /// What it found: required, so that an entry without it is no answer (never "no policy").
    kept: Kept,
}

#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "is", rename_all = "snake_case", deny_unknown_fields)]
enum Kept {
    None,
    Policy {
        author: String,
        likes_on: bool,
        counts: String,
        likers: String,
    },
}

pub fn encode(policy: Option<&Policy>, at: i64) -> Option<String> {
    let kept = match policy {
        None => Kept::None,
        Some(p) => Kept::Policy {
            author: p.author.to_string(),
            likes_on: p.likes_on,
            counts: p.counts.as_str().to_owned(),
            likers: p.likers.as_str().to_owned(),
        },
    };
    serde_json::to_string(&Entry { at, kept }).ok()
}

/// The policy (None: the post has none) and the read's age as of `now` (ms since the epoch),
/// if the value is an entry read no later than `now` and younger than `fresh_for`.
pub fn decode(raw: &[u8], now: i64, fresh_for: Duration) -> Option<(Option<Policy>, Duration)> {
    let entry: Entry = serde_json::from_slice(raw).ok()?;
    let age = Duration::from_millis(u64::try_from(now.checked_sub(entry.at)?).ok()?);
    if age >= fresh_for {
        return None;
    }
    let policy = match entry.kept {
        Kept::None => None,
        Kept::Policy {
            author,
            likes_on,
            counts,
            likers,
        } => Some(Policy {
            author: UserId::parse(&author).ok()?,
            likes_on,
            counts: Audience::parse(&counts)?,
            likers: Audience::parse(&likers)?,
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
            let later = decode(raw.as_bytes(), now + 1_500, ttl);
            assert_eq!(later, None, "past the TTL");
        }
        for garbage in [
            &b"{\"at\":1}"[..],
            b"{\"at\":1,\"policy\":{}}",
            b"{\"at\":1,\"kept\":{\"is\":\"none\"},\"more\":1}",
        ] {
            let got = decode(garbage, 2, ttl);
            assert_eq!(got, None, "not an entry, yet read as one");
        }
        let ahead = encode(None, now + 1).expect("an entry");
        assert_eq!(
            decode(ahead.as_bytes(), now, ttl),
            None,
            "read in the future"
        );
    }
}
