//! A viral post's counts with reaction kinds configured: one execution environment (one handler)
//! reads its Counts item at most once per cache TTL, however many summaries and reaction reads
//! show it; and a counts read DynamoDB throttles (keys still unprocessed after every round)
//! answers the summary with what was read, the unread posts marked, never a 503 for all.
//!
//! The Counts store is a fake over a fixed map that counts each post's item reads and refuses
//! the posts it is told are throttled, as the DynamoDB adapter's batch read does after its
//! rounds. tokio's clock is paused: the cache ages exactly as the test advances it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

use likes_api::{App, CountCache};
use likes_core::store::counts::PartialCounts;
use likes_core::store::memory::MemoryLikes;
use likes_core::{CountsRead, Kinds, Mode, PostId, Reactions, StoreError, UserId};
use likes_harness::{call, call_as, ApiEvent};
use serde_json::{json, Value};

pub(crate) const TTL: Duration = Duration::from_secs(1);

/// Every post's counts are `counts`; each read of a post's item is counted; a throttled post's
/// item cannot be read.
#[derive(Default)]
pub(crate) struct Throttled {
    counts: Mutex<BTreeMap<String, i64>>,
    reads: Mutex<HashMap<PostId, usize>>,
    throttled: Mutex<HashSet<PostId>>,
}

impl Throttled {
    pub(crate) fn with(counts: &[(&str, i64)]) -> Self {
        let s = Self::default();
        s.set(counts);
        s
    }

    pub(crate) fn set(&self, counts: &[(&str, i64)]) {
        let map = counts.iter().map(|(k, n)| ((*k).to_owned(), *n)).collect();
        *self.counts.lock().unwrap() = map;
    }

    pub(crate) fn throttle(&self, post: &PostId, on: bool) {
        let mut t = self.throttled.lock().unwrap();
        if on {
            t.insert(post.clone());
        } else {
            t.remove(post);
        }
    }

    pub(crate) fn reads(&self, post: &PostId) -> usize {
        self.reads.lock().unwrap().get(post).copied().unwrap_or(0)
    }

    /// One batch read: the posts it could read, and those left unprocessed.
    fn read(&self, posts: &[PostId]) -> (HashMap<PostId, BTreeMap<String, i64>>, Vec<PostId>) {
        let counts = self.counts.lock().unwrap().clone();
        let throttled = self.throttled.lock().unwrap().clone();
        let mut reads = self.reads.lock().unwrap();
        let (mut read, mut unread) = (HashMap::new(), Vec::new());
        for post in posts {
            *reads.entry(post.clone()).or_default() += 1;
            if throttled.contains(post) {
                unread.push(post.clone());
            } else {
                read.insert(post.clone(), counts.clone());
            }
        }
        (read, unread)
    }
}

fn throttled() -> StoreError {
    StoreError::Unavailable("BatchGetItem kept returning UnprocessedKeys".into())
}

impl CountsRead for Throttled {
    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        let m = self.kind_counts(post).await?;
        Ok(m.get("like").copied().unwrap_or(0))
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        let m = self.kind_counts_among(posts).await?;
        Ok(m.into_iter()
            .map(|(p, c)| (p, c.get("like").copied().unwrap_or(0)))
            .collect())
    }

    async fn kind_counts(&self, post: &PostId) -> Result<BTreeMap<String, i64>, StoreError> {
        let (mut read, unread) = self.read(std::slice::from_ref(post));
        match unread.is_empty() {
            true => Ok(read.remove(post).unwrap_or_default()),
            false => Err(throttled()),
        }
    }

    /// All or nothing, as the adapter's batch read was before partial reads.
    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError> {
        let (read, unread) = self.read(posts);
        match unread.is_empty() {
            true => Ok(read),
            false => Err(throttled()),
        }
    }

    async fn post_counts_partial(
        &self,
        posts: &[PostId],
    ) -> Result<PartialCounts<i64>, StoreError> {
        let (read, unread) = self.read(posts);
        let read = read
            .into_iter()
            .map(|(p, c)| (p, c.get("like").copied().unwrap_or(0)))
            .collect();
        Ok(PartialCounts { read, unread })
    }

    async fn kind_counts_partial(
        &self,
        posts: &[PostId],
    ) -> Result<PartialCounts<BTreeMap<String, i64>>, StoreError> {
        let (read, unread) = self.read(posts);
        Ok(PartialCounts { read, unread })
    }
}

fn app(kinds: &str, counts: Throttled) -> App<MemoryLikes, Throttled> {
    let reactions = Reactions {
        kinds: Kinds::parse(kinds).expect("kinds"),
        mode: Mode::Multi,
    };
    App::with_cache(MemoryLikes::default(), counts, CountCache::new(TTL)).with_reactions(reactions)
}

pub(crate) async fn summary(
    app: &App<MemoryLikes, Throttled>,
    posts: &[&PostId],
    me: &UserId,
) -> Value {
    let ids: Vec<String> = posts.iter().map(|p| p.to_string()).collect();
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&format!("post_ids={}", ids.join(",")))
        .caller(me.as_ref());
    let (status, body, _) = call(app, event).await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn reactions(app: &App<MemoryLikes, Throttled>, post: &PostId, me: &UserId) -> Value {
    let path = format!("/posts/{post}/reactions");
    let (status, body, _) = call_as(app, "GET", &path, me.as_ref()).await;
    assert_eq!(status, 200, "{body}");
    body
}

/// The summary's item of `post`.
pub(crate) fn item<'a>(summary: &'a Value, post: &PostId) -> &'a Value {
    let items = summary["items"].as_array().expect("items");
    let found = items.iter().find(|i| i["post_id"] == post.as_str());
    found.expect("the post's item")
}

/// 2,000 summaries with three kinds, 2,000 reads of the post's reactions and 2,000 of its
/// like count, a millisecond apart (1,000 of each a second, from one environment): the hot
/// post's item is read at most once per TTL, all routes together, and once per summary that
/// misses, not once per kind. Fails when any route reads the item on every request.
#[tokio::test(start_paused = true)]
async fn a_hot_posts_kind_counts_are_read_once_per_ttl() {
    let app = app("like,love,+1", Throttled::with(&[("like", 5), ("love", 3)]));
    let me = UserId::new_random();
    let (hot, other) = (PostId::new_random(), PostId::new_random());
    let want = json!({ "like": 5, "love": 3, "+1": 0 });
    let first = summary(&app, &[&hot, &other], &me).await;
    assert_eq!(item(&first, &hot)["reactions"], want);
    assert_eq!(
        app.counts.reads(&hot),
        1,
        "a summary with 3 kinds read the item more than once"
    );
    let count_path = format!("/posts/{hot}/likes/count");
    let seconds = 2;
    for _ in 0..seconds * 1000 {
        let s = summary(&app, &[&hot, &other], &me).await;
        assert_eq!(item(&s, &hot)["reactions"], want);
        assert_eq!(item(&s, &hot)["like_count"], 5);
        assert!(item(&s, &hot).get("count_unavailable").is_none(), "{s}");
        let r = reactions(&app, &hot, &me).await;
        assert_eq!((&r["counts"], &r["total"]), (&want, &json!(8)));
        let (status, c, _) = call_as(&app, "GET", &count_path, me.as_ref()).await;
        assert_eq!((status, &c["like_count"]), (200, &json!(5)), "{c}");
        tokio::time::advance(Duration::from_millis(1)).await;
    }
    let reads = app.counts.reads(&hot);
    assert!(
        reads <= seconds as usize,
        "{reads} reads of the hot post's Counts item in {seconds} s with a {TTL:?} cache"
    );
    // The cache expires: a change shows within the TTL.
    app.counts.set(&[("like", 6), ("love", 4)]);
    tokio::time::advance(TTL).await;
    let s = summary(&app, &[&hot], &me).await;
    assert_eq!(
        item(&s, &hot)["reactions"],
        json!({ "like": 6, "love": 4, "+1": 0 })
    );
    let r = reactions(&app, &hot, &me).await;
    assert_eq!(r["total"], 10, "{r}");
}

/// The hot post's item is throttled (unprocessed after every round) while two others are
/// not: the summary answers 200, the others with their counts, the hot one marked
/// `count_unavailable` — with null counts before this environment ever read them, with the
/// last counts it read afterwards. "Mine" stays strong throughout. Fails with a 503 for the
/// whole summary.
#[tokio::test(start_paused = true)]
async fn a_throttled_counts_read_marks_the_post_and_serves_the_rest() {
    let app = app("like,love", Throttled::with(&[("like", 7), ("love", 2)]));
    let me = UserId::new_random();
    let (hot, a, b) = (
        PostId::new_random(),
        PostId::new_random(),
        PostId::new_random(),
    );
    let (s, body, _) = call_as(
        &app,
        "PUT",
        &format!("/posts/{hot}/reactions/love"),
        me.as_ref(),
    )
    .await;
    assert_eq!(s, 200, "{body}");
    app.counts.throttle(&hot, true);

    let s = summary(&app, &[&a, &hot, &b], &me).await;
    for post in [&a, &b] {
        let i = item(&s, post);
        assert_eq!(i["reactions"], json!({ "like": 7, "love": 2 }), "{s}");
        assert!(i.get("count_unavailable").is_none(), "{s}");
    }
    let i = item(&s, &hot);
    assert_eq!(i["count_unavailable"], true, "{s}");
    assert!(i["like_count"].is_null() && i["reactions"].is_null(), "{s}");
    assert_eq!(i["my_reactions"], json!(["love"]), "{s}");
    let r = reactions(&app, &hot, &me).await;
    assert_eq!(r["count_unavailable"], true, "{r}");
    assert!(r["counts"].is_null() && r["total"].is_null(), "{r}");
    assert_eq!(r["mine"], json!(["love"]), "{r}");

    // Read once, then throttled again past the TTL: the last counts read, marked.
    app.counts.throttle(&hot, false);
    let s = summary(&app, &[&hot], &me).await;
    assert!(item(&s, &hot).get("count_unavailable").is_none(), "{s}");
    app.counts.set(&[("like", 9), ("love", 9)]);
    app.counts.throttle(&hot, true);
    tokio::time::advance(TTL * 3 / 2).await;
    let s = summary(&app, &[&hot, &a], &me).await;
    let i = item(&s, &hot);
    assert_eq!(i["count_unavailable"], true, "{s}");
    assert_eq!(
        (&i["like_count"], &i["reactions"]),
        (&json!(7), &json!({ "like": 7, "love": 2 }))
    );
    assert_eq!(
        item(&s, &a)["reactions"],
        json!({ "like": 9, "love": 9 }),
        "{s}"
    );
    let r = reactions(&app, &hot, &me).await;
    assert_eq!(
        (&r["count_unavailable"], &r["total"]),
        (&json!(true), &json!(9)),
        "{r}"
    );
}

/// A like-only deployment's summary, throttled the same way: the same marker, not a 503.
#[tokio::test(start_paused = true)]
async fn a_throttled_like_count_marks_the_post_and_serves_the_rest() {
    let app = app("like", Throttled::with(&[("like", 4)]));
    let me = UserId::new_random();
    let (hot, a) = (PostId::new_random(), PostId::new_random());
    app.counts.throttle(&hot, true);
    let s = summary(&app, &[&hot, &a], &me).await;
    assert_eq!(item(&s, &a)["like_count"], 4, "{s}");
    let i = item(&s, &hot);
    assert_eq!(i["count_unavailable"], true, "{s}");
    assert!(i["like_count"].is_null() && i["reactions"].is_null(), "{s}");
    assert_eq!(i["liked_by_me"], false, "{s}");
}

/// On the emulator, through the DynamoDB adapter: every round of the summary's counts batch
/// leaves the hot post's key unprocessed (an SDK interceptor moves it from the answer to
/// `UnprocessedKeys`, as a throttled partition does). The summary answers 200 after the
/// adapter's rounds, the other post's counts read, the hot one marked. Fails with a 503.
#[tokio::test]
async fn on_dynamodb_unprocessed_keys_mark_the_post_not_the_summary() {
    use aws_sdk_dynamodb::types::AttributeValue;
    let t = likes_harness::Tables::new().await;
    let (hot, other) = (PostId::new_random(), PostId::new_random());
    for post in [&hot, &other] {
        t.client
            .put_item()
            .table_name(&t.counts_table)
            .item("post_id", AttributeValue::S(post.to_string()))
            .item("c0", AttributeValue::N("3".into()))
            .item("k0#love", AttributeValue::N("2".into()))
            .send()
            .await
            .expect("a Counts item");
    }
    let unprocessed = Unprocessed::new(&t.counts_table, &hot);
    let reactions = Reactions {
        kinds: Kinds::parse("like,love").expect("kinds"),
        mode: Mode::Multi,
    };
    let app = t.app_with(unprocessed.clone()).with_reactions(reactions);
    let me = UserId::new_random();
    let ids = format!("post_ids={hot},{other}");
    let event = ApiEvent::new("GET", "/likes/summary")
        .query(&ids)
        .caller(me.as_ref());
    let (status, s, _) = call(&app, event).await;
    assert_eq!(status, 200, "{s}");
    assert_eq!(
        item(&s, &other)["reactions"],
        json!({ "like": 3, "love": 2 }),
        "{s}"
    );
    let i = item(&s, &hot);
    assert_eq!(i["count_unavailable"], true, "{s}");
    assert!(i["reactions"].is_null(), "{s}");
    let rounds = unprocessed.rounds.load(std::sync::atomic::Ordering::SeqCst);
    assert_eq!(rounds, 5, "the adapter's rounds of the batch");
}

/// Moves one post's Counts item out of every `BatchGetItem` answer into `UnprocessedKeys`.
#[derive(Debug, Clone)]
struct Unprocessed {
    table: String,
    post: String,
    rounds: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Unprocessed {
    fn new(table: &str, post: &PostId) -> Self {
        Self {
            table: table.to_owned(),
            post: post.to_string(),
            rounds: Default::default(),
        }
    }
}

impl aws_sdk_dynamodb::config::Intercept for Unprocessed {
    fn name(&self) -> &'static str {
        "Unprocessed"
    }

    fn modify_before_attempt_completion(
        &self,
        ctx: &mut aws_sdk_dynamodb::config::interceptors::FinalizerInterceptorContextMut<'_>,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        _cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        use aws_sdk_dynamodb::operation::batch_get_item::BatchGetItemOutput;
        use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
        let Some(Ok(out)) = ctx.output_or_error_mut() else {
            return Ok(());
        };
        let Some(out) = out.downcast_mut::<BatchGetItemOutput>() else {
            return Ok(());
        };
        // Only the Counts table's batch: the caller's likes are read from another.
        let Some(items) = out.responses.as_mut().and_then(|r| r.get_mut(&self.table)) else {
            return Ok(());
        };
        let key = AttributeValue::S(self.post.clone());
        items.retain(|i| i.get("post_id") != Some(&key));
        let keys = KeysAndAttributes::builder()
            .keys(HashMap::from([("post_id".to_owned(), key)]))
            .build()?;
        out.unprocessed_keys = Some(HashMap::from([(self.table.clone(), keys)]));
        self.rounds
            .fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Ok(())
    }
}
