//! The count aggregator against the emulator, through the real handler: each of its numbered
//! invariants (`count_aggregator`'s crate documentation) under redelivery, bisects and injected
//! failures (`delivery`), and against the records themselves (`records`). Each test names the
//! invariants it checks.

mod delivery;
mod records;

use count_aggregator::Aggregator;
use likes_aws::DynamoCounts;
use likes_core::{CountsRead, PostId, UserId};
use likes_harness::stream::{seqs, FaultyCounts, Rec};
use likes_harness::Tables;

pub type Agg = Aggregator<FaultyCounts<DynamoCounts>>;

pub async fn setup() -> (Tables, Agg) {
    let t = Tables::new().await;
    let agg = Aggregator::new(FaultyCounts::new(t.counts()));
    (t, agg)
}

pub async fn count(agg: &Agg, post: &PostId) -> i64 {
    agg.store().post_count(post).await.expect("count")
}

/// `n` users, each landing in a different bucket where possible.
pub fn users(n: usize) -> Vec<UserId> {
    (0..n).map(|_| UserId::new_random()).collect()
}

/// Likes by distinct users of one post, with 21-digit sequence numbers.
pub fn likes_of(post: &PostId, users: &[UserId], base: u128) -> Vec<Rec> {
    seqs(base, users.len())
        .into_iter()
        .zip(users)
        .map(|(s, u)| Rec::new(true, post, u, s))
        .collect()
}

pub const BASE21: u128 = 100_000_000_000_000_000_000; // 21 digits
