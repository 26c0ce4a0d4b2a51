//! The count aggregator against the emulator, through the real handler: each of its numbered
//! invariants (`count_aggregator`'s crate documentation) under redelivery, bisects and injected
//! failures (`delivery`), and against the records themselves (`records`). Each test names the
//! invariants it checks.

mod delivery;
mod records;

use count_aggregator::Aggregator;
use likes_aws::DynamoCounts;
use likes_core::{CountsLedger, PostId, UserId};
use likes_harness::stream::{seqs, FaultyCounts, Rec};
use likes_harness::Tables;

pub type Agg = Aggregator<FaultyCounts<DynamoCounts>>;

/// Tables whose eventual reads trail (the lab's lag), and the aggregator signed as its role.
pub async fn setup() -> (Tables, Agg) {
    let t = Tables::lagging().await;
    let counts = t.as_role(likes_harness::lab::roles::AGGREGATOR).counts();
    let agg = Aggregator::new(FaultyCounts::new(counts));
    (t, agg)
}

/// The post's count as it is now (a strongly consistent read: what the aggregator wrote).
pub async fn count(agg: &Agg, post: &PostId) -> i64 {
    agg.store()
        .read_post(post)
        .await
        .expect("count")
        .map_or(0, |c| c.total())
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
