//! Per-caller limits (`LIKES_LIMIT_*`, the template's `CallerLimit*` parameters): how many
//! requests of each class one verified caller may make, as token buckets. The API enforces
//! them (`likes_api::limits`); docs/limits.md says why each default is what it is.

use std::time::Duration;

use super::{var, EnvError};

const NANOS_PER_SEC: u64 = 1_000_000_000;

/// A token bucket's shape: `burst` requests at once, then one more per `every`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    pub every: Duration,
    pub burst: u32,
}

impl Rate {
    /// `n` a second, `burst` at once.
    pub const fn per_second(n: u32, burst: u32) -> Self {
        Self {
            every: Duration::from_nanos(NANOS_PER_SEC / n as u64),
            burst,
        }
    }

    /// `n` a minute, `burst` at once.
    pub const fn per_minute(n: u32, burst: u32) -> Self {
        Self {
            every: Duration::from_nanos(60 * NANOS_PER_SEC / n as u64),
            burst,
        }
    }

    /// `<n>/s` or `<n>/min`, then optionally `,<burst>` (default: `n`, at least 1); `off` is
    /// no limit. `None` when it is neither.
    pub fn parse(text: &str) -> Option<Option<Self>> {
        let text = text.trim();
        if text == "off" {
            return Some(None);
        }
        let (rate, burst) = match text.split_once(',') {
            Some((rate, burst)) => (rate, Some(burst.trim().parse::<u32>().ok()?)),
            None => (text, None),
        };
        let (n, unit) = rate.trim().split_once('/')?;
        let n: u32 = n.trim().parse().ok()?;
        let per = match unit.trim() {
            "s" => NANOS_PER_SEC,
            "min" => 60 * NANOS_PER_SEC,
            _ => return None,
        };
        if n == 0 || n > 1000 || burst == Some(0) {
            return None;
        }
        Some(Some(Self {
            every: Duration::from_nanos(per / n as u64),
            burst: burst.unwrap_or(n),
        }))
    }
}

impl std::fmt::Display for Rate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let every = self.every.as_secs_f64().max(1e-9);
        if every <= 1.0 {
            write!(f, "{:.0}/s, {} at once", 1.0 / every, self.burst)
        } else {
            write!(f, "{:.0}/min, {} at once", 60.0 / every, self.burst)
        }
    }
}

/// Each class's limit per caller; `None` is no limit. [`CallerLimits::default`] is no limits
/// at all (tests that drive the API directly); deployments read [`CallerLimits::from_env`],
/// whose defaults are [`CallerLimits::STANDARD`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CallerLimits {
    /// `LIKES_LIMIT_WRITES`: likes and unlikes, on any posts.
    pub writes: Option<Rate>,
    /// `LIKES_LIMIT_FLIPS`: likes and unlikes of one post (a bucket of the post takes them).
    pub flips: Option<Rate>,
    /// `LIKES_LIMIT_READS`: one like's state, one post's count (one item each).
    pub reads: Option<Rate>,
    /// `LIKES_LIMIT_LISTS`: summaries, likers, my likes (up to 150 read units each).
    pub lists: Option<Rate>,
    /// `LIKES_LIMIT_ERASE`: requests to erase my likes.
    pub erase: Option<Rate>,
}

impl CallerLimits {
    /// Generous to a person at a screen, hard on a script: docs/limits.md.
    pub const STANDARD: Self = Self {
        writes: Some(Rate::per_second(5, 20)),
        flips: Some(Rate::per_minute(10, 10)),
        reads: Some(Rate::per_second(20, 60)),
        lists: Some(Rate::per_second(5, 20)),
        erase: Some(Rate::per_minute(2, 3)),
    };

    /// `LIKES_CALLER_LIMITS=off` turns every limit off; otherwise each `LIKES_LIMIT_*` replaces
    /// its class's standard limit.
    pub fn from_env() -> Result<Self, EnvError> {
        if var("LIKES_CALLER_LIMITS").as_deref() == Some("off") {
            return Ok(Self::default());
        }
        let s = Self::STANDARD;
        Ok(Self {
            writes: rate("LIKES_LIMIT_WRITES", s.writes)?,
            flips: rate("LIKES_LIMIT_FLIPS", s.flips)?,
            reads: rate("LIKES_LIMIT_READS", s.reads)?,
            lists: rate("LIKES_LIMIT_LISTS", s.lists)?,
            erase: rate("LIKES_LIMIT_ERASE", s.erase)?,
        })
    }
}

fn rate(name: &'static str, standard: Option<Rate>) -> Result<Option<Rate>, EnvError> {
    match var(name) {
        None => Ok(standard),
        Some(value) => Rate::parse(&value).ok_or(EnvError::Invalid {
            name,
            value,
            what: "off, or <n>/s or <n>/min (n from 1 to 1000) with an optional ,<burst>",
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rates_and_refuses_what_is_not_one() {
        assert_eq!(Rate::parse("off"), Some(None));
        assert_eq!(Rate::parse("5/s"), Some(Some(Rate::per_second(5, 5))));
        assert_eq!(Rate::parse("10/min,3"), Some(Some(Rate::per_minute(10, 3))));
        assert_eq!(
            Rate::parse(" 4/s , 12 "),
            Some(Some(Rate::per_second(4, 12)))
        );
        for bad in [
            "", "5", "5/h", "0/s", "x/s", "5/s,", "5/s,0", "2000/s", "-1/s",
        ] {
            assert_eq!(Rate::parse(bad), None, "{bad:?}");
        }
        assert_eq!(Rate::per_second(5, 20).to_string(), "5/s, 20 at once");
        assert_eq!(Rate::per_minute(2, 3).to_string(), "2/min, 3 at once");
        // Exact, not rounded to milliseconds: 600/s is 600/s, 7/min is 7/min.
        let fast = Rate::parse("600/s").unwrap().unwrap();
        assert_eq!(fast.to_string(), "600/s, 600 at once");
        assert_eq!(
            Rate::parse("7/min,1").unwrap().unwrap().to_string(),
            "7/min, 1 at once"
        );
    }
}
