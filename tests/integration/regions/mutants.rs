//! The two-region simulation's checks, shown to fail on a broken replicator: a mutant that
//! applies every change as it arrives (no last writer wins) leaves the replicas differing
//! after a failover's conflict, where the replicator as MREC replicates leaves them equal.
//!
//! The conflict, deterministic: a like replicated to both regions; A cut off, its user's
//! unlike held there (the tail); the user fails over to B, which still has the like, and
//! unlikes and likes again. At the rejoin, A's older unlike reaches B and B's newer like
//! reaches A: last writer wins keeps the like in both; the mutant takes each arrival, so A
//! ends liked and B not.

use std::time::Duration;

use likes_core::{PostId, UserId};
use likes_harness::regions::replicator::Delays;
use likes_harness::regions::{like_key, pair, quiet, spawn, Moto, Region};
use likes_harness::{call_as, like_path};

const A: usize = 0;
const B: usize = 1;

async fn like(region: &Region, post: &PostId, user: &UserId, liked: bool) {
    let method = if liked { "PUT" } else { "DELETE" };
    let (s, body, _) = call_as(&region.app(), method, &like_path(post), user.as_str()).await;
    assert_eq!(s, 200, "{} {method}: {body}", region.name);
    assert_eq!(body["changed"], true, "{} {method}: {body}", region.name);
}

/// Whether each region ends with the like, after the conflict, replicated by a replicator
/// with or without last writer wins.
async fn conflict(last_writer_wins: bool, b_moto: &Moto) -> [bool; 2] {
    let delays = Delays {
        min: Duration::from_millis(20),
        max: Duration::from_millis(60),
    };
    let (regions, replicator) = pair(b_moto, delays, 5).await;
    replicator.last_writer_wins(last_writer_wins);
    let stop = spawn(&replicator);
    let (post, user) = (PostId::new_random(), UserId::new_random());
    like(&regions[A], &post, &user, true).await;
    quiet(&regions, &replicator).await;
    replicator.cut(true);
    like(&regions[A], &post, &user, false).await;
    like(&regions[B], &post, &user, false).await;
    like(&regions[B], &post, &user, true).await;
    replicator.cut(false);
    quiet(&regions, &replicator).await;
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let key = like_key(&post, &user);
    let mut liked = [false; 2];
    for r in [A, B] {
        liked[r] = regions[r].items().await.contains_key(&key);
        for (held, counted) in regions[r]
            .counts_against_table(std::slice::from_ref(&post))
            .await
        {
            assert_eq!(
                counted, held,
                "{}: counts follow the table either way",
                regions[r].name
            );
        }
    }
    liked
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replicator_without_last_writer_wins_leaves_the_replicas_differing() {
    let b_moto = Moto::start().await;
    let (as_built, mutant) = tokio::join!(conflict(true, &b_moto), conflict(false, &b_moto));
    assert_eq!(
        as_built,
        [true, true],
        "last writer wins: B's later like in both"
    );
    assert_ne!(
        mutant[A], mutant[B],
        "without last writer wins the replicas must differ, or the checks could not see it"
    );
}
