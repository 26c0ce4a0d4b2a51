//! Stream events shaped like the seed workload: Zipf post popularity, random users (so random
//! buckets), 80 % likes; reproducible from a seed.

use likes_core::{bucket_of, UserId};
use likes_sim::stream::{batch, StreamRecord};

pub use likes_sim::rng::SplitMix as Rng;

/// Popularity by rank: P(k) ∝ 1 / k^s over `n` posts.
pub struct Zipf {
    cdf: Vec<f64>,
}

impl Zipf {
    pub fn new(n: usize, s: f64) -> Self {
        let mut cdf = Vec::with_capacity(n);
        let mut total = 0.0;
        for k in 1..=n {
            total += 1.0 / (k as f64).powf(s);
            cdf.push(total);
        }
        for c in &mut cdf {
            *c /= total;
        }
        Self { cdf }
    }

    pub fn sample(&self, rng: &mut Rng) -> usize {
        let u = rng.unit();
        self.cdf.partition_point(|c| *c < u).min(self.cdf.len() - 1)
    }
}

pub fn post_id(rank: usize) -> String {
    format!("post-{rank:05}")
}

/// A Lambda stream event of `n` records: Zipf over 2,000 posts, 80 % INSERT.
pub fn zipf_event(n: usize, seed: u64) -> String {
    let mut rng = Rng(seed);
    let zipf = Zipf::new(2_000, 1.0);
    let mut seq: u128 = 100_000_000_000_000_000_000;
    let records = (0..n)
        .map(|_| {
            let post = post_id(zipf.sample(&mut rng));
            let user = UserId::parse(&format!("user-{:016x}", rng.next_u64())).expect("an id");
            let name = if rng.next_u64() % 10 < 8 {
                "INSERT"
            } else {
                "REMOVE"
            };
            seq += 1 + u128::from(rng.next_u64() % 5);
            let key = format!("{post}#{}", bucket_of(&user));
            StreamRecord::likes(name, &key, user.as_str(), &seq.to_string())
                .created(1_796_000_000.0)
                .to_json()
        })
        .collect();
    batch(records).to_string()
}
