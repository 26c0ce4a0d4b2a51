//! What a suspension and a restore of a user with many likes take: `likes_core::suspend`'s
//! sweeps on the emulator, every request counted in units (`reaction_cost`'s rules), timed, and
//! an estimate for AWS from the requests a move makes and DynamoDB's documented latencies.
//!
//! moto serialises requests (a few hundred a second), so its times are a floor on what the
//! procedure needs from the table, not AWS's. The AWS estimate takes each move (a strongly
//! consistent `GetItem`, then a two-item `TransactWriteItems`) at `MOVE_MS` on the critical path,
//! `MOVE_CONCURRENCY` at once, no faster than `MOVES_PER_SECOND` (`likes_core::suspend`'s pace),
//! and adds the suspension's settle.

use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use likes_aws::dynamo::schema::{create_table, LIKES};
use likes_aws::DynamoLikes;
use likes_core::erase::Sweep;
use likes_core::moderation::SUSPENSION_SETTLE;
use likes_core::suspend::{hide_user, unhide_user, MOVES_PER_SECOND, MOVE_CONCURRENCY};
use likes_core::{LikesStore, PostId, UserId, WriteToken};

use crate::reaction_cost::{counting, Units};

/// A move's latency on AWS, assumed: a strongly consistent `GetItem` (single-digit ms) and a
/// two-item transaction (DynamoDB documents transactions as about twice a plain write's
/// latency), ~20 ms together.
pub const MOVE_MS: f64 = 20.0;

pub struct Figures {
    pub likes: usize,
    pub hidden: usize,
    pub restored: usize,
    pub hide_secs: f64,
    pub restore_secs: f64,
    /// Units per like moved, each way.
    pub hide: Units,
    pub restore: Units,
    /// Requests per like moved, hiding (every kind of request summed).
    pub requests_per_move: f64,
}

impl Figures {
    /// The estimate for AWS, seconds: (suspension, restore) of `likes` likes.
    pub fn aws_secs(likes: usize) -> (f64, f64) {
        let unpaced = likes as f64 / MOVE_CONCURRENCY as f64 * MOVE_MS / 1e3;
        let sweep = unpaced.max(likes as f64 / f64::from(MOVES_PER_SECOND));
        // Each run ends with two empty sweeps, the worker's pause (2 s) apart; a suspension
        // runs twice, the second after its settle (which the first covers when it is longer).
        let tail = 2.0;
        (
            (sweep + tail).max(SUSPENSION_SETTLE.as_secs_f64()) + tail,
            sweep + tail,
        )
    }
}

/// Seeds `likes` likes of one user, each on its own post, then hides and restores them all.
pub async fn measure(endpoint: &str, likes: usize) -> Result<Figures, String> {
    let raw = likes_aws::sdk::emulator_dynamo(endpoint).await;
    let table = format!("likes-{}", uuid::Uuid::new_v4().simple());
    create_table(&raw, &LIKES, &table)
        .await
        .map_err(|e| e.to_string())?;
    let user = UserId::new_random();
    let seeding = DynamoLikes::new(raw.clone(), table.clone());
    futures::stream::iter(0..likes)
        .map(|_| {
            let (seeding, user) = (&seeding, &user);
            async move {
                let at = likes_core::time::now_ts();
                let post = PostId::new_random();
                seeding.like(&post, user, &at, &WriteToken::random()).await
            }
        })
        .buffer_unordered(16)
        .try_collect::<Vec<bool>>()
        .await
        .map_err(|e| format!("seeding the likes: {e}"))?;

    let (client, counter) = counting(&raw, &table);
    let store = DynamoLikes::new(client, table);
    let sweep = Sweep {
        progress: &|_| {},
        empty_sweeps: 1,
        pause: Duration::ZERO,
        before: None,
    };
    let started = Instant::now();
    let hidden = hide_user(&store, &user, &sweep)
        .await
        .map_err(|e| format!("hiding: {e}"))?;
    let hide_secs = started.elapsed().as_secs_f64();
    let (hide, ops) = counter.take();
    let started = Instant::now();
    let restored = unhide_user(&store, &user, &sweep)
        .await
        .map_err(|e| format!("restoring: {e}"))?;
    let restore_secs = started.elapsed().as_secs_f64();
    let (restore, _) = counter.take();
    let per = |u: Units, n: usize| Units {
        write: u.write / n.max(1) as f64,
        read: u.read / n.max(1) as f64,
    };
    Ok(Figures {
        likes,
        hidden,
        restored,
        hide_secs,
        restore_secs,
        hide: per(hide, hidden),
        restore: per(restore, restored),
        requests_per_move: ops.values().sum::<usize>() as f64 / hidden.max(1) as f64,
    })
}

/// The figures as the bench prints them.
pub fn lines(
    f: &Figures,
    price_per_million_writes: f64,
    price_per_million_reads: f64,
) -> Vec<String> {
    let dollars =
        |u: Units| (u.write * price_per_million_writes + u.read * price_per_million_reads) / 1e6;
    let (suspend_aws, restore_aws) = Figures::aws_secs(10_000);
    vec![
        format!(
            "{} likes of one user: {} hidden in {:.1} s on moto ({:.0} moves/s), {} restored in {:.1} s ({:.0} moves/s); {:.2} requests per move",
            f.likes,
            f.hidden,
            f.hide_secs,
            f.hidden as f64 / f.hide_secs,
            f.restored,
            f.restore_secs,
            f.restored as f64 / f.restore_secs,
            f.requests_per_move
        ),
        format!(
            "per like hidden: {:.2} write + {:.2} read units (${:.6}); restored: {:.2} write + {:.2} read units (${:.6}); 10,000 likes each way: ${:.3} and ${:.3} on demand, and the aggregator's share as for 10,000 unlikes and likes",
            f.hide.write,
            f.hide.read,
            dollars(f.hide),
            f.restore.write,
            f.restore.read,
            dollars(f.restore),
            dollars(f.hide) * 1e4,
            dollars(f.restore) * 1e4
        ),
        format!(
            "estimated on AWS for 10,000 likes ({MOVE_CONCURRENCY} moves at once, {MOVE_MS} ms a move, at most {MOVES_PER_SECOND} a second): suspended in ~{suspend_aws:.0} s (the {} s settle within it), restored in ~{restore_aws:.0} s; one run writes at most ~{:.0} WRU/s, spread over the user's posts' partitions (5 at once, the worker's concurrency: ~{:.0} WRU/s)",
            SUSPENSION_SETTLE.as_secs(),
            f64::from(MOVES_PER_SECOND) * f.hide.write,
            5.0 * f64::from(MOVES_PER_SECOND) * f.hide.write
        ),
    ]
}
