//! The day with the shared count tier (`SharedCountCache`: ElastiCache Serverless for Valkey):
//! what a summary reads from DynamoDB under the feed model once every environment shares its
//! counts (`feed::tier`), and what the tier itself costs — its ECPUs (a GET per miss of an
//! environment's own cache, a SET per DynamoDB read, each under 1 KB: one ECPU), its storage,
//! the round trip a summary waits for it, and the NAT gateways a function in a VPC needs to
//! reach the token issuer's keys.

use super::feed::{self, Feed, Mine, SUMMARY_POSTS};
use super::{Measured, Profile, API_MB, LAMBDA_GB_S, LIKES_PER_S, SUMMARIES_PER_LIKE};

/// ElastiCache Serverless for Valkey, us-east-1: $ per million ECPUs, $ per GB-hour stored
/// (metered at 100 MB at least). <https://aws.amazon.com/elasticache/pricing/>
const ECPU: f64 = 0.0023;
const GB_HOUR: f64 = 0.084;
const MIN_GB: f64 = 0.1;
/// A NAT gateway, $ an hour, one per AZ of the function's subnets (two).
/// <https://aws.amazon.com/vpc/pricing/>
const NAT_HOUR: f64 = 0.045;
const AZS: f64 = 2.0;
/// An entry: its key (`likes:counts:<post>`, ~50 bytes), its value (~40 bytes with the like
/// count; ~100 with kinds) and Valkey's own overhead, rounded up.
const ENTRY_BYTES: f64 = 200.0;
/// The tier's round trips, ms a summary waits (a pipeline of GETs before its DynamoDB read, a
/// pipeline of SETs after it, each ~1 ms in the same AZ), billed as the function's duration.
const TIER_MS: f64 = 2.0;

/// A summary's figures with the tier.
#[derive(Debug, Clone, Copy)]
pub struct Tiered {
    /// DynamoDB read units of its counts.
    pub count_units: f64,
    /// ECPUs: the tier's GETs and SETs.
    pub ecpus: f64,
}

pub fn tiered(feed: &Feed) -> Tiered {
    let per_lookup = feed.tiered();
    Tiered {
        count_units: SUMMARY_POSTS * per_lookup.reads * 0.5,
        ecpus: SUMMARY_POSTS * (per_lookup.gets + per_lookup.reads),
    }
}

/// $ a day the tier costs whatever its traffic: storage (every post feeds show in a day kept at
/// once, an upper bound: an entry lives a feed age) and the NAT gateways.
fn fixed_per_day(feed: &Feed) -> f64 {
    let gb = (feed.posts as f64 * ENTRY_BYTES / 1e9).max(MIN_GB);
    24.0 * (gb * GB_HOUR + AZS * NAT_HOUR)
}

/// $ a million summaries pay the tier: ECPUs and the wait for it.
fn per_million_summaries(t: &Tiered) -> f64 {
    t.ecpus * ECPU + 1e6 * (API_MB / 1024.0) * (TIER_MS / 1000.0) * LAMBDA_GB_S
}

/// $ a day at the design load with the tier, the caller's own read as `mine`.
pub fn per_day(p: &Profile, m: &Measured, feed: &Feed, t: &Tiered, mine: Mine) -> f64 {
    let summaries_per_day_m = LIKES_PER_S * SUMMARIES_PER_LIKE * 86_400.0 / 1e6;
    p.per_day(m, t.count_units + feed::mine_units(mine, 1))
        + summaries_per_day_m * per_million_summaries(t)
        + fixed_per_day(feed)
}

/// Once any post has had a policy, a summary reads every shown post's policy strongly (1 unit):
/// kept `POLICY_TTL` by each environment alone, or through the tier (`policy_tier`: trust
/// shortened by the clocks' skew, renewed ahead and spread as counts are, so `feed::tier`'s
/// model with no write mark). Units a summary without the tier, with it, and its ECPUs.
pub fn policy_reads(feed: &Feed) -> (f64, f64, f64) {
    let ttl = likes_api::policies::POLICY_TTL.as_secs_f64();
    let alone = Feed {
        feed_age: ttl,
        ttl,
        write_mark: 0.0,
        writes_per_lookup: 0.0,
        ..*feed
    };
    let trusted = ttl - likes_api::policy_tier::CLOCK_SKEW.as_secs_f64();
    let through_tier = Feed {
        feed_age: trusted,
        ttl: trusted,
        ..alone
    }
    .tiered();
    (
        SUMMARY_POSTS * alone.miss_ratio(),
        SUMMARY_POSTS * through_tier.reads,
        SUMMARY_POSTS * (through_tier.gets + through_tier.reads),
    )
}

/// The tier's lines of the cost table.
pub fn lines(m: &Measured, feed: &Feed, profiles: &[Profile]) -> Vec<String> {
    let t = tiered(feed);
    let mut lines = vec![
        format!(
            "with the shared count tier (SharedCountCacheSubnetIds set: ElastiCache Serverless for Valkey): a summary's counts read {:.2} units (every environment's misses of a post share one DynamoDB read per feed age), {:.0} ECPUs (${ECPU}/M: ${:.4} per million summaries with the {TIER_MS} ms wait); storage and {AZS} NAT gateways ${:.2} a day",
            t.count_units,
            t.ecpus,
            per_million_summaries(&t),
            fixed_per_day(feed)
        ),
    ];
    for p in profiles {
        let day = |mine| per_day(p, m, feed, &t, mine);
        let units = |mine| t.count_units + feed::mine_units(mine, 1);
        let summary = |mine| p.summary(units(mine)).total() + per_million_summaries(&t);
        lines.push(format!(
            "  {}: a summary reads {:.1} units with SummaryMine=fast ({:.1} strong); per million summaries: fast ${:.2}, strong ${:.2}; a day: fast ${:.0}, strong ${:.0}",
            p.name,
            units(Mine::Fast),
            units(Mine::Strong),
            summary(Mine::Fast),
            summary(Mine::Strong),
            day(Mine::Fast),
            day(Mine::Strong)
        ));
    }
    let (alone, fleet, ecpus) = policy_reads(feed);
    lines.push(format!(
        "  once any post has had a policy (the model above assumes none): a summary also reads each shown post's policy strongly, {alone:.1} units without the tier, {fleet:.1} with it (+{ecpus:.0} ECPUs)"
    ));
    for p in profiles {
        let with_policies = Tiered {
            count_units: t.count_units + fleet,
            ecpus: t.ecpus + ecpus,
        };
        lines.push(format!(
            "    {}: a fast day with policies: ${:.0} without the tier, ${:.0} with it",
            p.name,
            p.per_day(
                m,
                feed.count_units() + feed::mine_units(Mine::Fast, 1) + alone
            ),
            per_day(p, m, feed, &with_policies, Mine::Fast)
        ));
    }
    for s in [0.8, 1.2] {
        let other = Feed { zipf_s: s, ..*feed };
        let ot = tiered(&other);
        let days: Vec<String> = profiles
            .iter()
            .map(|p| format!("{} ${:.0}", p.name, per_day(p, m, &other, &ot, Mine::Fast)))
            .collect();
        lines.push(format!(
            "  with Zipf exponent {s}: counts {:.2} units; a fast day: {}",
            ot.count_units,
            days.join(", ")
        ));
    }
    lines
}
