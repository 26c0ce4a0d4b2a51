//! A post's policy, as its author set it through the product (`PostPolicyChanged`,
//! docs/product-events.md): whether it takes new likes, and who sees its counts and its likers.
//! Delivered at least once and in any order, a policy is recorded only if it is later than the
//! one recorded (the latest `at` wins, as a moderation decision). A post without one follows the
//! deployment's defaults; a count of posts with a policy lets the API skip every per-post read
//! while there is none.

use crate::erase_job::Call;
use crate::ids::{PostId, UserId};
use crate::moderation::Decided;

/// Who may see a post's counts, or its likers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Audience {
    /// Every authenticated caller.
    #[default]
    Public,
    /// The post's author alone.
    Author,
}

impl Audience {
    pub fn parse(raw: &str) -> Option<Self> {
        match raw {
            "public" => Some(Self::Public),
            "author" => Some(Self::Author),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Public => "public",
            Self::Author => "author",
        }
    }
}

impl std::str::FromStr for Audience {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        Self::parse(s).ok_or(())
    }
}

/// One post's policy, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    pub author: UserId,
    /// `likes: off`: likes and reactions refused (unlikes still work; existing ones stay).
    pub likes_on: bool,
    pub counts: Audience,
    pub likers: Audience,
}

/// What a post without a policy follows (the template's `DefaultCounts`, `DefaultLikers`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Defaults {
    pub counts: Audience,
    pub likers: Audience,
}

/// A post's policy in force: its own, or the defaults (no author: nobody sees what is the
/// author's alone).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InForce {
    pub author: Option<UserId>,
    pub likes_on: bool,
    pub counts: Audience,
    pub likers: Audience,
}

impl InForce {
    pub fn of(policy: Option<Policy>, defaults: Defaults) -> Self {
        match policy {
            Some(p) => Self {
                author: Some(p.author),
                likes_on: p.likes_on,
                counts: p.counts,
                likers: p.likers,
            },
            None => Self {
                author: None,
                likes_on: true,
                counts: defaults.counts,
                likers: defaults.likers,
            },
        }
    }

    fn lets(&self, audience: Audience, caller: &UserId) -> bool {
        audience == Audience::Public || self.author.as_ref() == Some(caller)
    }

    pub fn shows_counts_to(&self, caller: &UserId) -> bool {
        self.lets(self.counts, caller)
    }

    pub fn shows_likers_to(&self, caller: &UserId) -> bool {
        self.lets(self.likers, caller)
    }
}

pub trait Policies: Send + Sync {
    /// Records the post's policy as of `at` (RFC 3339, the tables' format), unless a later one
    /// is recorded. `Decided::Newer { flipped }`: `flipped` when the post had none before.
    fn decide<'a>(&'a self, post: &'a PostId, policy: &'a Policy, at: &'a str)
        -> Call<'a, Decided>;

    /// The post's recorded policy (strongly consistent: the API's bound on following a change
    /// is its cache time alone).
    fn policy<'a>(&'a self, post: &'a PostId) -> Call<'a, Option<Policy>>;

    /// How many posts ever had a policy (strongly consistent): the API's gate.
    fn policy_count(&self) -> Call<'_, i64>;
}

/// What `decide` makes of the recorded policy (policy, at) and a new one.
pub fn compare(recorded: Option<(&Policy, &str)>, new: &Policy, at: &str) -> Decided {
    crate::moderation::latest(recorded, new, at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(author: &str, likes_on: bool) -> Policy {
        Policy {
            author: UserId::parse(author).expect("an id"),
            likes_on,
            counts: Audience::Author,
            likers: Audience::Public,
        }
    }

    #[test]
    fn the_latest_policy_wins_and_only_a_first_one_counts_a_post() {
        let (t1, t2) = ("2026-12-07T10:00:00.000Z", "2026-12-07T11:00:00.000Z");
        let (on, off) = (policy("a", true), policy("a", false));
        assert_eq!(compare(None, &on, t1), Decided::Newer { flipped: true });
        assert_eq!(
            compare(Some((&on, t1)), &off, t2),
            Decided::Newer { flipped: false }
        );
        assert_eq!(compare(Some((&off, t2)), &on, t1), Decided::Older);
        assert_eq!(compare(Some((&on, t1)), &on, t1), Decided::Same);
        assert_eq!(compare(Some((&on, t1)), &off, t1), Decided::Older);
    }

    #[test]
    fn what_is_the_authors_alone_only_the_author_sees() {
        let (author, other) = (UserId::parse("a").unwrap(), UserId::parse("b").unwrap());
        let own = InForce::of(Some(policy("a", true)), Defaults::default());
        assert!(own.shows_counts_to(&author) && !own.shows_counts_to(&other));
        assert!(own.shows_likers_to(&other));
        // No policy, defaults the author's alone: no author is known, so nobody sees them.
        let hidden = Defaults {
            counts: Audience::Author,
            likers: Audience::Author,
        };
        let none = InForce::of(None, hidden);
        assert!(none.likes_on && !none.shows_counts_to(&author) && !none.shows_likers_to(&author));
        assert!(InForce::of(None, Defaults::default()).shows_likers_to(&other));
    }
}
