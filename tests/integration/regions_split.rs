//! Split brain between two regions (docs/regions.md#failover-and-one-request-one-effect),
//! simulated as `regions` simulates MREC: region A is cut off but still serves its users'
//! home, while B has opened it too; users, some still sent to A (a stale address), some to B,
//! write in both at once for the split's length. After the rejoin and quiet, the design's
//! never-column holds:
//! - both replicas hold the same items, and each region's counts equal its own table;
//! - a pair written in one region only during the split ends as that region's last request
//!   left it (nothing of it was lost);
//! - a pair written in both ends as one of the two regions' last requests left it: last
//!   writer wins chose, no state no request asked for — the loss the design bounds to pairs
//!   written in the cut-off region during the split.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use likes_core::{bucket_of, PostBucket, PostId, UserId};
use likes_harness::regions::replicator::{Delays, Replicator};
use likes_harness::regions::{quiet, spawn, Moto, Region};
use likes_harness::{call_as, emulator, like_path};

const A: usize = 0;
const B: usize = 1;

type Pair = (PostId, UserId);

/// Sends `liked` for `pair` to `region`; the state the region then holds for it.
async fn set(region: &Region, pair: &Pair, liked: bool) -> bool {
    let method = if liked { "PUT" } else { "DELETE" };
    let (s, body, _) = call_as(&region.app(), method, &like_path(&pair.0), pair.1.as_str()).await;
    assert_eq!(s, 200, "{} {method}: {body}", region.name);
    liked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn split_brain_loses_only_what_both_regions_wrote_and_keeps_counts_exact() {
    let b_moto = Moto::start().await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let regions = [
        Region::create("A", &emulator(), &suffix).await,
        Region::create("B", &b_moto.endpoint, &suffix).await,
    ];
    let delays = Delays {
        min: Duration::from_millis(50),
        max: Duration::from_millis(300),
    };
    let replicator = Replicator::new(
        [Arc::clone(&regions[A]), Arc::clone(&regions[B])],
        delays,
        41,
    )
    .await;
    let stop = spawn(&replicator);
    let users: Vec<UserId> = (0..4).map(|_| UserId::new_random()).collect();
    let posts: Vec<PostId> = (0..3).map(|_| PostId::new_random()).collect();
    let pairs: Vec<Pair> = users
        .iter()
        .flat_map(|u| posts.iter().map(|p| (p.clone(), u.clone())))
        .collect();

    // Before the split: every other pair liked, at home in A.
    let mut before: HashMap<Pair, bool> = HashMap::new();
    for (i, pair) in pairs.iter().enumerate() {
        before.insert(pair.clone(), set(&regions[A], pair, i % 2 == 0).await);
    }
    quiet(&regions, &replicator).await;

    // The split: each user's requests, one after another, each to A or B (seeded), each a
    // like or an unlike of one of their pairs.
    replicator.cut(true);
    let mut tasks = Vec::new();
    for (u, user) in users.iter().enumerate() {
        let regions = [Arc::clone(&regions[A]), Arc::clone(&regions[B])];
        let (user, posts) = (user.clone(), posts.clone());
        tasks.push(tokio::spawn(async move {
            let mut x = 0x2545_F491_4F6C_DD1D_u64 ^ (u as u64 + 1);
            let mut last: HashMap<(Pair, usize), bool> = HashMap::new();
            for _ in 0..12 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                let pair = (posts[(x % 3) as usize].clone(), user.clone());
                let r = ((x >> 8) % 2) as usize;
                let liked = set(&regions[r], &pair, (x >> 16).is_multiple_of(2)).await;
                last.insert((pair, r), liked);
            }
            last
        }));
    }
    let mut last: HashMap<(Pair, usize), bool> = HashMap::new();
    for t in tasks {
        last.extend(t.await.expect("a user's requests"));
    }

    replicator.cut(false);
    quiet(&regions, &replicator).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);

    let (a_items, b_items) = (regions[A].items().await, regions[B].items().await);
    assert_eq!(a_items, b_items, "the replicas differ after quiet");
    for region in &regions {
        for (p, (held, counted)) in posts.iter().zip(region.counts_against_table(&posts).await) {
            assert_eq!(counted, held, "{}: post {p}", region.name);
        }
    }
    let mut both = 0;
    for pair in &pairs {
        let pb = PostBucket {
            post: pair.0.clone(),
            bucket: bucket_of(&pair.1),
        };
        let now = a_items.contains_key(&(pb.to_string(), pair.1.to_string()));
        match (last.get(&(pair.clone(), A)), last.get(&(pair.clone(), B))) {
            (None, None) => assert_eq!(now, before[pair], "{pair:?}: unwritten in the split"),
            (Some(a), None) => assert_eq!(now, *a, "{pair:?}: written in A only"),
            (None, Some(b)) => assert_eq!(now, *b, "{pair:?}: written in B only"),
            (Some(a), Some(b)) => {
                both += 1;
                assert!(
                    now == *a || now == *b,
                    "{pair:?}: neither region's last state"
                );
            }
        }
    }
    eprintln!(
        "split brain: {} pairs, {both} written in both regions; replicator {:?}",
        pairs.len(),
        replicator.stats()
    );
    assert!(
        both > 0,
        "no pair was written in both regions: nothing was settled"
    );
}
