//! Reactions through the events function, in memory: every event names its kind, a (user,
//! post, kind) is suppressed on its own — a like and a love by one user on one post each
//! notify once per window — and milestones stay on the like count.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::world::{count_ahead, records_of_kinds, Rec, World};
use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::memory::{MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression};
use likes_core::{PostId, UserId};
use likes_sim::stream::batch;
use serde_json::Value;

const W: u64 = 100;

/// One published event, as the test compares them: detail-type, kind, the record it is about
/// (index into the history), and the record whose notification it retracts.
type Seen = (String, String, usize, Option<usize>);

fn world(posts: usize, users: usize) -> World {
    World {
        posts: (0..posts).map(|_| PostId::new_random()).collect(),
        users: (0..users).map(|_| UserId::new_random()).collect(),
    }
}

fn function(
    bus: &MemoryBus,
    counts: &MemoryCounts,
    published: Published,
) -> LikeEvents<MemorySuppression, MemoryMilestones, MemoryCounts, MemoryBus> {
    LikeEvents {
        suppression: MemorySuppression::default(),
        milestones: MemoryMilestones::default(),
        counts: counts.clone(),
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published,
            window: Duration::from_secs(W),
            count_wait: Duration::ZERO,
            concurrency: 2,
        }),
    }
}

/// What reached the bus, by record; every detail valid under its schema.
fn seen(bus: &MemoryBus, recs: &[Rec]) -> BTreeSet<Seen> {
    let details: Vec<(String, Value)> = bus
        .accepted()
        .into_iter()
        .map(|e| {
            (
                e.detail_type.to_owned(),
                serde_json::from_str(&e.detail).unwrap(),
            )
        })
        .collect();
    let index = |seq: &str| recs.iter().position(|r| r.seq == seq).expect("a record's");
    let notified = |id: &str| {
        details
            .iter()
            .find(|(t, d)| t == "LikeNotification" && d["event_id"] == id)
            .map(|(_, d)| index(d["sequence_number"].as_str().unwrap()))
            .expect("retracts a published notification")
    };
    details
        .iter()
        .map(|(t, d)| {
            common::check(t, d).unwrap();
            (
                t.clone(),
                d["kind"]
                    .as_str()
                    .expect("every event names its kind")
                    .to_owned(),
                index(d["sequence_number"].as_str().unwrap()),
                d["retracts"].as_str().map(notified),
            )
        })
        .collect()
}

fn ev(t: &str, kind: &str, record: usize, retracts: Option<usize>) -> Seen {
    (t.to_owned(), kind.to_owned(), record, retracts)
}

/// A like and a love by one user on one post each notify once per window, and an unlike of the
/// love retracts the love's notification, not the like's: suppression is per (user, post,
/// kind). Every event names its kind; the milestone is the like count's, announced for a like.
#[tokio::test(start_paused = true)]
async fn a_like_and_a_love_each_notify_once_per_window_with_their_kind() {
    let w = world(2, 2);
    let recs = records_of_kinds(&[
        (0, 0, "like", true, 1),
        (0, 0, "love", true, 1),
        (0, 0, "love", false, 1),
        (0, 0, "love", true, 1),
        (1, 0, "love", true, 1),
        // Only loves on post 1: no milestone (milestones count likes).
        (0, 1, "love", true, 1),
        (1, 1, "love", true, 1),
        // After the window, the love notifies again; the like, still held, says nothing.
        (0, 0, "love", false, W as i64),
        (0, 0, "love", true, 1),
    ]);
    let (bus, counts) = (MemoryBus::default(), MemoryCounts::default());
    count_ahead(&counts, &w, &recs).await;
    let f = function(&bus, &counts, Published::All);
    let text = batch(recs.iter().map(|r| w.json(r)).collect()).to_string();
    let report = f.process_json(&text, None).await.unwrap();
    assert_eq!((report.checkpoint, report.records), (None, recs.len()));
    let mut want = BTreeSet::from([
        ev("LikeNotification", "like", 0, None),
        ev("LikeNotification", "love", 1, None),
        ev("LikeRetraction", "love", 2, Some(1)),
        ev("LikeNotification", "love", 4, None),
        ev("LikeNotification", "love", 5, None),
        ev("LikeNotification", "love", 6, None),
        ev("LikeNotification", "love", 8, None),
        ev("LikeMilestone", "like", 0, None),
    ]);
    for (i, r) in recs.iter().enumerate() {
        let t = if r.insert { "LikeAdded" } else { "LikeRemoved" };
        want.insert(ev(t, r.kind, i, None));
    }
    assert_eq!(seen(&bus, &recs), want);
    let milestones: Vec<Value> = bus
        .accepted()
        .iter()
        .filter(|e| e.detail_type == "LikeMilestone")
        .map(|e| serde_json::from_str(&e.detail).unwrap())
        .collect();
    assert_eq!(milestones.len(), 1);
    assert_eq!(
        (&milestones[0]["post_id"], &milestones[0]["like_count"]),
        (&Value::from(w.posts[0].as_str()), &Value::from(1))
    );
}

/// A reaction's records decide from their own state, batch after batch: a love a user added in
/// an earlier batch suppresses the same love in a later one, never the user's like.
#[tokio::test(start_paused = true)]
async fn each_kind_keeps_its_own_state_across_batches() {
    let w = world(1, 1);
    let recs = records_of_kinds(&[
        (0, 0, "love", true, 1),
        (0, 0, "love", false, 1),
        (0, 0, "like", true, 1),
        (0, 0, "love", true, 1),
    ]);
    let (bus, counts) = (MemoryBus::default(), MemoryCounts::default());
    count_ahead(&counts, &w, &recs).await;
    let f = function(&bus, &counts, Published::Notifications);
    for r in &recs {
        let text = batch(vec![w.json(r)]).to_string();
        let report = f.process_json(&text, None).await.unwrap();
        assert_eq!(report.checkpoint, None);
    }
    let want = BTreeSet::from([
        ev("LikeNotification", "love", 0, None),
        ev("LikeRetraction", "love", 1, Some(0)),
        ev("LikeNotification", "like", 2, None),
        ev("LikeMilestone", "like", 2, None),
    ]);
    assert_eq!(seen(&bus, &recs), want);
}

/// A reaction whose kind is outside the grammar, or that spells the like as a reaction, is
/// skipped like any record that can never be read: logged, counted, never a panic, and the
/// batch's other records are announced.
#[tokio::test(start_paused = true)]
async fn a_reaction_with_a_kind_outside_the_grammar_is_skipped() {
    let w = world(1, 1);
    let recs = records_of_kinds(&[(0, 0, "like", true, 1)]);
    let good = w.json(&recs[0]);
    let bad = |sk: String, seq: &str| {
        let mut r = good.clone();
        r["dynamodb"]["Keys"]["user_id"]["S"] = sk.into();
        r["dynamodb"]["SequenceNumber"] = seq.into();
        r
    };
    let user = w.users[0].as_str();
    let text = batch(vec![
        bad(format!("{user}#Love"), "1"),
        bad(format!("{user}#"), "2"),
        bad(format!("{user}#like"), "3"),
        bad(format!("{user}#{}", "x".repeat(33)), "4"),
        good,
    ])
    .to_string();
    let (bus, counts) = (MemoryBus::default(), MemoryCounts::default());
    count_ahead(&counts, &w, &recs).await;
    let f = function(&bus, &counts, Published::Notifications);
    let report = f.process_json(&text, None).await.unwrap();
    assert_eq!(
        (report.checkpoint, report.records, report.skipped),
        (None, 1, 4)
    );
    let want = BTreeSet::from([
        ev("LikeNotification", "like", 0, None),
        ev("LikeMilestone", "like", 0, None),
    ]);
    assert_eq!(seen(&bus, &recs), want);
}
