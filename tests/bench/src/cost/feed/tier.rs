//! The shared count tier in the feed model (`likes_api::shared_counts`): what an environment's
//! misses of a post cost once every environment shares what any one of them read.
//!
//! For a post an environment sees at λ a second, of E environments (Λ = Eλ in all), and a
//! feed age T:
//! - A miss within an own write's mark (`Misses::marked`) reads DynamoDB: another
//!   environment's counts from before the write cannot serve it.
//! - Every other lookup is served by an entry that ages from its DynamoDB read, not from its
//!   copy. The tier serves an entry for T − R (R = T/6, `SharedCounts::refresh`: renewed
//!   ahead), and a copy is kept up to R less long (`SharedCounts::spread`), so a copy serves
//!   T − (T − R)/2 − R/2 = T/2 on average, and the environment misses a share
//!   (1 − marked)/(1 + λT/2) of lookups. These go to the tier at N = Λ(1 − marked)/(1 + λT/2)
//!   a second.
//! - The tier's entry is renewed as an environment's is: N/(1 + N(T − R)) renewals a second,
//!   fewer as marked misses' reads renew it too (a Poisson stream at rate M renews it within
//!   any T − R with probability 1 − e^(−M(T − R))); and a marked miss is served after all by an
//!   entry another environment read within the TTL. Both taken to a fixed point.
//! - A renewal is not instant: the lookups reaching the tier while the first one's DynamoDB
//!   read and SET are under way (the gap g) read DynamoDB too, so a renewal costs 1 + Ng
//!   reads.
//!
//! So the long tail, seen too rarely by any one environment to be kept, is read once per feed
//! age by the whole fleet. `tests` checks the whole against a simulation of the rules: within
//! 15 %.

use super::serving::{Misses, Rules};

/// What a post's lookups cost, per lookup.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct PerLookup {
    /// DynamoDB reads (each then written to the tier: a SET).
    pub reads: f64,
    /// The tier's GETs.
    pub gets: f64,
}

/// How the tier renews: seconds of an entry's life in which it is renewed rather than served
/// (R), and the time a renewal's DynamoDB read and SET take (g).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Renewal {
    pub refresh: f64,
    pub gap: f64,
}

/// A post's cost per lookup, its environment-level misses being `misses` at `lambda` lookups
/// a second in each of `environments`.
pub fn per_lookup(
    misses: Misses,
    lambda: f64,
    environments: f64,
    rules: &Rules,
    renewal: Renewal,
) -> PerLookup {
    let feed_age = rules.feed_age;
    let served = feed_age - renewal.refresh;
    let unmarked = (1.0 - misses.marked).max(0.0) / (1.0 + lambda * feed_age / 2.0);
    let fleet = lambda * environments;
    let to_tier = fleet * unmarked;
    let marked = fleet * misses.marked;
    let herd = 1.0 + to_tier * renewal.gap;
    // Reads a second, to a fixed point: a marked miss is served by an entry read within the
    // TTL (by anyone), and any read renews the tier's entry for every unmarked one.
    let mut reads = marked + to_tier / (1.0 + to_tier * served);
    for _ in 0..8 {
        let marked_reads = marked * (-reads * rules.ttl).exp();
        let renewals = to_tier / (1.0 + to_tier * served) * (-marked_reads * served).exp();
        reads = marked_reads + (renewals * herd).min(to_tier);
    }
    PerLookup {
        reads: reads / fleet,
        gets: misses.marked + unmarked,
    }
}

#[cfg(test)]
mod tests {
    use super::super::serving::{miss_share, Uniform};
    use super::*;

    /// The model against a simulation of both tiers' rules (the count cache's `get` and
    /// `put_aged` with its spread, the tier keeping the newest read and renewing ahead; reads
    /// instant, so no gap): 16 environments, a Zipf over 2,000 posts, a like per 10 lookups.
    #[test]
    fn the_tier_model_matches_a_simulation() {
        let rules = Rules {
            feed_age: 2.0,
            ttl: 0.2,
            write_mark: 1.0,
        };
        let (envs, posts, rate, writes) = (16usize, 2_000usize, 2_000.0, 200.0);
        let renewal = Renewal {
            refresh: rules.feed_age / 6.0,
            gap: 0.0,
        };
        let h: f64 = (1..=posts).map(|i| 1.0 / i as f64).sum();
        let cdf: Vec<f64> = (1..=posts)
            .scan(0.0, |c, i| {
                *c += 1.0 / (i as f64 * h);
                Some(*c)
            })
            .collect();
        let mut rng = Uniform(0x51_7CC1_B727_220A);
        let mut stored = vec![vec![f64::NEG_INFINITY; posts]; envs];
        let mut written = stored.clone();
        let mut tier = vec![f64::NEG_INFINITY; posts];
        let (mut reads, mut gets, mut lookups, n) = (0u64, 0u64, 0u64, 600_000u64);
        let mut now = 0.0;
        while lookups < n {
            now += rng.wait(rate + writes);
            let u = rng.next();
            let post = cdf.partition_point(|&c| c < u).min(posts - 1);
            let env = (rng.next() * envs as f64) as usize;
            if rng.next() * (rate + writes) < writes {
                written[env][post] = now;
                continue;
            }
            lookups += 1;
            let (s, w) = (&mut stored[env][post], written[env][post]);
            if rules.serves(*s, w, now) {
                continue;
            }
            gets += 1;
            let copy = tier[post] - renewal.refresh * rng.next();
            if now - tier[post] < rules.feed_age - renewal.refresh && copy > *s {
                *s = copy;
            }
            if !rules.serves(*s, w, now) {
                reads += 1;
                *s = now;
                tier[post] = now;
            }
        }
        let (sim_reads, sim_gets) = (reads as f64 / n as f64, gets as f64 / n as f64);

        let (mut model, mut alone) = (PerLookup::default(), 0.0);
        let mut own = Uniform(3);
        for i in 1..=posts {
            let share = 1.0 / (i as f64 * h);
            let lambda = rate * share / envs as f64;
            let misses = miss_share(&rules, lambda, writes * share / envs as f64, &mut own);
            let p = per_lookup(misses, lambda, envs as f64, &rules, renewal);
            model.reads += share * p.reads;
            model.gets += share * p.gets;
            alone += share * misses.all;
        }
        // Within 15 % (on this fleet 0.267 against 0.278 simulated).
        assert!(
            (sim_reads * 0.85..sim_reads * 1.15).contains(&model.reads),
            "DynamoDB reads per lookup: simulated {sim_reads:.4}, model {:.4}",
            model.reads
        );
        assert!(
            (sim_gets * 0.9..sim_gets * 1.1).contains(&model.gets),
            "tier GETs per lookup: simulated {sim_gets:.4}, model {:.4}",
            model.gets
        );
        assert!(
            sim_reads < 0.8 * alone,
            "the tier saves little here: {sim_reads:.4} against {alone:.4} without it"
        );
    }
}
