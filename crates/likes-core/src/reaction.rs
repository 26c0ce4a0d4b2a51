//! Reactions: the kinds a deployment allows, its mode, and the one spelling of a reaction's
//! place in the Likes table (docs/reactions.md).
//!
//! A reaction is stored like a like, in the like's own bucket partition
//! (`PostBucket::for_like`): the like keeps the sort key `{user}`, a reaction of kind K the sort
//! key `{user}#{K}`. `#` is outside the id grammar and outside the kind grammar, so a sort key
//! reads back one way only, and every id byte sorts above `#`, so the range
//! [`user_range`] holds exactly one user's reactions to a post.

use std::fmt;

use serde::Serialize;

use crate::bucket::PostBucket;
use crate::control::{is_control, KeyRange};
use crate::ids::UserId;

/// The kind every deployment has: the like, stored as it always was.
pub const LIKE: &str = "like";
/// Longest kind, in bytes.
pub const MAX_KIND_LEN: usize = 32;
/// Most kinds a deployment may have, the like included: the aggregator's one update per post
/// names each kind of each bucket a batch changed, and an update expression holds 4 KB.
pub const MAX_KINDS: usize = 10;

/// Whether `b` may appear in a kind: `a-z 0-9 _ + -`.
const fn is_kind_byte(b: u8) -> bool {
    b.is_ascii_lowercase() || b.is_ascii_digit() || matches!(b, b'_' | b'+' | b'-')
}

/// Whether `raw` is a kind (1 to 32 bytes of `a-z 0-9 _ + -`). Allocation-free: the aggregator
/// checks one per stream record.
pub fn is_kind(raw: &str) -> bool {
    (1..=MAX_KIND_LEN).contains(&raw.len()) && raw.bytes().all(is_kind_byte)
}

/// A reaction kind, checked against the grammar (not against a deployment's set: see
/// [`Kinds::get`]).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
#[serde(transparent)]
pub struct Kind(String);

/// A kind outside the grammar, or a setting that names none.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KindError {
    #[error("kind {0:?} is not 1 to {MAX_KIND_LEN} characters of a-z 0-9 _ + -")]
    Grammar(String),
    #[error("reaction mode {0:?} is neither \"multi\" nor \"single\"")]
    Mode(String),
    #[error("{0} reaction kinds: at most {MAX_KINDS}, the like included")]
    TooMany(usize),
}

impl Kind {
    pub fn parse(raw: &str) -> Result<Self, KindError> {
        if is_kind(raw) {
            Ok(Self(raw.to_owned()))
        } else {
            let shown: String = raw.chars().take(64).collect();
            Err(KindError::Grammar(shown))
        }
    }

    pub fn like() -> Self {
        Self(LIKE.to_owned())
    }

    pub fn is_like(&self) -> bool {
        self.0 == LIKE
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Kind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The kinds a deployment allows: `like` always, then the others in the order configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kinds(Vec<Kind>);

impl Default for Kinds {
    fn default() -> Self {
        Self(vec![Kind::like()])
    }
}

impl Kinds {
    /// Parses a comma-separated list (`like,love,laugh`); blanks are skipped, repeats kept once,
    /// and `like` is added when missing.
    pub fn parse(raw: &str) -> Result<Self, KindError> {
        let mut kinds = Self::default();
        for part in raw.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let kind = Kind::parse(part)?;
            if !kinds.0.contains(&kind) {
                kinds.0.push(kind);
            }
        }
        if kinds.0.len() > MAX_KINDS {
            return Err(KindError::TooMany(kinds.0.len()));
        }
        Ok(kinds)
    }

    /// The configured kind spelled `raw`, if any.
    pub fn get(&self, raw: &str) -> Option<&Kind> {
        self.0.iter().find(|k| k.as_str() == raw)
    }

    pub fn iter(&self) -> impl Iterator<Item = &Kind> {
        self.0.iter()
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether the like is the only kind (the deployment then reads and writes as before).
    pub fn like_only(&self) -> bool {
        self.0.len() == 1
    }
}

/// Whether a user may hold several kinds on one post, or one that another replaces.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Multi,
    Single,
}

impl Mode {
    pub fn parse(raw: &str) -> Result<Self, KindError> {
        match raw.trim() {
            "" | "multi" => Ok(Mode::Multi),
            "single" => Ok(Mode::Single),
            other => Err(KindError::Mode(other.to_owned())),
        }
    }
}

/// A deployment's reaction settings.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reactions {
    pub kinds: Kinds,
    pub mode: Mode,
}

/// The sort key of `user`'s reaction of `kind` (the like's is the user id, as it always was).
pub fn sort_key(user: &UserId, kind: &Kind) -> String {
    if kind.is_like() {
        user.as_str().to_owned()
    } else {
        format!("{user}#{kind}")
    }
}

/// The `by_kind` index's partition key of a reaction of `kind` in `bucket`: one index
/// partition per (post, kind, bucket), so that "who reacted with K" reads 16 of them, as "who
/// liked" reads the post's 16 buckets.
pub fn kind_key(bucket: &PostBucket, kind: &Kind) -> String {
    format!("{}#{kind}#{}", bucket.post, bucket.bucket)
}

/// What a Likes sort key names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Held<'a> {
    /// A like, by this user.
    Like(&'a str),
    /// A reaction: the user, and a kind of the grammar other than the like.
    Reaction(&'a str, &'a str),
    /// A control item (`crate::control`).
    Control,
    /// A key no writer of ours makes: a reaction key naming the like (`{user}#like`: the
    /// like's key is the user alone, [`sort_key`]) or a kind outside the grammar. Every reader
    /// reads it the same way, through this type: not a like, not a reaction — never counted
    /// (the aggregator skips its records, a recount and an audit do not count it), never
    /// listed, never announced.
    Foreign,
}

impl<'a> Held<'a> {
    pub fn of(sort_key: &'a str) -> Self {
        if is_control(sort_key) {
            return Held::Control;
        }
        match sort_key.split_once('#') {
            None => Held::Like(sort_key),
            Some((user, kind)) if kind != LIKE && is_kind(kind) => Held::Reaction(user, kind),
            Some(_) => Held::Foreign,
        }
    }

    /// The user part, for a like or a reaction.
    pub fn user(self) -> Option<&'a str> {
        match self {
            Held::Like(u) | Held::Reaction(u, _) => Some(u),
            Held::Control | Held::Foreign => None,
        }
    }

    /// The kind's spelling (`like` for a like), for a like or a reaction.
    pub fn kind(self) -> Option<&'a str> {
        match self {
            Held::Like(_) => Some(LIKE),
            Held::Reaction(_, k) => Some(k),
            Held::Control | Held::Foreign => None,
        }
    }
}

/// Whether a Likes sort key is a reaction other than the like.
pub fn is_reaction_key(sort_key: &str) -> bool {
    matches!(Held::of(sort_key), Held::Reaction(..))
}

/// Every sort key of `user`'s reactions (the like included) in one bucket partition: a Query
/// `BETWEEN` its ends (the upper end, `{user}#~`, is never a key: `~` is no kind byte).
pub fn user_range(user: &UserId) -> KeyRange {
    KeyRange {
        from: user.as_str().to_owned(),
        to: format!("{user}#~"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_kind_grammar() {
        for ok in [
            "like",
            "love",
            "+1",
            "-1",
            "thumbs_up",
            "a",
            &"x".repeat(32),
        ] {
            assert!(Kind::parse(ok).is_ok(), "{ok}");
        }
        for bad in ["", "Love", "a b", "a#b", "a~", "ü", "a/b", &"x".repeat(33)] {
            assert!(Kind::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn kinds_always_hold_like_once() {
        let k = Kinds::parse(" love, like ,laugh,love,").unwrap();
        let names: Vec<&str> = k.iter().map(Kind::as_str).collect();
        assert_eq!(names, ["like", "love", "laugh"]);
        assert!(Kinds::parse("").unwrap().like_only());
        assert!(Kinds::parse("love,Bad").is_err());
        let ten: Vec<String> = (1..MAX_KINDS).map(|i| format!("k{i}")).collect();
        assert_eq!(Kinds::parse(&ten.join(",")).map(|k| k.len()), Ok(MAX_KINDS));
        let eleven = format!("{},k99", ten.join(","));
        assert_eq!(
            Kinds::parse(&eleven),
            Err(KindError::TooMany(MAX_KINDS + 1))
        );
        assert_eq!(k.get("laugh").map(Kind::as_str), Some("laugh"));
        assert_eq!(k.get("angry"), None);
    }

    #[test]
    fn modes() {
        assert_eq!(Mode::parse("single"), Ok(Mode::Single));
        assert_eq!(Mode::parse(""), Ok(Mode::Multi));
        assert!(Mode::parse("one").is_err());
    }

    #[test]
    fn a_key_no_writer_makes_is_foreign_to_every_reader() {
        assert_eq!(Held::of("auth0|a#like"), Held::Foreign);
        assert_eq!(Held::of("auth0|a#Love"), Held::Foreign);
        assert_eq!(Held::of("auth0|a#love"), Held::Reaction("auth0|a", "love"));
        assert_eq!(Held::of("auth0|a#like").kind(), None);
        assert!(!is_reaction_key("auth0|a#like"));
    }

    #[test]
    fn sort_keys_read_back_one_way() {
        let u = UserId::parse("auth0|abc").unwrap();
        let love = Kind::parse("love").unwrap();
        assert_eq!(sort_key(&u, &Kind::like()), "auth0|abc");
        assert_eq!(sort_key(&u, &love), "auth0|abc#love");
        assert_eq!(Held::of("auth0|abc"), Held::Like("auth0|abc"));
        assert_eq!(
            Held::of("auth0|abc#love"),
            Held::Reaction("auth0|abc", "love")
        );
        assert_eq!(Held::of("~fence#j#begin"), Held::Control);
        let range = user_range(&u);
        assert!(range.contains("auth0|abc") && range.contains("auth0|abc#love"));
        // Another user whose id extends this one sorts outside the range.
        for other in ["auth0|abc-", "auth0|abc.", "auth0|abcd", "auth0|abc+x#love"] {
            assert!(!range.contains(other), "{other}");
        }
    }
}
