//! A person's erase in two regions (docs/regions.md#the-rest-of-the-machinery), simulated as
//! `regions` simulates MREC: the product deletes an account while region A is cut off and
//! down for the product's bus too. B erases the account's likes at once; A's tail (likes A
//! took and had not replicated at the cut) lands in B at the rejoin, and is settled by last
//! writer wins: a like B never had comes back there, a like B's erase deleted later stays
//! deleted. The runbook's answer: after the rejoin, `erase-user` again in each region. After
//! it, and quiet, the account has no like in either region, the replicas are equal and each
//! region's counts equal its table.

use std::time::Duration;

use likes_core::erase::{erase_user, Sweep};
use likes_core::{PostId, UserId};
use likes_harness::regions::replicator::Delays;
use likes_harness::regions::{like_key, pair, quiet, spawn, Region};
use likes_harness::{call_as, like_path};

const A: usize = 0;
const B: usize = 1;

async fn like(region: &Region, post: &PostId, user: &UserId, liked: bool) {
    let method = if liked { "PUT" } else { "DELETE" };
    let (s, body, _) = call_as(&region.app(), method, &like_path(post), user.as_str()).await;
    assert_eq!(s, 200, "{} {method}: {body}", region.name);
}

/// Which of `posts` `user` likes in `region`'s table.
async fn liked(region: &Region, user: &UserId, posts: &[PostId]) -> Vec<PostId> {
    let items = region.items().await;
    posts
        .iter()
        .filter(|p| items.contains_key(&like_key(p, user)))
        .cloned()
        .collect()
}

/// `erase-user`'s sweep of one region: every like of `user` it holds (the emulator's index
/// does not lag: one empty sweep ends it).
async fn erase(region: &Region, user: &UserId) -> usize {
    let sweep = Sweep {
        progress: &|_| {},
        empty_sweeps: 1,
        pause: Duration::from_millis(50),
        before: None,
    };
    erase_user(&region.likes(), user, &sweep)
        .await
        .expect("an erase")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_account_erased_during_a_cut_leaves_no_like_in_either_region_after_the_runbook() {
    let b_moto = likes_harness::regions::Moto::start().await;
    let delays = Delays {
        min: Duration::from_millis(50),
        max: Duration::from_millis(200),
    };
    let (regions, replicator) = pair(&b_moto, delays, 31).await;
    let stop = spawn(&replicator);
    let posts: Vec<PostId> = (0..6).map(|_| PostId::new_random()).collect();
    let (gone, stays) = (UserId::new_random(), UserId::new_random());

    // Both users like the first four posts at home in A; replicated.
    for p in &posts[..4] {
        like(&regions[A], p, &gone, true).await;
        like(&regions[A], p, &stays, true).await;
    }
    quiet(&regions, &replicator).await;
    assert_eq!(liked(&regions[B], &gone, &posts).await, posts[..4]);

    // A is cut off and takes a tail: an unlike; an unlike and a like again, a write B's erase
    // will follow, so that last writer wins must keep the erase; likes of two posts B never
    // saw liked.
    replicator.cut(true);
    like(&regions[A], &posts[0], &gone, false).await;
    like(&regions[A], &posts[1], &gone, false).await;
    like(&regions[A], &posts[1], &gone, true).await;
    like(&regions[A], &posts[4], &gone, true).await;
    like(&regions[A], &posts[5], &gone, true).await;

    // The account is deleted; A is down for the product's bus too: only B erases now.
    assert_eq!(erase(&regions[B], &gone).await, 4);
    assert!(liked(&regions[B], &gone, &posts).await.is_empty());

    // A rejoins: its tail lands in B, item by item, last writer wins.
    replicator.cut(false);
    quiet(&regions, &replicator).await;
    let back = liked(&regions[B], &gone, &posts).await;
    assert_eq!(
        back,
        posts[4..],
        "the tail's likes of posts B never had come back; the one B's later erase deleted (posts[1]) stays deleted"
    );
    assert_eq!(regions[A].items().await, regions[B].items().await);

    // The runbook: erase-user again in each region, one after the other.
    for r in [A, B] {
        erase(&regions[r], &gone).await;
        quiet(&regions, &replicator).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    for region in &regions {
        assert!(
            liked(region, &gone, &posts).await.is_empty(),
            "{}: a like of the erased account survived",
            region.name
        );
        assert_eq!(
            liked(region, &stays, &posts).await,
            posts[..4],
            "{}",
            region.name
        );
        for (p, (held, counted)) in posts.iter().zip(region.counts_against_table(&posts).await) {
            assert_eq!(counted, held, "{}: post {p}", region.name);
        }
    }
    assert_eq!(regions[A].items().await, regions[B].items().await);
}
