//! A feed summary's counts (`count_cache`'s feed age): read once per environment per feed age
//! however many feeds show the post, from many environments at once; a change shows within the
//! feed age; and a post this environment wrote is read again within the TTL, so that the
//! writer's own feed shows its count as soon as the aggregator has it. The count route keeps
//! its TTL throughout. Counts stores count each read of a post's item (`hot_counts`'s fake);
//! tokio's clock is paused.

use std::time::Duration;

use likes_api::count_cache::{MAX_FEED_AGE, WRITE_MARK};
use likes_api::{App, CountCache};
use likes_core::store::memory::MemoryLikes;
use likes_core::{PostId, UserId};
use likes_harness::call_as;
use serde_json::json;

use crate::hot_counts::{item, summary, Throttled, TTL};

const FEED_AGE: Duration = Duration::from_secs(30);

fn environment(likes: i64) -> App<MemoryLikes, Throttled> {
    let cache = CountCache::new(TTL).with_feed_age(FEED_AGE);
    App::with_cache(
        MemoryLikes::default(),
        Throttled::with(&[("like", likes)]),
        cache,
    )
}

async fn feed_count(app: &App<MemoryLikes, Throttled>, post: &PostId, me: &UserId) -> i64 {
    let s = summary(app, &[post], me).await;
    item(&s, post)["like_count"].as_i64().expect("a count")
}

/// Eight environments each show a hot post in 600 summaries over a minute (10 a second each):
/// each reads its item at most once per feed age (plus the first), not once per TTL; a change
/// shows in every environment within one feed age. Fails when a feed reads at the TTL's rate.
#[tokio::test(start_paused = true)]
async fn a_hot_post_is_read_once_per_feed_age_per_environment() {
    let envs: Vec<_> = (0..8).map(|_| environment(5)).collect();
    let (hot, me) = (PostId::new_random(), UserId::new_random());
    let seconds = 60;
    for _ in 0..seconds * 10 {
        for env in &envs {
            assert_eq!(feed_count(env, &hot, &me).await, 5);
        }
        tokio::time::advance(Duration::from_millis(100)).await;
    }
    let most = (seconds / FEED_AGE.as_secs() + 1) as usize;
    for env in &envs {
        let reads = env.counts.reads(&hot);
        assert!(
            reads <= most,
            "{reads} reads in {seconds} s with a {FEED_AGE:?} feed age"
        );
    }
    for env in &envs {
        env.counts.set(&[("like", 9)]);
    }
    tokio::time::advance(FEED_AGE).await;
    for env in &envs {
        assert_eq!(
            feed_count(env, &hot, &me).await,
            9,
            "not shown within the feed age"
        );
    }
}

/// Another's like counted: the feed shows the old count up to the feed age while the count
/// route shows the new one within its TTL. This environment's own like counted: its feed shows
/// it within the TTL. Fails without the write's mark (the feed would show the old count for
/// a feed age).
#[tokio::test(start_paused = true)]
async fn the_environments_own_write_is_shown_within_the_ttl() {
    let app = environment(5);
    let (post, me) = (PostId::new_random(), UserId::new_random());
    assert_eq!(feed_count(&app, &post, &me).await, 5);
    app.counts.set(&[("like", 6)]);
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        feed_count(&app, &post, &me).await,
        5,
        "a feed takes counts up to its age"
    );
    let path = format!("/posts/{post}/likes/count");
    let (s, body, _) = call_as(&app, "GET", &path, me.as_ref()).await;
    assert_eq!(
        (s, &body["like_count"]),
        (200, &json!(6)),
        "the route keeps its TTL: {body}"
    );

    let (s, body, _) = call_as(&app, "PUT", &format!("/posts/{post}/like"), me.as_ref()).await;
    assert_eq!(s, 200, "{body}");
    // The aggregator counts it.
    app.counts.set(&[("like", 7)]);
    tokio::time::advance(TTL).await;
    assert_eq!(
        feed_count(&app, &post, &me).await,
        7,
        "the own write's count"
    );

    // Past the write's mark, a read holds the write: the feed takes its age again, so a post
    // this environment writes now and then is not held to the TTL for good.
    tokio::time::advance(WRITE_MARK).await;
    assert_eq!(feed_count(&app, &post, &me).await, 7);
    let reads = app.counts.reads(&post);
    app.counts.set(&[("like", 8)]);
    tokio::time::advance(Duration::from_secs(10)).await;
    assert_eq!(
        (feed_count(&app, &post, &me).await, app.counts.reads(&post)),
        (7, reads),
        "counts read past the mark serve the feed age"
    );
}

/// At the longest feed age, a post whose item DynamoDB will not serve past that age still shows
/// its last counts, marked, not null: the stale fallback outlives the feed age. Failed while
/// `MAX_STALE` equalled `MAX_FEED_AGE` (null).
#[tokio::test(start_paused = true)]
async fn past_the_longest_feed_age_a_throttled_post_shows_its_last_counts() {
    let cache = CountCache::new(TTL).with_feed_age(MAX_FEED_AGE);
    let app = App::with_cache(
        MemoryLikes::default(),
        Throttled::with(&[("like", 5)]),
        cache,
    );
    let (post, me) = (PostId::new_random(), UserId::new_random());
    assert_eq!(feed_count(&app, &post, &me).await, 5);
    tokio::time::advance(MAX_FEED_AGE + TTL).await;
    app.counts.throttle(&post, true);
    let s = summary(&app, &[&post], &me).await;
    let i = item(&s, &post);
    assert_eq!(
        (&i["like_count"], &i["count_unavailable"]),
        (&json!(5), &json!(true)),
        "{s}"
    );
}
