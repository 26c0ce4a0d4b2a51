//! The aggregator's property: whatever Lambda does to the delivery — duplicates, checkpoint
//! retries, bisects, failed writes, lost responses — each bucket's count of each kind ends
//! equal to the reactions of that kind held in it (the like is one kind): per bucket, so that a
//! delta applied to the wrong bucket, or two that cancel across buckets, fail. Every id comes
//! from the case (a failure replays from its printed case), and the case puts its seven users
//! in three buckets, so that users share a bucket — its mark and its one update — by
//! construction, not by chance. Random cases and their check, shared by the in-memory run (many
//! cases, no emulator) and the emulator run (fewer: ~150 writes/s).

use count_aggregator::Aggregator;
use std::collections::{HashMap, HashSet};

use likes_core::{bucket_of, CountsLedger, CountsRead, PostId, UserId};
use proptest::prelude::*;

use likes_core::reaction::LIKE;

use crate::stream::{
    changes, kinds_history_to_records, simulate, Delivery, FaultyCounts, SeqSpace, KINDS,
};

#[derive(Debug, Clone)]
pub struct Case {
    pub ops: Vec<(usize, usize, bool)>,
    /// Each op's kind, an index into `stream::KINDS` (0, the like, where missing): records
    /// of several kinds share a bucket, its mark and its one update.
    pub kinds: Vec<usize>,
    pub seq_space: SeqSpace,
    pub batch_size: usize,
    pub deliveries: Vec<Delivery>,
    pub concurrency: usize,
    /// Each user's bucket (of three): who shares a bucket with whom.
    pub user_buckets: Vec<u8>,
}

const USERS: usize = 7;
const POSTS: usize = 3;

/// One delivery of a batch, as the event source mapping may make it: the faults the models
/// draw from.
pub fn delivery() -> impl Strategy<Value = Delivery> {
    prop_oneof![
        3 => Just(Delivery::Clean),
        2 => (0usize..20).prop_map(Delivery::FailRow),
        2 => (0usize..20).prop_map(Delivery::LoseResponse),
        2 => (0usize..6).prop_map(Delivery::Crash),
        2 => (0usize..20).prop_map(Delivery::Redeliver),
        1 => Just(Delivery::FailReads),
    ]
}

pub fn case(max_ops: usize) -> impl Strategy<Value = Case> {
    (
        prop::collection::vec((0..USERS, 0..POSTS, prop::bool::weighted(0.6)), 1..max_ops),
        prop_oneof![
            Just(SeqSpace::DIGITS_21),
            Just(SeqSpace::CROSSING_22),
            Just(SeqSpace::DIGITS_40),
        ],
        1usize..16,
        prop::collection::vec(delivery(), 0..12),
        prop_oneof![Just(1usize), Just(4usize)],
        prop::collection::vec(prop_oneof![2 => Just(0usize), 1 => 1usize..3], 0..max_ops),
        prop::collection::vec(0u8..3, USERS),
    )
        .prop_map(
            |(ops, seq_space, batch_size, deliveries, concurrency, kinds, user_buckets)| Case {
                ops,
                kinds,
                seq_space,
                batch_size,
                deliveries,
                concurrency,
                user_buckets,
            },
        )
}

/// User `i` of a case: the first id `u{i}-{n}` whose bucket is `buckets[i]` (deterministic, so
/// that a failing case replays with the same ids).
fn users_of(buckets: &[u8]) -> Vec<UserId> {
    buckets
        .iter()
        .enumerate()
        .map(|(i, b)| {
            (0..)
                .map(|n| UserId::parse(&format!("u{i}-{n}")).expect("an id"))
                .find(|u| bucket_of(u) == *b)
                .expect("an id in every bucket")
        })
        .collect()
}

pub async fn run_case<C: CountsLedger + CountsRead>(
    store: C,
    case: &Case,
) -> Result<(), TestCaseError> {
    let users = users_of(&case.user_buckets);
    let posts: Vec<PostId> = (0..POSTS)
        .map(|p| PostId::parse(&format!("p{p}")).expect("an id"))
        .collect();
    let (records, expected) =
        kinds_history_to_records(&case.ops, &case.kinds, &users, &posts, case.seq_space);
    let agg = Aggregator::with_concurrency(FaultyCounts::new(store), case.concurrency);
    let outcome = simulate(&agg, &records, case.batch_size, &case.deliveries).await;
    prop_assert_eq!(outcome.anomalies, 0);
    // Per bucket and kind: what the history's final holdings put there.
    let mut held = HashSet::new();
    changes(&case.ops, &case.kinds, &mut held);
    let mut want: HashMap<(usize, u8, &str), i64> = HashMap::new();
    for (u, p, k) in held {
        *want.entry((p, bucket_of(&users[u]), KINDS[k])).or_default() += 1;
    }
    for (p, post) in posts.iter().enumerate() {
        let item = agg.store().inner.read_post(post).await.expect("read");
        let item = item.unwrap_or_default();
        for (b, bucket) in item.buckets.iter().enumerate() {
            let b = u8::try_from(b).expect("16 buckets");
            let like = want.get(&(p, b, LIKE)).copied().unwrap_or(0);
            prop_assert_eq!(bucket.count, like, "post {} bucket {} like", post, b);
            for kind in &KINDS[1..] {
                let n = want.get(&(p, b, *kind)).copied().unwrap_or(0);
                let got = bucket.kinds.get(*kind).copied().unwrap_or(0);
                prop_assert_eq!(got, n, "post {} bucket {} {}", post, b, kind);
            }
        }
    }
    for post in &posts {
        let like = (post.clone(), LIKE.to_owned());
        let got = agg.store().post_count(post).await.expect("count");
        prop_assert_eq!(
            got,
            expected[&like],
            "post {} after {} invocations",
            post,
            outcome.invocations
        );
        let by_kind = agg.store().kind_counts(post).await.expect("counts");
        for kind in KINDS {
            let want = expected[&(post.clone(), kind.to_owned())];
            let got = by_kind.get(kind).copied().unwrap_or(0);
            prop_assert_eq!(got, want, "post {} kind {}", post, kind);
        }
    }
    Ok(())
}
