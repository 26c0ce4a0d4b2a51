//! Control items: what the tables hold besides likes and counts, and the one place their keys
//! are spelled. The store modules build their expressions from these; the aggregator reads
//! fences off stream records with [`parse_fence`].
//!
//! In the Likes table a control item shares a bucket's partition with its likes, under a sort
//! key starting with `~`: `~` is outside the id grammar and sorts above every byte of it, so
//! `user_id < "~"` reads likes only, and no control item but a hidden like has `liked_at`, so
//! no index and no listing sees one but those (which every listing passes by, as
//! `crate::reaction::Held::Control`).
//! - `~op#<user>[#<kind>]#<token>`: a named request's marker (one request, one effect), where the
//!   deployment has no Markers table (`likes_aws::dynamo::schema::markers`) and in memory;
//! - `~g#<user>`: a user's guard in `single` reaction mode;
//! - `~fence#<job>#begin|end`: a recount's fences (count-aggregator's invariant 9);
//! - `~w#<job>#<user>#<seq>`: one change inside a recount's window (its stream sequence
//!   number as a 23-character `SeqKey`);
//! - `~hidden#<user>[#<kind>]`: a suspended user's like or reaction, out of sight
//!   (`crate::suspend`), with its own time; indexed by `by_user` (or `by_reactor`) under
//!   [`hidden_owner`], so that the restore and the person's own erase find it.
//!
//! (A post's recount lease is not an item of its own: it lives on the post's Counts item, so
//! that the aggregator's fences and the job's correction can be conditional on it.)

use crate::seq::SeqKey;
use crate::write_token::WriteToken;

/// Every user id sorts below this: a sort key at or above it is a control item.
pub const LIKES_END: &str = "~";

/// Whether a Likes sort key names a control item rather than a liker.
pub fn is_control(sort_key: &str) -> bool {
    sort_key.starts_with('~')
}

/// The sort key of a named request's marker, by the sort key of the item it writes (the user
/// for a like, `{user}#{kind}` for a reaction: `crate::reaction::sort_key`).
pub fn marker_key(item: &str, token: &WriteToken) -> String {
    format!("~op#{item}#{}", token.as_str())
}

/// The sort key a like or reaction (by its own sort key, `crate::reaction::sort_key`) is kept
/// under while its user is suspended.
pub fn hidden_key(item: &str) -> String {
    format!("{HIDDEN}{item}")
}

/// Whose items a hidden key holds, as the user indexes (`by_user`'s `user_id`, `by_reactor`'s
/// `reactor`) see them: not the user, so that none of the user's own reads sees them.
pub fn hidden_owner(user: &crate::ids::UserId) -> String {
    format!("{HIDDEN}{user}")
}

/// The item a hidden key keeps out of sight (its own sort key), if it is one.
pub fn unhidden(sort_key: &str) -> Option<&str> {
    sort_key.strip_prefix(HIDDEN)
}

const HIDDEN: &str = "~hidden#";

/// The sort key of a user's `single`-mode guard in a bucket (`likes_aws`' `single` module):
/// every creation in that mode rewrites it, so that two cannot commit on the same read.
pub fn guard_key(user: &crate::ids::UserId) -> String {
    format!("~g#{user}")
}

/// A sort-key range `[from, to)`: what one Query with `BETWEEN` (its upper end excluded)
/// reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyRange {
    pub from: String,
    pub to: String,
}

impl KeyRange {
    fn prefixed(prefix: &str) -> Self {
        // `$` is the byte after `#`: every key that starts with `prefix` lies below it.
        let to = format!("{}$", prefix.trim_end_matches('#'));
        Self {
            from: prefix.to_owned(),
            to,
        }
    }

    pub fn contains(&self, key: &str) -> bool {
        self.from.as_str() <= key && key < self.to.as_str()
    }
}

/// The two fences of a recount job in one bucket.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Begin,
    End,
}

/// A fence as read back from its sort key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fence<'a> {
    Begin(&'a str),
    End(&'a str),
}

/// Longest recount job id; a job id is `A-Z a-z 0-9 -`.
pub const MAX_JOB_LEN: usize = 64;

fn is_job(job: &str) -> bool {
    (1..=MAX_JOB_LEN).contains(&job.len())
        && job.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

pub fn fence_key(job: &str, phase: Phase) -> String {
    let phase = match phase {
        Phase::Begin => "begin",
        Phase::End => "end",
    };
    format!("~fence#{job}#{phase}")
}

/// Recognises a fence's sort key: `~fence#<job>#begin|end`.
pub fn parse_fence(sort_key: &str) -> Option<Fence<'_>> {
    let rest = sort_key.strip_prefix("~fence#")?;
    let (job, phase) = rest.rsplit_once('#')?;
    match (is_job(job), phase) {
        (true, "begin") => Some(Fence::Begin(job)),
        (true, "end") => Some(Fence::End(job)),
        _ => None,
    }
}

/// Every fence of every job.
pub fn all_fences() -> KeyRange {
    KeyRange::prefixed("~fence#")
}

/// Every window entry of every job.
pub fn all_windows() -> KeyRange {
    KeyRange::prefixed("~w#")
}

/// The fences of one job.
pub fn job_fences(job: &str) -> KeyRange {
    KeyRange::prefixed(&format!("~fence#{job}#"))
}

/// The sort key of the entry of `user`'s change at `seq` in `job`'s window.
pub fn window_key(job: &str, user: &str, seq: &SeqKey) -> String {
    format!("~w#{job}#{user}#{}", seq.as_str())
}

/// The entries of one job's window.
pub fn job_window(job: &str) -> KeyRange {
    KeyRange::prefixed(&format!("~w#{job}#"))
}

/// The user and the change's sequence number (as stored) of a window entry of `job`.
pub fn window_change<'a>(job: &str, sort_key: &'a str) -> Option<(&'a str, &'a str)> {
    let rest = sort_key
        .strip_prefix("~w#")?
        .strip_prefix(job)?
        .strip_prefix('#')?;
    rest.rsplit_once('#')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_round_trip_and_reject_others() {
        for (job, phase) in [("job-1", Phase::Begin), ("j", Phase::End)] {
            let key = fence_key(job, phase);
            let want = match phase {
                Phase::Begin => Fence::Begin(job),
                Phase::End => Fence::End(job),
            };
            assert_eq!(parse_fence(&key), Some(want));
            assert!(all_fences().contains(&key) && job_fences(job).contains(&key));
            assert!(is_control(&key));
        }
        for other in [
            "~fence#j#middle",
            "~fence##begin",
            "~fence#a#b#begin",
            "~op#u#k",
            "~w#j#u",
            "user-1",
        ] {
            assert_eq!(parse_fence(other), None, "{other}");
        }
        assert!(!job_fences("j").contains(&fence_key("j2", Phase::Begin)));
    }

    #[test]
    fn windows_are_per_job_and_never_likes() {
        let seq = crate::seq::Seq::parse("100000000000000000007")
            .expect("a seq")
            .key();
        let key = window_key("j1", "auth0|u", &seq);
        assert_eq!(window_change("j1", &key), Some(("auth0|u", seq.as_str())));
        assert_eq!(window_change("j", &key), None);
        assert!(job_window("j1").contains(&key));
        assert!(!job_window("j").contains(&key));
        assert!(all_windows().contains(&key));
        assert!(!all_fences().contains(&key));
        // Every id sorts below every control key.
        for id in ["zzzz", "||||", "ZZ", "9"] {
            assert!(id < LIKES_END && !is_control(id));
        }
    }
}
