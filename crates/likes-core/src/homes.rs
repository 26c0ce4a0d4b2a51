//! Which users a region serves, in two regions (docs/regions.md#where-writes-go-a-home-region-per-user):
//! every user has a home, a label their identity provider puts in their tokens; each region
//! serves the homes an operator opened there (`likes-admin homes`), and refuses the others'
//! requests. A (user, post) pair is so written in one region at a time, where every earlier
//! write of it has landed, and its conditional writes keep their meaning.
//!
//! The set is the region's own (its pending-erasures table is not replicated): a planned move
//! closes a home in one region, waits out replication, and opens it in the other.

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::erase_job::Call;

/// How long an environment keeps the served set: a home closed is refused everywhere within
/// it, so a planned move's drain starts once this has passed after the close.
pub const HOMES_TTL: Duration = Duration::from_secs(5);

/// A home's label: 1 to 32 of `a-z 0-9 -` (a region's users, named as the product names them:
/// `eu`, `us-east`).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Home(String);

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("a home is 1 to 32 characters of a-z 0-9 -: {0:?}")]
pub struct HomeError(pub String);

impl Home {
    pub fn parse(text: &str) -> Result<Self, HomeError> {
        let ok = (1..=32).contains(&text.len())
            && text
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if ok {
            Ok(Self(text.to_owned()))
        } else {
            Err(HomeError(text.to_owned()))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Home {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The region's served homes, as recorded.
pub trait Homes: Send + Sync {
    /// The homes this region serves, read strongly (none until one is opened).
    fn served(&self) -> Call<'_, BTreeSet<Home>>;

    /// Opens (`serve`) or closes `home` here; doing it twice is doing it once.
    fn set<'a>(&'a self, home: &'a Home, serve: bool) -> Call<'a, ()>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_home_is_a_short_lowercase_label() {
        assert!(Home::parse("eu").is_ok());
        assert!(Home::parse("us-east-2").is_ok());
        for bad in ["", "EU", "eu west", "eu#1", &"x".repeat(33)] {
            assert!(Home::parse(bad).is_err(), "{bad:?}");
        }
    }
}
