//! Invariant 9's property: a recount makes a drifted post's count exact while its likes keep
//! flowing, whatever Lambda does to the delivery. A random like/unlike history of one post by
//! 24 users with random ids, several to a bucket (so that a window holds several users, and
//! a user several changes), begin and end fences written into every bucket partway through
//! it, the job's read of each bucket taken at a random moment between its fences (user by
//! user, as a Query is not a snapshot), the stream delivered through the mapping simulator
//! (duplicates, checkpoint retries, bisects, failed writes, lost answers, on fences and window
//! writes as on counts), the drift injected before the history; then the job's correction from
//! the window it reads back and the count the aggregator noted, through the stores' own
//! correction. Every bucket must end exact and every window hold exactly the noted entries.
//! Each op is a like or a `love` reaction (a kind besides the like): every kind of every
//! bucket must end exact, each drifted by its own bogus delta; one bucket also holds a `love`
//! the stream never carried (loaded with the table), which the correction must add.
//! Many cases on the in-memory stores (`make unit`); a few on the emulator's DynamoDB stores.

use std::collections::{BTreeMap, HashSet};

use count_aggregator::Aggregator;
use likes_admin::recount::finish_bucket;
use likes_aws::{DynamoCounts, DynamoLikes};
use likes_core::reaction::LIKE;
use likes_core::store::memory::{MemoryCounts, MemoryLikes};
use likes_core::{
    bucket_of, BucketWrite, CountsAdmin, CountsLedger, LikesAdmin, PostBucket, PostId, Seq, UserId,
};
use likes_harness::props::delivery;
use likes_harness::stream::{simulate, Delivery, FaultyCounts, Rec};
use likes_harness::Tables;
use proptest::prelude::*;

const USERS: usize = 24;
/// The buckets the users share: 24 users over 3 buckets, 8 to a bucket.
const SHARED_BUCKETS: usize = 3;
/// The kinds the ops use: the like and one other.
const KINDS: [&str; 2] = [LIKE, "love"];

fn kind_of(c: &Case, i: usize) -> usize {
    c.kinds.get(i).copied().unwrap_or(0)
}

/// The sort key of user `u`'s item of kind `k`, as a recount reads it.
fn key_of(user: &UserId, k: usize) -> String {
    match k {
        0 => user.to_string(),
        _ => format!("{user}#{}", KINDS[k]),
    }
}

#[derive(Debug, Clone)]
struct Case {
    /// Seeds the users' ids.
    seed: u32,
    ops: Vec<(usize, bool)>,
    /// Each op's kind: an index into `KINDS` (the like where missing).
    kinds: Vec<usize>,
    begin: usize,
    end: usize,
    reads: Vec<usize>,
    drift: i64,
    batch: usize,
    deliveries: Vec<Delivery>,
}

fn case() -> impl Strategy<Value = Case> {
    (
        any::<u32>(),
        prop::collection::vec((0..USERS, prop::bool::weighted(0.6)), 2..90),
        any::<(u16, u16)>(),
        prop::collection::vec(any::<u16>(), USERS),
        -3i64..4,
        1usize..12,
        prop::collection::vec(delivery(), 0..10),
        prop::collection::vec(0usize..KINDS.len(), 0..90),
    )
        .prop_map(
            |(seed, ops, (a, b), reads, drift, batch, deliveries, kinds)| {
                let n = ops.len();
                let (x, y) = (usize::from(a) % (n + 1), usize::from(b) % (n + 1));
                let (begin, end) = (x.min(y), x.max(y));
                let reads = reads
                    .iter()
                    .map(|r| begin + usize::from(*r) % (end - begin + 1))
                    .collect();
                Case {
                    seed,
                    ops,
                    kinds,
                    begin,
                    end,
                    reads,
                    drift,
                    batch,
                    deliveries,
                }
            },
        )
}

/// `USERS` users with ids drawn from `seed`, all in `SHARED_BUCKETS` buckets: the buckets of
/// the first ids drawn, the rest drawn until each of those holds its share.
fn users_of(seed: u32) -> Vec<UserId> {
    let mut rng = likes_sim::rng::SplitMix(u64::from(seed));
    let mut buckets: Vec<u8> = Vec::new();
    let mut users = Vec::new();
    let per_bucket = USERS / SHARED_BUCKETS;
    while users.len() < USERS {
        let id = format!("auth0|{:016x}", rng.next_u64());
        let user = UserId::parse(&id).expect("an id");
        let b = bucket_of(&user);
        if buckets.len() < SHARED_BUCKETS && !buckets.contains(&b) {
            buckets.push(b);
        }
        let taken = users.iter().filter(|u| bucket_of(u) == b).count();
        if buckets.contains(&b) && taken < per_bucket {
            users.push(user);
        }
    }
    users
}

/// The stores a case runs on: the Counts store the aggregator writes and the job corrects, and
/// the Likes store the job reads its windows back from.
struct Stores<L, C> {
    likes: L,
    counts: C,
}

async fn run<L, C>(c: &Case, s: Stores<L, C>) -> Result<(), TestCaseError>
where
    L: LikesAdmin,
    C: CountsLedger + CountsAdmin + Clone,
{
    let post = PostId::parse("hot").unwrap();
    let users = users_of(c.seed);
    let buckets: Vec<u8> = {
        let mut b: Vec<u8> = users.iter().map(bucket_of).collect();
        b.sort();
        b.dedup();
        b
    };
    // A love that predates the stream (loaded with the table): held, read by the job, never
    // counted — so the bucket's end may note no `love` at all, and the correction must add it
    // anyway (the job's `kind_diffs`). Not in the bucket the drift writes `love` into.
    let loaded_bucket = buckets[1];
    let loaded = (0..)
        .map(|n| UserId::parse(&format!("loaded-{}-{n}", c.seed)).expect("an id"))
        .find(|u| bucket_of(u) == loaded_bucket)
        .expect("an id in the bucket");
    let store = s.counts.clone();
    let agg = Aggregator::new(FaultyCounts::new(s.counts));
    // The drift: a bogus delta applied before anything else, below every record.
    let bogus = Seq::parse("1").unwrap();
    let write = BucketWrite {
        // The other kind drifts too, the other way.
        kinds: vec![(KINDS[1], -c.drift)],
        bucket: buckets[0],
        delta: c.drift,
        first: bogus,
        last: bogus,
        last_created: 0,
        window: None,
        records: 0,
    };
    store.apply(&post, &[write]).await.expect("drift");

    // The history's records, with the fences at `begin` and `end`; states after each op.
    let mut liked = vec![[false; KINDS.len()]; USERS];
    let mut states = vec![liked.clone()];
    let mut records = Vec::new();
    let mut seq: u128 = 100_000_000_000_000_000_000;
    let mut next = || {
        seq += 1 + seq % 3;
        seq.to_string()
    };
    for (i, &(u, like)) in c.ops.iter().enumerate() {
        if i == c.begin {
            for &b in &buckets {
                records.push(Rec::fence(&post, b, "job1", "begin", next()));
            }
        }
        if i == c.end {
            for &b in &buckets {
                records.push(Rec::fence(&post, b, "job1", "end", next()));
            }
        }
        let k = kind_of(c, i);
        if liked[u][k] != like {
            liked[u][k] = like;
            records.push(Rec::reaction(like, &post, &users[u], KINDS[k], next()));
        }
        states.push(liked.clone());
    }
    if c.end >= c.ops.len() {
        if c.begin >= c.ops.len() {
            for &b in &buckets {
                records.push(Rec::fence(&post, b, "job1", "begin", next()));
            }
        }
        for &b in &buckets {
            records.push(Rec::fence(&post, b, "job1", "end", next()));
        }
    }
    // The job holds the post's lease: only its fences open windows.
    prop_assert!(store
        .take_lease(&post, "job1", 60, None)
        .await
        .expect("the lease"));
    let outcome = simulate(&agg, &records, c.batch, &c.deliveries).await;
    let job = likes_admin::Stores {
        likes: s.likes,
        counts: store.clone(),
        fence_wait: std::time::Duration::from_secs(1),
        lease_term: likes_admin::DEFAULT_LEASE_TERM,
    };
    if c.drift >= 0 {
        // A drift below zero can take the count negative, which invariant 8 rightly reports.
        prop_assert_eq!(outcome.anomalies, 0);
    }

    for &b in &buckets {
        let pb = PostBucket {
            post: post.clone(),
            bucket: b,
        };
        // The job's read: each user of the bucket as it was at its own moment of the read.
        let mut seen: HashSet<String> = (0..USERS)
            .filter(|&u| bucket_of(&users[u]) == b)
            .flat_map(|u| (0..KINDS.len()).map(move |k| (u, k)))
            .filter(|&(u, k)| states[c.reads[u]][u][k])
            .map(|(u, k)| key_of(&users[u], k))
            .collect();
        if b == loaded_bucket {
            seen.insert(key_of(&loaded, 1));
        }
        let item = store
            .read_post(&post)
            .await
            .expect("read")
            .unwrap_or_default();
        let ended = item.buckets[usize::from(b)]
            .ended
            .clone()
            .expect("the end fence was applied");
        prop_assert_eq!(ended.job.as_str(), "job1");
        let window = job.likes.window(&pb, "job1").await.expect("the window");
        // Every change in the window has its entry, and each was counted once.
        prop_assert_eq!(window.entries, ended.entries);
        // The job's own second half: the window's check, the exact counts, the correction
        // through the lease-conditional settle, the cleanup.
        let done = finish_bucket(&job, pb.clone(), "job1", seen, ended, true).await;
        prop_assert!(done.is_ok(), "the job's finish: {:?}", done.err());
        prop_assert!(
            !store
                .settle(&post, b, "job1", 1, &[])
                .await
                .expect("answers"),
            "a correction applies once"
        );
        prop_assert!(
            job.likes
                .recount_items(&pb)
                .await
                .expect("a read")
                .is_empty(),
            "the job leaves no control item"
        );
        let love = KINDS[1].to_owned();
        let truth: BTreeMap<usize, i64> = (0..KINDS.len())
            .map(|k| {
                let n = (0..USERS)
                    .filter(|&u| bucket_of(&users[u]) == b && liked[u][k])
                    .count();
                let preloaded = usize::from(b == loaded_bucket && k == 1);
                (k, (n + preloaded) as i64)
            })
            .collect();
        let got = store
            .read_post(&post)
            .await
            .expect("read")
            .unwrap_or_default()
            .buckets[usize::from(b)]
        .clone();
        prop_assert_eq!(
            got.count,
            truth[&0],
            "bucket {} after {} invocations",
            b,
            outcome.invocations
        );
        prop_assert_eq!(
            got.kinds.get(&love).copied().unwrap_or(0),
            truth[&1],
            "bucket {} love after {} invocations",
            b,
            outcome.invocations
        );
    }
    Ok(())
}

/// The in-memory stores, windows shared as on DynamoDB.
fn memory() -> Stores<MemoryLikes, MemoryCounts> {
    let likes = MemoryLikes::default();
    let counts = MemoryCounts::recording_into(&likes);
    Stores { likes, counts }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]
    #[test]
    fn a_recount_makes_every_bucket_exact_under_any_delivery(c in case()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run(&c, memory()))?;
    }
}

/// The emulator's DynamoDB stores, on fresh tables: the conditional updates, the window
/// entries in the Likes table and the correction as DynamoDB runs them.
async fn emulator() -> Stores<DynamoLikes, DynamoCounts> {
    let t = Tables::lagging().await;
    let likes = t.likes();
    Stores {
        counts: t.counts().with_windows(likes.clone()),
        likes,
    }
}

proptest! {
    // Fewer cases: each makes tables and runs its history on the emulator (`make test`).
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]
    #[test]
    fn a_recount_makes_every_bucket_exact_on_dynamodb(c in case()) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async { run(&c, emulator().await).await })?;
    }
}

/// A redelivered batch that holds a fence must not rewrite a window entry with a change older
/// than one already applied. The history: every bucket's begin fence, then user `u` likes and
/// unlikes, then a run of another user's changes, then the end fences. The last bucket's begin
/// fails while the rest of the batch (u's like and unlike) is applied; the retry from that fence
/// crashes until Lambda has bisected it down to [last begin, u's like]; the unlike comes back only
/// in a later batch with no fence, where it is dropped as applied. Recording the like's window
/// entry on that retry would leave u "liked" in the window and the correction one too high.
#[test]
fn a_redelivery_below_the_mark_does_not_rewrite_the_window() {
    let seed = 7;
    let users = users_of(seed);
    let mut buckets: Vec<u8> = users.iter().map(bucket_of).collect();
    buckets.sort();
    buckets.dedup();
    let nb = buckets.len();
    assert!(nb >= 2, "the case needs two buckets");
    let u = (0..USERS)
        .find(|&i| bucket_of(&users[i]) == buckets[0])
        .unwrap();
    let y = (u + 1) % USERS;
    // Halving a power of two reaches exactly two records: [last begin, u's like].
    let batch = (nb + 2).next_power_of_two();
    let mut deliveries = vec![Delivery::FailRow(nb - 1)];
    deliveries.extend((1..batch.trailing_zeros()).map(|_| Delivery::Crash(0)));
    let mut ops = vec![(u, true), (u, false)];
    for k in 0..2 * batch {
        ops.push((y, k % 2 == 0));
    }
    let end = ops.len();
    let c = Case {
        seed,
        ops,
        kinds: Vec::new(),
        begin: 0,
        end,
        reads: vec![end; USERS],
        drift: 0,
        batch,
        deliveries,
    };
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    if let Err(e) = rt.block_on(run(&c, memory())) {
        panic!("{e}");
    }
}
