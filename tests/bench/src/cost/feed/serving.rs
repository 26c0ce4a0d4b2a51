//! The share of an environment's lookups of one post that read DynamoDB, under the count
//! cache's rules (`likes_api::count_cache`): counts read serve for the feed age, but for the
//! TTL only when they were read before the environment's own write of the post or within the
//! write's mark after it.
//!
//! Without own writes that share is 1/(1 + λT), a renewal argument: requests at λ a second, a
//! miss serves T, then the wait for the next request. With them no closed form fits: a miss
//! tends to follow a write (the write ends what a read served), so misses fall within a mark
//! more often than reads do; a renewal formula that takes them as independent understated the
//! writes' effect by half against a simulation. So each rate's share is simulated: the post's
//! lookups and the environment's writes of it as two Poisson streams (each a thinning of the
//! environment's Poisson traffic), seeded, and interpolated over a grid of rates.

/// The cache's rules, in seconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rules {
    pub feed_age: f64,
    pub ttl: f64,
    pub write_mark: f64,
}

impl Rules {
    /// Whether counts read at `stored` still serve at `now`, the post last written at
    /// `written`: the count cache's `get`.
    pub(crate) fn serves(&self, stored: f64, written: f64, now: f64) -> bool {
        let age = if stored < written + self.write_mark {
            self.ttl.min(self.feed_age)
        } else {
            self.feed_age
        };
        now - stored < age
    }
}

/// xorshift64*: uniform in [0, 1), seeded (no dependency for a model).
pub struct Uniform(pub u64);

impl Uniform {
    pub fn next(&mut self) -> f64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 11) as f64 / (1u64 << 53) as f64
    }

    /// An exponential wait at `rate` a second.
    pub fn wait(&mut self, rate: f64) -> f64 {
        -(1.0 - self.next()).ln() / rate
    }
}

/// Lookups simulated per rate: the share's standard error is under 0.003.
const LOOKUPS: u32 = 40_000;
/// Rates in the grid, spaced evenly in log λ.
const GRID: usize = 64;

/// The shares of lookups at `lookups` a second that miss, the environment writing the post at
/// `writes` a second.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Misses {
    /// All of them.
    pub all: f64,
    /// Those within an own write's mark: counts another environment read before the write
    /// cannot serve them, so with a shared tier they still read DynamoDB.
    pub marked: f64,
}

pub fn miss_share(rules: &Rules, lookups: f64, writes: f64, rng: &mut Uniform) -> Misses {
    if writes <= 0.0 {
        return Misses {
            all: 1.0 / (1.0 + lookups * rules.feed_age),
            marked: 0.0,
        };
    }
    let (mut now, mut stored, mut written) = (0.0, f64::NEG_INFINITY, f64::NEG_INFINITY);
    let (mut seen, mut misses, mut marked) = (0u32, 0u32, 0u32);
    let rate = lookups + writes;
    while seen < LOOKUPS {
        now += rng.wait(rate);
        if rng.next() * rate < writes {
            written = now;
            continue;
        }
        seen += 1;
        if !rules.serves(stored, written, now) {
            misses += 1;
            if now < written + rules.write_mark {
                marked += 1;
            }
            stored = now;
        }
    }
    Misses {
        all: f64::from(misses) / f64::from(LOOKUPS),
        marked: f64::from(marked) / f64::from(LOOKUPS),
    }
}

/// Miss shares over a range of lookup rates, own writes a fixed share of lookups.
#[derive(Debug)]
pub struct Curve {
    rules: Rules,
    writes_per_lookup: f64,
    /// (ln λ, shares), ascending.
    points: Vec<(f64, Misses)>,
}

impl Curve {
    pub fn new(rules: Rules, writes_per_lookup: f64, lowest: f64, highest: f64) -> Self {
        let mut rng = Uniform(0x9E37_79B9_7F4A_7C15);
        let (lo, hi) = (lowest.ln(), highest.max(lowest).ln());
        let points = (0..GRID)
            .map(|k| {
                let x = lo + (hi - lo) * k as f64 / (GRID - 1) as f64;
                let lambda = x.exp();
                let share = miss_share(&rules, lambda, lambda * writes_per_lookup, &mut rng);
                (x, share)
            })
            .collect();
        Curve {
            rules,
            writes_per_lookup,
            points,
        }
    }

    /// The miss shares at `lookups` a second (interpolated in ln λ; the closed form without
    /// own writes).
    pub fn at(&self, lookups: f64) -> Misses {
        if self.writes_per_lookup <= 0.0 {
            return miss_share(&self.rules, lookups, 0.0, &mut Uniform(1));
        }
        let x = lookups.ln();
        let k = self.points.partition_point(|&(px, _)| px < x);
        let between = |a: f64, b: f64, t: f64| a + (b - a) * t;
        match (k.checked_sub(1).map(|j| self.points[j]), self.points.get(k)) {
            (Some((x0, y0)), Some(&(x1, y1))) if x1 > x0 => {
                let t = (x - x0) / (x1 - x0);
                Misses {
                    all: between(y0.all, y1.all, t),
                    marked: between(y0.marked, y1.marked, t),
                }
            }
            (_, Some(&(_, y))) | (Some((_, y)), None) => y,
            (None, None) => Misses {
                all: 1.0,
                marked: 0.0,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Without own writes the simulation agrees with the renewal formula, so the grid can
    /// stand for it; with them, more lookups miss.
    #[test]
    fn without_writes_the_simulation_is_the_renewal_formula() {
        let rules = Rules {
            feed_age: 2.0,
            ttl: 0.2,
            write_mark: 1.0,
        };
        let mut rng = Uniform(7);
        for lookups in [0.05, 0.5, 5.0, 50.0] {
            let simulated = miss_share(&rules, lookups, 1e-12, &mut rng).all;
            let formula = miss_share(&rules, lookups, 0.0, &mut rng).all;
            assert!(
                (simulated - formula).abs() < 0.01,
                "λ {lookups}: simulated {simulated:.4}, formula {formula:.4}"
            );
            let written = miss_share(&rules, lookups, lookups / 10.0, &mut rng).all;
            assert!(
                written > formula,
                "λ {lookups}: {written:.4} ≤ {formula:.4}"
            );
        }
    }
}
