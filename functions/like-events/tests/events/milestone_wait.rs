//! A milestone whose count the aggregator had not yet counted when its like's batch was checked
//! (invariant 6, issue 32 item 4): it is announced within the stated bound of the aggregator
//! counting it, whether or not another like follows, exactly once; and a count that does not
//! catch up holds the shard no longer than the stated hold. On a paused clock: the aggregator's
//! lag is a time on it, and Lambda's redelivery is the loop below.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use common::world::{count_ahead, records, Rec, World};
use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::events::CountsProgress;
use likes_core::store::memory::{MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression};
use likes_core::{PostCounts, PostId, StoreError, UserId};
use likes_sim::stream::batch;
use serde_json::Value;
use tokio::time::Instant;

/// `LIKES_EVENTS_COUNT_WAIT_MS`'s default, and the hold docs/events.md states for it (20 waits).
const COUNT_WAIT: Duration = Duration::from_secs(3);
const HOLD: Duration = Duration::from_secs(60);
/// The events function's mapping gives a record up after this many retries (template.yaml).
const MAX_RETRIES: usize = 100;

/// The Counts table as the events function reads it while the aggregator lags: `before` until
/// `at` on the paused clock (never if `None`), `after` (the aggregator has counted the batch)
/// from then on. Counts the reads, for the cost.
#[derive(Clone)]
struct Lagging {
    before: MemoryCounts,
    after: MemoryCounts,
    at: Option<Instant>,
    reads: Arc<AtomicUsize>,
}

impl CountsProgress for Lagging {
    async fn progress(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        self.reads.fetch_add(1, Ordering::Relaxed);
        let caught_up = self.at.is_some_and(|at| Instant::now() >= at);
        let store = if caught_up { &self.after } else { &self.before };
        Ok(store.read_post_now(post))
    }
}

type Function = LikeEvents<MemorySuppression, MemoryMilestones, Lagging, MemoryBus>;

fn function(counts: Lagging, bus: &MemoryBus) -> Function {
    LikeEvents {
        suppression: MemorySuppression::default(),
        milestones: MemoryMilestones::default(),
        counts,
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published: Published::Notifications,
            window: Duration::from_secs(86_400),
            count_wait: COUNT_WAIT,
            concurrency: 2,
        }),
    }
}

/// Records created `age` before now (the stream's clock is the wall clock; a paused tokio clock
/// does not move it).
fn created_ago(mut recs: Vec<Rec>, age: Duration) -> Vec<Rec> {
    let last = recs.iter().map(|r| r.t).max().unwrap_or(0);
    let shift = Utc::now().timestamp() - age.as_secs() as i64 - last;
    for r in &mut recs {
        r.t += shift;
    }
    recs
}

/// Lambda's mapping: the batch, then again from each reported record, until none is reported
/// (within the mapping's retry limit). The invocations made.
async fn deliver(f: &Function, w: &World, recs: &[Rec]) -> usize {
    let mut at = 0;
    for n in 1..=MAX_RETRIES + 1 {
        let text = batch(recs[at..].iter().map(|r| w.json(r)).collect()).to_string();
        let report = f.process_json(&text, None).await.expect("a stream event");
        let Some(cp) = report.checkpoint else {
            return n;
        };
        at += recs[at..]
            .iter()
            .position(|r| r.seq == cp)
            .expect("names a record of the batch");
    }
    panic!("the mapping gave the batch up after {MAX_RETRIES} retries");
}

fn details(bus: &MemoryBus) -> Vec<(String, Value)> {
    bus.accepted()
        .into_iter()
        .map(|e| {
            let d: Value = serde_json::from_str(&e.detail).expect("JSON");
            common::check(e.detail_type, &d).expect("valid under its schema");
            (e.detail_type.to_owned(), d)
        })
        .collect()
}

/// Raw announcements per (post, milestone): a duplicate counts twice.
fn announcements(bus: &MemoryBus) -> BTreeMap<(String, u64), usize> {
    let mut out = BTreeMap::new();
    for (_, d) in details(bus)
        .into_iter()
        .filter(|(t, _)| t == "LikeMilestone")
    {
        let key = (
            d["post_id"].as_str().expect("post_id").to_owned(),
            d["milestone"].as_u64().expect("milestone"),
        );
        *out.entry(key).or_default() += 1;
    }
    out
}

/// Ten likes on post 0, then one on post 1 behind them; the aggregator has counted the first
/// nine until `caught_up`, all of them from then on.
async fn ten_likes_nine_counted(caught_up: Instant) -> (World, Vec<Rec>, Lagging) {
    let w = World {
        posts: vec![PostId::new_random(), PostId::new_random()],
        users: (0..10).map(|_| UserId::new_random()).collect(),
    };
    let mut ops: Vec<_> = (0..10).map(|u| (u, 0, true, 1)).collect();
    ops.push((0, 1, true, 1));
    let recs = created_ago(records(&ops), Duration::ZERO);
    let (before, after) = (MemoryCounts::default(), MemoryCounts::default());
    count_ahead(&before, &w, &recs[..9]).await;
    count_ahead(&after, &w, &recs).await;
    let counts = Lagging {
        before,
        after,
        at: Some(caught_up),
        reads: Arc::default(),
    };
    (w, recs, counts)
}

/// The post's 10th like is checked while the aggregator has counted only the first nine; it
/// counts the 10th 5 s later, and no like ever follows. The milestone is announced once, within
/// a count wait of being counted, and nothing is published twice.
#[tokio::test(start_paused = true)]
async fn a_milestone_counted_after_its_batch_was_checked_is_announced_without_another_like() {
    let lag = Duration::from_secs(5);
    let started = Instant::now();
    let (w, recs, counts) = ten_likes_nine_counted(started + lag).await;
    let bus = MemoryBus::default();
    let f = function(counts.clone(), &bus);

    assert_eq!(deliver(&f, &w, &recs[..9]).await, 1);
    let invocations = deliver(&f, &w, &recs[9..]).await;

    let post = |p: usize| w.posts[p].to_string();
    let want = BTreeMap::from([((post(0), 1), 1), ((post(0), 10), 1), ((post(1), 1), 1)]);
    assert_eq!(announcements(&bus), want, "each milestone announced once");
    let ten = details(&bus)
        .into_iter()
        .find(|(_, d)| d["milestone"] == 10)
        .expect("milestone 10");
    assert_eq!(ten.1["like_count"], 10);
    assert_eq!(ten.1["sequence_number"], recs[9].seq.as_str());
    // Within a count wait of the aggregator counting it; the shard held meanwhile.
    assert!(
        started.elapsed() <= lag + COUNT_WAIT,
        "announced {:?} after the like, the aggregator counted it after {lag:?}",
        started.elapsed()
    );
    assert_eq!(
        like_events::checks::hold(COUNT_WAIT),
        HOLD,
        "the hold docs/events.md states"
    );
    assert!(invocations <= 1 + (HOLD.as_secs() / COUNT_WAIT.as_secs()) as usize);
    // The cost docs/events.md states: at most 6 Counts reads per post behind and invocation.
    let reads = counts.reads.load(Ordering::Relaxed);
    assert!(reads <= 1 + 2 * 6 * invocations, "{reads} Counts reads");
    // Nothing twice: the records behind the held one were published once, on the redelivery.
    let mut ids: HashMap<String, usize> = HashMap::new();
    for (_, d) in details(&bus) {
        *ids.entry(d["event_id"].as_str().expect("id").to_owned())
            .or_default() += 1;
    }
    assert!(ids.values().all(|n| *n == 1), "published twice: {ids:?}");
    assert_eq!(ids.len(), 11 + 3, "eleven notifications, three milestones");
}

/// The post's first ten likes in one batch, checked while the aggregator has counted nine: the
/// count already passes milestone 1, but the batch's own likes reach 10. Both are announced,
/// once each, 10 once the aggregator counts it, without another like (a count taken at once
/// announced 1 and left 10 for a like that never came).
#[tokio::test(start_paused = true)]
async fn a_batch_reaching_two_milestones_waits_for_its_own_count() {
    let (w, recs, counts) = ten_likes_nine_counted(Instant::now() + Duration::from_secs(2)).await;
    let bus = MemoryBus::default();
    let f = function(counts, &bus);
    deliver(&f, &w, &recs).await;
    let post = |p: usize| w.posts[p].to_string();
    let want = BTreeMap::from([((post(0), 1), 1), ((post(0), 10), 1), ((post(1), 1), 1)]);
    assert_eq!(announcements(&bus), want, "each milestone announced once");
}

/// The aggregator never catches up (it is down). A like younger than the hold is held: it is
/// reported, and nothing of it or behind it is published; once older than the hold, it is let
/// through, its notification published and its post's milestones left to the next like. So the
/// shard waits at most the hold, and a count wait more.
#[tokio::test(start_paused = true)]
async fn a_count_that_never_catches_up_holds_the_shard_no_longer_than_the_hold() {
    let w = World {
        posts: vec![PostId::new_random()],
        users: vec![UserId::new_random(), UserId::new_random()],
    };
    let ops = [(0, 0, true, 1), (1, 0, true, 1)];
    let down = |bus: &MemoryBus| {
        let counts = Lagging {
            before: MemoryCounts::default(),
            after: MemoryCounts::default(),
            at: None,
            reads: Arc::default(),
        };
        function(counts, bus)
    };

    let young = created_ago(records(&ops), Duration::ZERO);
    let bus = MemoryBus::default();
    let f = down(&bus);
    let text = batch(young.iter().map(|r| w.json(r)).collect()).to_string();
    let started = Instant::now();
    let report = f.process_json(&text, None).await.expect("a stream event");
    assert_eq!(started.elapsed(), COUNT_WAIT);
    assert_eq!(report.checkpoint.as_deref(), Some(young[0].seq.as_str()));
    assert_eq!(bus.accepted().len(), 0);

    let old = created_ago(records(&ops), HOLD + Duration::from_secs(1));
    let bus = MemoryBus::default();
    let f = down(&bus);
    let text = batch(old.iter().map(|r| w.json(r)).collect()).to_string();
    let report = f.process_json(&text, None).await.expect("a stream event");
    assert_eq!(report.checkpoint, None);
    assert_eq!(report.deferred_milestones, 1);
    let kinds: Vec<String> = details(&bus).into_iter().map(|(t, _)| t).collect();
    assert_eq!(kinds, ["LikeNotification", "LikeNotification"]);
}
