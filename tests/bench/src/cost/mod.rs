//! The cost model: what each request uses (counted: requests, invocations, write and read
//! units), times list prices, for the two profiles — the default (API Gateway HTTP API,
//! DynamoDB on-demand) and the lean one (a Lambda function URL with the JWT checked in the
//! function, DynamoDB provisioned with target-tracking autoscaling). us-east-1 list prices when
//! written; an estimate, not a bill.

// ---- Prices: one constant each, nothing else states a price. ----

/// DynamoDB on-demand, $ per million write request units and read request units.
/// <https://aws.amazon.com/dynamodb/pricing/on-demand/>
pub const WRU: f64 = 0.625;
pub const RRU: f64 = 0.125;
/// DynamoDB provisioned, $ per WCU-hour and RCU-hour (standard table class).
/// <https://aws.amazon.com/dynamodb/pricing/provisioned/>
const WCU_HOUR: f64 = 0.00065;
const RCU_HOUR: f64 = 0.00013;
/// $ per million API Gateway HTTP API requests (the first 300 M a month).
/// <https://aws.amazon.com/api-gateway/pricing/>
const API_GATEWAY: f64 = 1.00;
/// $ per million requests through a Lambda function URL: none beyond the function's own.
/// <https://aws.amazon.com/lambda/pricing/>
const FUNCTION_URL: f64 = 0.0;
/// Lambda arm64: $ per GB-second, and per million requests. <https://aws.amazon.com/lambda/pricing/>
pub(crate) const LAMBDA_GB_S: f64 = 0.000_013_333_4;
const LAMBDA_REQUESTS: f64 = 0.20;
/// Lambda gives a function CPU in proportion to its memory, one vCPU at 1,769 MB, so CPU-bound
/// work measured on a full core takes this many MB / memory times longer.
/// <https://docs.aws.amazon.com/lambda/latest/dg/configuration-memory.html>
pub const LAMBDA_MB_PER_VCPU: f64 = 1769.0;

// ---- What the functions and tables use per request (counted, not priced). ----

/// likes-api: memory and mean duration of a request (the README's figure). Lambda bills whole
/// milliseconds, so a mean of 10 ms is ~10.5 ms billed; the model uses the mean.
pub const API_MB: f64 = 256.0;
const API_MS: f64 = 10.0;
/// count-aggregator: one invocation per batch.
const AGGREGATOR_MB: f64 = 256.0;
const AGGREGATOR_MS: f64 = 50.0;
/// A like writes the item (~200 B, under 1 KB) and its LSI and GSI entries: 3 write units.
pub const LIKES_UNITS_PER_LIKE: f64 = 3.0;
/// A count read: one eventually consistent read of ≤ 4 KB, half a read unit.
const COUNT_READ_UNITS: f64 = 0.5;
/// What a summary of 100 posts reads: the feed model's (`feed`).
pub mod feed;
/// The lean profile against its target.
pub mod lean;
/// Two regions: what the second one adds.
pub mod regions;
/// The day with the shared count tier.
pub mod shared_tier;
use feed::{Feed, Mine, SUMMARY_POSTS};

// ---- The design load and the read mix it is priced at. ----

/// 5 B likes a day.
pub const LIKES_PER_S: f64 = 60_000.0;
/// The hot post's share of likes (3 K/s of 60 K/s): it is in the coalescing simulation whose
/// Counts writes per like come in as `Measured::counts_units_per_like`.
pub const HOT_POST_SHARE: f64 = 0.05;
/// Reads per like: one like per 50 posts shown in feeds (summaries of 100 posts), and one count
/// read (a post opened on its own) per like.
const COUNT_READS_PER_LIKE: f64 = 1.0;
pub(crate) const SUMMARIES_PER_LIKE: f64 = 0.5;
/// Count reads of posts hot enough that the API's 1 s count cache answers them (at the
/// measured miss ratio); the rest each read DynamoDB.
const CACHED_COUNT_READ_SHARE: f64 = 0.2;
/// Target tracking keeps consumed capacity at this share of provisioned capacity: the
/// template's default (`crate::template`).
use crate::template::target_utilisation;

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FrontDoor {
    HttpApi,
    FunctionUrl,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Capacity {
    OnDemand,
    Provisioned { utilisation: f64 },
}

#[derive(Debug, Clone, Copy)]
pub struct Profile {
    pub name: &'static str,
    pub front_door: FrontDoor,
    pub capacity: Capacity,
    /// Added to every API request: the in-function JWT check on a full core (0 behind API
    /// Gateway); slower by the function's CPU share (`cpu_ms`).
    pub auth_ms: f64,
}

/// The figures measured earlier in the run.
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Counts writes per like (the coalescing simulation, hot post included).
    pub counts_units_per_like: f64,
    /// Aggregator invocations (batches) per like.
    pub batches_per_like: f64,
    /// DynamoDB reads per count request of a hot post, with the count cache.
    pub cached_read_ratio: f64,
    /// One JWT verification (the slower of RS256 and ES256), warm key set, ms.
    pub jwt_ms: f64,
}

impl Measured {
    /// Round figures of an earlier full run, for `likes-bench reactions` on its own (the full
    /// run measures them first).
    pub fn nominal() -> Self {
        Measured {
            counts_units_per_like: 0.235,
            batches_per_like: 0.0002,
            cached_read_ratio: 0.0005,
            jwt_ms: 0.03,
        }
    }
}

/// What one request uses.
#[derive(Debug, Clone, Copy, Default)]
struct Usage {
    api_requests: f64,
    write_units: f64,
    read_units: f64,
    aggregator_invocations: f64,
}

/// $ per million requests, by where it goes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Cost {
    pub front_door: f64,
    pub api_lambda: f64,
    pub writes: f64,
    pub reads: f64,
    pub aggregator: f64,
}

impl Cost {
    pub fn total(&self) -> f64 {
        self.front_door + self.api_lambda + self.writes + self.reads + self.aggregator
    }
}

/// How long CPU-bound work measured at `ms` on a full core takes in a function of `mb` MB.
pub fn cpu_ms(ms: f64, mb: f64) -> f64 {
    ms * (LAMBDA_MB_PER_VCPU / mb).max(1.0)
}

/// $ per million invocations of `mb` MB running `ms` each.
pub(crate) fn lambda(mb: f64, ms: f64) -> f64 {
    1e6 * (mb / 1024.0) * (ms / 1000.0) * LAMBDA_GB_S + LAMBDA_REQUESTS
}

impl FrontDoor {
    fn per_million(self) -> f64 {
        match self {
            FrontDoor::HttpApi => API_GATEWAY,
            FrontDoor::FunctionUrl => FUNCTION_URL,
        }
    }
}

impl Capacity {
    /// $ per million write units (1 KB writes). Provisioned: a WCU is one write a second for
    /// an hour, 3,600 units, of which target tracking uses `utilisation`.
    pub fn write_unit(self) -> f64 {
        match self {
            Capacity::OnDemand => WRU,
            Capacity::Provisioned { utilisation } => 1e6 * WCU_HOUR / (3600.0 * utilisation),
        }
    }

    /// $ per million read units (4 KB strongly consistent reads; eventually consistent ones
    /// are half a unit in both modes).
    pub fn read_unit(self) -> f64 {
        match self {
            Capacity::OnDemand => RRU,
            Capacity::Provisioned { utilisation } => 1e6 * RCU_HOUR / (3600.0 * utilisation),
        }
    }
}

impl Profile {
    pub fn default_profile() -> Self {
        Self {
            name: "default (HttpApi + OnDemand)",
            front_door: FrontDoor::HttpApi,
            capacity: Capacity::OnDemand,
            auth_ms: 0.0,
        }
    }

    pub fn lean(jwt_ms: f64, utilisation: f64) -> Self {
        Self {
            name: "lean (FunctionUrl + Provisioned)",
            front_door: FrontDoor::FunctionUrl,
            capacity: Capacity::Provisioned { utilisation },
            auth_ms: jwt_ms,
        }
    }

    /// A request's mean duration in likes-api.
    pub fn api_ms(&self) -> f64 {
        API_MS + cpu_ms(self.auth_ms, API_MB)
    }

    fn price(&self, u: Usage) -> Cost {
        Cost {
            front_door: u.api_requests * self.front_door.per_million(),
            api_lambda: u.api_requests * lambda(API_MB, self.api_ms()),
            writes: u.write_units * self.capacity.write_unit(),
            reads: u.read_units * self.capacity.read_unit(),
            aggregator: u.aggregator_invocations * lambda(AGGREGATOR_MB, AGGREGATOR_MS),
        }
    }

    pub fn like(&self, m: &Measured) -> Cost {
        self.price(Usage {
            api_requests: 1.0,
            write_units: LIKES_UNITS_PER_LIKE + m.counts_units_per_like,
            aggregator_invocations: m.batches_per_like,
            ..Usage::default()
        })
    }

    /// A write request that uses these (counted) units, counted by the aggregator as a like is
    /// (a reaction's record costs the Counts table what a like's does).
    pub fn counted_write(&self, m: &Measured, write_units: f64, read_units: f64) -> Cost {
        self.price(Usage {
            api_requests: 1.0,
            write_units: write_units + m.counts_units_per_like,
            read_units,
            aggregator_invocations: m.batches_per_like,
        })
    }

    pub fn count_read(&self, m: &Measured) -> Cost {
        self.price(Usage {
            api_requests: 1.0,
            read_units: COUNT_READ_UNITS * db_reads_per_count_read(m),
            ..Usage::default()
        })
    }

    /// A summary that reads `units` read units.
    pub fn summary(&self, units: f64) -> Cost {
        self.price(Usage {
            api_requests: 1.0,
            read_units: units,
            ..Usage::default()
        })
    }

    /// $ a day at the design load and read mix, a summary reading `summary_units`.
    pub fn per_day(&self, m: &Measured, summary_units: f64) -> f64 {
        let likes_per_day_m = LIKES_PER_S * 86_400.0 / 1e6;
        likes_per_day_m
            * (self.like(m).total()
                + COUNT_READS_PER_LIKE * self.count_read(m).total()
                + SUMMARIES_PER_LIKE * self.summary(summary_units).total())
    }
}

/// The feed model's lines: its assumptions and what a summary reads under it.
fn feed_lines(feed: &Feed) -> Vec<String> {
    let strong = feed::mine_units(Mine::Strong, 1);
    let fast = feed::mine_units(Mine::Fast, 1);
    vec![
        format!(
            "feed model: {} posts shown, Zipf exponent {}; {:.0} execution environments share the traffic (every API request for {API_MS} ms), each with its count cache; a feed's counts up to {} s old (SummaryCountsMaxAge)",
            feed.posts, feed.zipf_s, feed.environments, feed.feed_age
        ),
        format!(
            "  a summary of {SUMMARY_POSTS} posts reads {:.1} % of its counts: {:.1} read units",
            feed.miss_ratio() * 100.0,
            feed.count_units()
        ),
        format!(
            "  its caller's own: SummaryMine=strong {strong:.1} units (a strong key per post; {:.0} with 3 kinds); fast {fast:.2} units (a query of the caller's {} likes since the feed's oldest post; {:.0} % of callers past the cap read keys; {:.2} with 3 kinds)",
            feed::mine_units(Mine::Strong, 3),
            feed::LIKES_IN_WINDOW,
            feed::HEAVY_SHARE * 100.0,
            feed::mine_units(Mine::Fast, 3)
        ),
        format!(
            "  a summary: strong {:.1} units, fast {:.1} units (before: 150)",
            feed.count_units() + strong,
            feed.count_units() + fast
        ),
    ]
}

/// DynamoDB reads per count request under the read mix.
fn db_reads_per_count_read(m: &Measured) -> f64 {
    CACHED_COUNT_READ_SHARE * m.cached_read_ratio + (1.0 - CACHED_COUNT_READ_SHARE)
}

/// Lines of the cost table.
pub fn table(m: &Measured) -> Vec<String> {
    let lean = Profile::lean(m.jwt_ms, target_utilisation());
    let provisioned = lean.capacity;
    let mut lines = vec![
        format!(
            "design load: {:.0} K likes/s ({:.2} B a day), a hot post at {:.0} K/s ({:.0} % of likes, in the coalescing figure above)",
            LIKES_PER_S / 1e3,
            LIKES_PER_S * 86_400.0 / 1e9,
            LIKES_PER_S * HOT_POST_SHARE / 1e3,
            HOT_POST_SHARE * 100.0
        ),
        format!(
            "read mix, per like: {COUNT_READS_PER_LIKE} count read ({:.0} % of them of hot posts, answered by the 1 s count cache with {:.4} DynamoDB reads each; the rest 1 read each) and {SUMMARIES_PER_LIKE} feed summaries of {SUMMARY_POSTS} posts (a like per 50 posts shown, a viewer liked 2 % of a feed)",
            CACHED_COUNT_READ_SHARE * 100.0,
            m.cached_read_ratio
        ),
        format!(
            "provisioned at {:.0} % target utilisation: ${WCU_HOUR}/WCU-h → ${:.3} per million write units (on-demand ${WRU}); ${RCU_HOUR}/RCU-h → ${:.3} per million read units (on-demand ${RRU})",
            target_utilisation() * 100.0,
            provisioned.write_unit(),
            provisioned.read_unit()
        ),
    ];
    let feed = Feed::stated(API_MS);
    lines.extend(feed_lines(&feed));
    let units = |mine| feed.count_units() + feed::mine_units(mine, 1);
    for p in [Profile::default_profile(), lean] {
        let like = p.like(m);
        let likes_units = LIKES_UNITS_PER_LIKE * p.capacity.write_unit();
        let count = p.count_read(m);
        lines.push(format!("{}:", p.name));
        lines.push(format!(
            "  per million likes: ${:.2} = front door ${:.2} + likes-api λ ({API_MB} MB, {:.3} ms) ${:.3} + Likes writes ({LIKES_UNITS_PER_LIKE} WU) ${:.3} + Counts writes ({:.3} WU) ${:.3} + aggregator λ ${:.3}",
            like.total(),
            like.front_door,
            p.api_ms(),
            like.api_lambda,
            likes_units,
            m.counts_units_per_like,
            like.writes - likes_units,
            like.aggregator
        ));
        lines.push(format!(
            "  per million count reads: ${:.3} = front door ${:.2} + λ ${:.3} + reads ${:.4}",
            count.total(),
            count.front_door,
            count.api_lambda,
            count.reads
        ));
        for mine in [Mine::Strong, Mine::Fast] {
            let summary = p.summary(units(mine));
            lines.push(format!(
                "  SummaryMine={}: per million summaries of {SUMMARY_POSTS}: ${:.2} = front door ${:.2} + λ ${:.3} + {:.1} read units ${:.2}; a day at the design load and read mix: ${:.0}",
                mine.name(),
                summary.total(),
                summary.front_door,
                summary.api_lambda,
                units(mine),
                summary.reads,
                p.per_day(m, units(mine))
            ));
        }
        lines.push(format!(
            "  a day with summaries that read nothing (the floor no read path goes below): ${:.0}",
            p.per_day(m, 0.0)
        ));
    }
    lines.extend(shared_tier::lines(
        m,
        &feed,
        &[Profile::default_profile(), lean],
    ));
    lines.extend(regions::lines(m, &[Profile::default_profile(), lean]));
    for s in [0.8, 1.2] {
        let other = Feed { zipf_s: s, ..feed };
        let fast = other.count_units() + feed::mine_units(Mine::Fast, 1);
        lines.push(format!(
            "with Zipf exponent {s}: {:.0} % of counts read, a fast summary {fast:.1} units; a day: default ${:.0}, lean ${:.0}",
            other.miss_ratio() * 100.0,
            Profile::default_profile().per_day(m, fast),
            lean.per_day(m, fast)
        ));
    }
    lines.push(lean::verdict(m));
    lines
}

#[cfg(test)]
mod tests;
