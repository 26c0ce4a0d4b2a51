//! The feed model: what a summary of 100 posts reads, under stated assumptions, for each
//! `SummaryMine` setting (docs/performance.md#the-read-bill).
//!
//! - **Which posts a feed shows**: a Zipf popularity of exponent [`ZIPF_S`] over [`FEED_POSTS`]
//!   posts (the hot-post figure's assumption: a few posts take a large share).
//! - **How many execution environments share the traffic**: Little's law, the API's request
//!   rate times its mean duration (`API_MS`): each keeps its own count cache.
//! - **How old a feed's counts may be**: the template's `SummaryCountsMaxAge`.
//! - **What the viewer liked**: one like per 50 posts shown (the read mix) is 2 % of a feed;
//!   [`LIKES_IN_WINDOW`] of the viewer's likes fall after a feed's oldest post, so a `fast`
//!   summary's query reads that many index entries; [`HEAVY_SHARE`] of summaries come from
//!   callers past the query's cap, who read every post's key strongly.
//!
//! - **What the environment itself writes**: likes follow the same popularity as views, spread
//!   over the environments as requests are.
//!
//! A post's count item is read by an environment on a miss and then serves its feeds for the
//! feed age, or for the count cache's TTL when read near the environment's own write of the
//! post (`serving`: the share of lookups that miss, simulated per rate; `tests` checks the
//! whole against a simulation of environments sharing a Zipf popularity).

use likes_api::count_cache::WRITE_MARK;
use likes_aws::env::Tuning;

use super::{COUNT_READS_PER_LIKE, LIKES_PER_S, SUMMARIES_PER_LIKE};
pub mod serving;
pub mod tier;
use crate::template::parameter_default;
use serving::{Curve, Misses, Rules};
use tier::PerLookup;

pub const SUMMARY_POSTS: f64 = 100.0;
/// Distinct posts feeds show within a day.
pub const FEED_POSTS: usize = 1_000_000;
/// Zipf's exponent: 1 is the classic fit of content popularity; the bench prints 0.8 and 1.2.
pub const ZIPF_S: f64 = 1.0;
/// Likes the viewer made after the feed's oldest post (a feed spans a day; 5.2 B likes a day
/// over ~500 M daily viewers is ~10 each).
pub const LIKES_IN_WINDOW: f64 = 10.0;
/// Summaries by callers who made more than the query's cap (300) since: read key by key.
pub const HEAVY_SHARE: f64 = 0.01;
/// An index entry of `by_user` or `by_reactor` (keys only: bucket, user, time, ~110 bytes):
/// a query bills 0.5 units per 4 KB read, eventually consistent.
const INDEX_ENTRY_BYTES: f64 = 110.0;

/// Seconds a shared-tier renewal takes: a DynamoDB read and the tier's SET (~10 ms each, with
/// room), during which other environments' misses of the post read DynamoDB too.
const RENEWAL_GAP: f64 = 0.05;

/// How a summary reads the caller's own (the template's `SummaryMine`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Mine {
    Strong,
    Fast,
}

impl Mine {
    pub fn name(self) -> &'static str {
        match self {
            Mine::Strong => "strong",
            Mine::Fast => "fast",
        }
    }
}

/// A feed model's parameters.
#[derive(Debug, Clone, Copy)]
pub struct Feed {
    pub posts: usize,
    pub zipf_s: f64,
    /// Execution environments sharing the traffic.
    pub environments: f64,
    /// Seconds a feed's counts may be old.
    pub feed_age: f64,
    /// The count cache's TTL, seconds: how long counts read near an own write serve.
    pub ttl: f64,
    /// The own write's mark, seconds.
    pub write_mark: f64,
    /// An environment's writes of a post per lookup of it: likes per post shown.
    pub writes_per_lookup: f64,
}

impl Feed {
    /// The stated model at the design load.
    pub fn stated(api_ms: f64) -> Self {
        Feed {
            posts: FEED_POSTS,
            zipf_s: ZIPF_S,
            environments: environments(api_ms),
            feed_age: parameter_default("SummaryCountsMaxAge"),
            ttl: Tuning::default().count_cache.as_secs_f64(),
            write_mark: WRITE_MARK.as_secs_f64(),
            writes_per_lookup: 1.0 / (SUMMARIES_PER_LIKE * SUMMARY_POSTS),
        }
    }

    /// Post lookups a second: summaries times their posts.
    fn lookups_per_s() -> f64 {
        LIKES_PER_S * SUMMARIES_PER_LIKE * SUMMARY_POSTS
    }

    /// Each post's popularity share, the lookups a second an environment makes of it, and the
    /// shares of them its own count cache misses.
    fn posts_misses(&self) -> impl Iterator<Item = (f64, f64, Misses)> {
        let h: f64 = (1..=self.posts)
            .map(|i| (i as f64).powf(-self.zipf_s))
            .sum();
        let zipf_s = self.zipf_s;
        let share = move |i: usize| (i as f64).powf(-zipf_s) / h;
        let per_env = Self::lookups_per_s() / self.environments;
        let rules = Rules {
            feed_age: self.feed_age,
            ttl: self.ttl,
            write_mark: self.write_mark,
        };
        let curve = Curve::new(
            rules,
            self.writes_per_lookup,
            per_env * share(self.posts),
            per_env * share(1),
        );
        (1..=self.posts).map(move |i| {
            let lambda = per_env * share(i);
            (share(i), lambda, curve.at(lambda))
        })
    }

    /// The share of a summary's posts whose counts an environment reads from DynamoDB.
    pub fn miss_ratio(&self) -> f64 {
        self.posts_misses().map(|(share, _, m)| share * m.all).sum()
    }

    /// With the shared count tier: DynamoDB reads and the tier's GETs per post looked up.
    pub fn tiered(&self) -> PerLookup {
        let rules = Rules {
            feed_age: self.feed_age,
            ttl: self.ttl,
            write_mark: self.write_mark,
        };
        let renewal = tier::Renewal {
            refresh: self.feed_age / 6.0,
            gap: RENEWAL_GAP,
        };
        let mut total = PerLookup::default();
        for (share, lambda, misses) in self.posts_misses() {
            let p = tier::per_lookup(misses, lambda, self.environments, &rules, renewal);
            total.reads += share * p.reads;
            total.gets += share * p.gets;
        }
        total
    }

    /// Read units of a summary's counts (eventually consistent, one item per post).
    pub fn count_units(&self) -> f64 {
        SUMMARY_POSTS * self.miss_ratio() * 0.5
    }
}

/// Concurrent environments at the design load: every API request (likes, count reads,
/// summaries) for `api_ms` each.
pub fn environments(api_ms: f64) -> f64 {
    let per_s = LIKES_PER_S * (1.0 + COUNT_READS_PER_LIKE + SUMMARIES_PER_LIKE);
    per_s * api_ms / 1000.0
}

/// Read units of a summary's "mine" with `kinds` kinds (1: like-only).
pub fn mine_units(mine: Mine, kinds: usize) -> f64 {
    let strong = SUMMARY_POSTS * kinds as f64;
    match mine {
        Mine::Strong => strong,
        Mine::Fast => {
            let queries = if kinds > 1 { 2.0 } else { 1.0 };
            let pages = (LIKES_IN_WINDOW * INDEX_ENTRY_BYTES / 4096.0)
                .ceil()
                .max(1.0);
            (1.0 - HEAVY_SHARE) * queries * pages * 0.5 + HEAVY_SHARE * strong
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use serving::Uniform;

    /// The model against a simulation of the cache's rules in 8 environments: lookups and
    /// likes spread at random over them, a Zipf over 2,000 posts, a like per 10 lookups (so
    /// that own writes matter: the model without them is off by more than its tolerance).
    #[test]
    fn the_miss_ratio_matches_a_simulation() {
        let feed = Feed {
            posts: 2_000,
            zipf_s: 1.0,
            environments: 8.0,
            feed_age: 2.0,
            ttl: 0.2,
            write_mark: 1.0,
            writes_per_lookup: 0.1,
        };
        let rules = Rules {
            feed_age: feed.feed_age,
            ttl: feed.ttl,
            write_mark: feed.write_mark,
        };
        // 2,000 lookups a second over the 8 environments, and 200 likes.
        let (rate, writes) = (2_000.0, 200.0);
        let h: f64 = (1..=feed.posts).map(|i| (i as f64).powf(-1.0)).sum();
        let cdf: Vec<f64> = (1..=feed.posts)
            .scan(0.0, |c, i| {
                *c += (i as f64).powf(-1.0) / h;
                Some(*c)
            })
            .collect();
        let mut rng = Uniform(0x9E37_79B9_7F4A_7C15);
        let mut stored = vec![vec![f64::NEG_INFINITY; feed.posts]; 8];
        let mut written = stored.clone();
        let (mut misses, mut lookups, n) = (0u64, 0u64, 400_000u64);
        let mut t = 0.0;
        while lookups < n {
            t += rng.wait(rate + writes);
            let u = rng.next();
            let post = cdf.partition_point(|&c| c < u).min(feed.posts - 1);
            let env = (rng.next() * 8.0) as usize;
            if rng.next() * (rate + writes) < writes {
                written[env][post] = t;
                continue;
            }
            lookups += 1;
            if !rules.serves(stored[env][post], written[env][post], t) {
                misses += 1;
                stored[env][post] = t;
            }
        }
        let simulated = misses as f64 / n as f64;
        // The same lookups per environment at the design load's rate.
        let model = Feed {
            environments: 8.0 * Feed::lookups_per_s() / rate,
            ..feed
        };
        let predicted = model.miss_ratio();
        assert!(
            (simulated - predicted).abs() < 0.015,
            "simulated {simulated:.3}, model {predicted:.3}"
        );
        let unwritten = Feed {
            writes_per_lookup: 0.0,
            ..model
        }
        .miss_ratio();
        assert!(
            (simulated - unwritten).abs() > 0.04,
            "the writes do not matter here: simulated {simulated:.3}, without them {unwritten:.3}"
        );
    }

    #[test]
    fn fast_reads_one_page_per_query_and_strong_one_key_per_post_and_kind() {
        assert_eq!(mine_units(Mine::Strong, 3), 300.0);
        let fast = mine_units(Mine::Fast, 1);
        assert!((fast - (0.99 * 0.5 + 0.01 * 100.0)).abs() < 1e-9, "{fast}");
        // With kinds: a second query (by_reactor), not one per kind; past the cap, keys.
        let kinds = mine_units(Mine::Fast, 3);
        assert!(
            (kinds - (0.99 * 2.0 * 0.5 + 0.01 * 300.0)).abs() < 1e-9,
            "{kinds}"
        );
    }
}
