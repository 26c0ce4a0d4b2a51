//! The shared count tier (docs/performance.md#the-shared-count-tier) with a real `redis-server`
//! as its store and the emulator as DynamoDB: several API "execution environments" (apps, each
//! with its own count cache and DynamoDB client, counting its requests) share one tier.
//! - A post read by many environments is read from DynamoDB once; every one shows its count.
//! - An environment's own write is never hidden by counts another environment read before it:
//!   its next summaries show it once the aggregator has it.
//! - The tier going away costs reads, never an answer.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use count_aggregator::Aggregator;
use likes_api::CountCache;
use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::env::SummaryMine;
use likes_aws::DynamoPolicies;
use likes_core::erase_job::Call;
use likes_core::moderation::Decided;
use likes_core::policy::{Audience, Defaults, Policies, Policy};
use likes_core::time::format_ts;
use likes_core::{PostId, UserId};
use likes_harness::stream::{event, Deliver, Rec};
use likes_harness::valkey::ValkeyServer;
use likes_harness::{call, call_as, eventually, like_path, ApiEvent, RequestCounter, Tables};

type Api = likes_api::App<likes_aws::DynamoLikes, likes_aws::DynamoCounts>;

/// One execution environment as the template deploys it: a 1 s count cache, a feed age of
/// 60 s, `SummaryMine=fast` (so that a summary's only BatchGetItem is its counts), and the tier
/// if given. Its DynamoDB requests go to `counter`.
async fn environment(t: &Tables, tier: Option<&ValkeyServer>, counter: &RequestCounter) -> Api {
    let mut app = t.app_with(counter.clone());
    app.cache = CountCache::new(Duration::from_secs(1)).with_feed_age(Duration::from_secs(60));
    let app = app.with_summary_mine(SummaryMine::Fast);
    match tier {
        // Connected first, as the Lambda entry connects during init.
        Some(server) => app.with_shared_counts(Arc::new(server.connected().await)),
        None => app,
    }
}

/// Each post's like count in the caller's summary, in the order asked.
async fn counts(app: &Api, me: &UserId, posts: &[PostId]) -> Vec<Option<i64>> {
    let ids: Vec<String> = posts.iter().map(ToString::to_string).collect();
    let since = format_ts(Utc::now() - chrono::Duration::hours(1));
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&format!("post_ids={}&since={since}", ids.join(",")))
        .caller(me.as_ref());
    let (s, body, _) = call(app, event).await;
    assert_eq!(s, 200, "{body}");
    let items = body["items"].as_array().expect("items");
    items.iter().map(|i| i["like_count"].as_i64()).collect()
}

/// Counts reads: a summary's counts are its only BatchGetItem (its "mine" is a Query).
fn count_reads(counter: &RequestCounter) -> usize {
    counter.take().get("BatchGetItem").copied().unwrap_or(0)
}

/// Runs the aggregator over these likes, as the stream would deliver them.
async fn aggregate(t: &Tables, likes: &[(PostId, UserId)], first_seq: u128) {
    let recs: Vec<Rec> = likes
        .iter()
        .enumerate()
        .map(|(i, (post, user))| Rec::new(true, post, user, (first_seq + i as u128).to_string()))
        .collect();
    let agg = Aggregator::new(t.counts());
    assert!(agg.deliver(&event(&recs)).await.checkpoint.is_none());
}

/// 8 environments show 20 posts' counts; 10 of the posts were liked. With the tier, DynamoDB
/// is read once for all of them; without it, once per environment.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_read_by_many_environments_are_read_from_dynamodb_once() {
    let t = Tables::new().await;
    let server = ValkeyServer::start().await;
    let posts: Vec<PostId> = (0..20).map(|_| PostId::new_random()).collect();
    let liker = UserId::new_random();
    let plain = t.app();
    for p in &posts[..10] {
        let (s, b, _) = call_as(&plain, "PUT", &like_path(p), liker.as_ref()).await;
        assert_eq!(s, 200, "{b}");
    }
    let likes: Vec<(PostId, UserId)> = posts[..10]
        .iter()
        .map(|p| (p.clone(), liker.clone()))
        .collect();
    aggregate(&t, &likes, 100_000_000_000_000_000_000).await;
    let expected: Vec<Option<i64>> = (0..20).map(|i| Some(i64::from(i < 10))).collect();

    for (tier, reads) in [(Some(&server), 1), (None, 8)] {
        let counter = RequestCounter::default();
        let mut envs = Vec::new();
        for _ in 0..8 {
            envs.push(environment(&t, tier, &counter).await);
        }
        for (i, env) in envs.iter().enumerate() {
            let viewer = UserId::new_random();
            assert_eq!(
                counts(env, &viewer, &posts).await,
                expected,
                "environment {i}"
            );
        }
        assert_eq!(
            count_reads(&counter),
            reads,
            "counts reads by 8 environments, tier: {}",
            tier.is_some()
        );
    }
}

/// Environment A's summary puts a post's count (0) in the tier. B likes the post. C, which
/// wrote nothing, may show A's count for a feed age (the promise: a feed's counts up to
/// `SummaryCountsMaxAge` old). B never keeps it: its summaries show its like once the
/// aggregator has it, and what B then reads is what a fresh environment D is shown.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_environments_own_write_is_not_hidden_by_shared_counts() {
    let t = Tables::new().await;
    let server = ValkeyServer::start().await;
    let counter = RequestCounter::default();
    let a = environment(&t, Some(&server), &counter).await;
    let b = environment(&t, Some(&server), &counter).await;
    let c = environment(&t, Some(&server), &counter).await;
    let d = environment(&t, Some(&server), &counter).await;
    let post = PostId::new_random();
    let posts = std::slice::from_ref(&post);
    let viewer = UserId::new_random();
    assert_eq!(counts(&a, &viewer, posts).await, vec![Some(0)]);
    assert_eq!(count_reads(&counter), 1);

    let me = UserId::new_random();
    let (s, body, _) = call_as(&b, "PUT", &like_path(&post), me.as_ref()).await;
    assert_eq!(s, 200, "{body}");
    aggregate(
        &t,
        &[(post.clone(), me.clone())],
        200_000_000_000_000_000_000,
    )
    .await;

    assert_eq!(
        counts(&c, &viewer, posts).await,
        vec![Some(0)],
        "C takes the tier's count, read before the like"
    );
    assert_eq!(count_reads(&counter), 0, "C read no counts");
    // The rule: counts read before B's write serve B at most the TTL (1 s), then B reads
    // again. Allowed here: the write mark's 5 s, whatever the machine's load.
    let since = std::time::Instant::now();
    let seen = eventually(
        "B's own like in its summary",
        || counts(&b, &me, posts),
        |n: &Vec<Option<i64>>| n == &vec![Some(1)],
    )
    .await;
    assert_eq!(seen, vec![Some(1)]);
    assert!(
        since.elapsed() < likes_api::count_cache::WRITE_MARK,
        "B's own like hidden for {:?}",
        since.elapsed()
    );
    assert!(count_reads(&counter) >= 1, "B read its post's count");
    assert_eq!(
        counts(&d, &viewer, posts).await,
        vec![Some(1)],
        "D is shown what B read"
    );
    assert_eq!(count_reads(&counter), 0, "D read no counts");
}

/// The tier stops: summaries still show every count, read from DynamoDB, in environments
/// connected to it before (A) and not (B, C).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tier_that_goes_away_costs_reads_not_answers() {
    let t = Tables::new().await;
    let mut server = ValkeyServer::start().await;
    let counter = RequestCounter::default();
    let a = environment(&t, Some(&server), &counter).await;
    let b = environment(&t, Some(&server), &counter).await;
    let c = environment(&t, Some(&server), &counter).await;
    let post = PostId::new_random();
    let liker = UserId::new_random();
    let (s, body, _) = call_as(&t.app(), "PUT", &like_path(&post), liker.as_ref()).await;
    assert_eq!(s, 200, "{body}");
    aggregate(&t, &[(post.clone(), liker)], 300_000_000_000_000_000_000).await;
    let posts = std::slice::from_ref(&post);
    let viewer = UserId::new_random();
    assert_eq!(counts(&a, &viewer, posts).await, vec![Some(1)]);
    server.stop().await;
    for env in [&b, &c] {
        assert_eq!(counts(env, &viewer, posts).await, vec![Some(1)]);
    }
    assert_eq!(count_reads(&counter), 3, "A's read, then B's and C's");
    let other = PostId::new_random();
    let both = [post.clone(), other];
    assert_eq!(counts(&a, &viewer, &both).await, vec![Some(1), Some(0)]);
    assert_eq!(count_reads(&counter), 1, "A read the post it lacked");
}

/// Counts an environment's reads of posts' policies.
struct CountedPolicies {
    inner: DynamoPolicies,
    reads: Arc<AtomicUsize>,
}

impl Policies for CountedPolicies {
    fn decide<'a>(&'a self, post: &'a PostId, p: &'a Policy, at: &'a str) -> Call<'a, Decided> {
        self.inner.decide(post, p, at)
    }

    fn policy<'a>(&'a self, post: &'a PostId) -> Call<'a, Option<Policy>> {
        self.reads.fetch_add(1, Ordering::SeqCst);
        self.inner.policy(post)
    }

    fn policy_count(&self) -> Call<'_, i64> {
        self.inner.policy_count()
    }
}

/// Once a post has a policy, a summary needs every shown post's. 4 environments show 10
/// posts, one whose counts its author keeps: with the tier the fleet reads each policy about
/// once (a renewal or two under load); without, each environment does. Every environment
/// hides that post's count from a viewer, and follows the author's opening it within the
/// policy's promise (`POLICY_TTL` and a read's time), tier or not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_feeds_policies_are_read_once_by_the_fleet_and_still_followed() {
    let t = Tables::new().await;
    let server = ValkeyServer::start().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&t.client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    let posts: Vec<PostId> = (0..10).map(|_| PostId::new_random()).collect();
    let mut kept = Policy {
        author: UserId::parse("auth0|author").expect("an id"),
        likes_on: true,
        counts: Audience::Author,
        likers: Audience::Public,
    };
    let recorder = DynamoPolicies::new(t.client.clone(), &table);
    recorder
        .decide(&posts[0], &kept, "2026-12-07T10:00:00.000Z")
        .await
        .expect("a policy recorded");
    let mut hidden = vec![Some(0); posts.len()];
    hidden[0] = None;
    let mut tiered = Vec::new();
    for tier in [Some(&server), None] {
        let (counter, policy_reads) = (RequestCounter::default(), Arc::new(AtomicUsize::new(0)));
        for i in 0..4 {
            let store = CountedPolicies {
                inner: DynamoPolicies::new(t.client.clone(), &table),
                reads: Arc::clone(&policy_reads),
            };
            let env = environment(&t, tier, &counter)
                .await
                .with_policies(Some(Arc::new(store)), Defaults::default());
            let viewer = UserId::new_random();
            assert_eq!(
                counts(&env, &viewer, &posts).await,
                hidden,
                "environment {i}"
            );
            if tier.is_some() {
                tiered.push(env);
            }
        }
        let reads = policy_reads.load(Ordering::SeqCst);
        match tier {
            Some(_) => assert!((10..=20).contains(&reads), "with the tier: {reads} reads"),
            None => assert_eq!(reads, 40, "without the tier"),
        }
    }

    // The author opens the count: every environment of the tier shows it within the promise.
    kept.counts = Audience::Public;
    recorder
        .decide(&posts[0], &kept, "2026-12-07T11:00:00.000Z")
        .await
        .expect("the policy changed");
    let opened = std::time::Instant::now();
    let viewer = UserId::new_random();
    for env in &tiered {
        eventually(
            "the opened count",
            || counts(env, &viewer, &posts),
            |n: &Vec<Option<i64>>| n[0] == Some(0),
        )
        .await;
    }
    let bound = likes_api::policies::POLICY_TTL + Duration::from_secs(1);
    assert!(
        opened.elapsed() < bound,
        "followed after {:?}",
        opened.elapsed()
    );
}
