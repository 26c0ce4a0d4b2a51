//! The events function on whole batches, in memory: a redelivered batch, `none`, and the
//! schemas every published detail-type has.

use crate::common;

use std::collections::BTreeSet;
use std::time::Duration;

use common::world::{count_ahead, records, World};
use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::events::Pair;
use likes_core::store::memory::{MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression};
use likes_core::{PostId, UserId};
use likes_sim::stream::batch;
use serde_json::Value;

const W: u64 = 100;

/// A batch delivered again (a lost answer, a bisect's retry) publishes each of its records'
/// events again under the same ids: suppression never swallows the event of a retried record.
#[tokio::test(start_paused = true)]
async fn a_redelivered_batch_publishes_its_events_again_under_the_same_ids() {
    let w = World {
        posts: vec![PostId::new_random()],
        users: vec![UserId::new_random()],
    };
    let recs = records(&[(0, 0, true, 1), (0, 0, false, 1), (0, 0, true, 1)]);
    let bus = MemoryBus::default();
    let counts = MemoryCounts::default();
    count_ahead(&counts, &w, &recs).await;
    let f = LikeEvents {
        suppression: MemorySuppression::default(),
        milestones: MemoryMilestones::default(),
        counts,
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published: Published::Notifications,
            window: Duration::from_secs(W),
            count_wait: Duration::ZERO,
            concurrency: 2,
        }),
    };
    let text = batch(recs.iter().map(|r| w.json(r)).collect()).to_string();
    // Sorted: lanes run concurrently (one pair's events keep their order, not the whole batch's).
    let ids = |from: usize| -> Vec<(String, String)> {
        bus.accepted()[from..]
            .iter()
            .map(|e| {
                let d: Value = serde_json::from_str(&e.detail).unwrap();
                (
                    e.detail_type.to_owned(),
                    d["event_id"].as_str().unwrap().to_owned(),
                )
            })
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect()
    };
    let first = f.process_json(&text, None).await.unwrap();
    assert_eq!(first.checkpoint, None);
    let once = ids(0);
    let kinds: Vec<&str> = once.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(
        kinds,
        ["LikeMilestone", "LikeNotification", "LikeRetraction"]
    );
    let again = f.process_json(&text, None).await.unwrap();
    assert_eq!(again.checkpoint, None);
    // The notification, the retraction, and the milestone the last like announced: again.
    assert_eq!(ids(once.len()), once);
}

/// The schemas on disk are exactly the detail-types published.
#[test]
fn a_schema_per_detail_type_and_no_other() {
    let on_disk: BTreeSet<String> = std::fs::read_dir(common::schemas_dir())
        .expect("functions/like-events/schemas/")
        .filter_map(|d| d.ok()?.file_name().into_string().ok())
        .collect();
    let published: BTreeSet<String> = like_events::detail::DETAIL_TYPES
        .iter()
        .map(|(_, f)| (*f).to_owned())
        .collect();
    assert_eq!(on_disk, published);
    // And a schema refuses what it must: a detail without its id.
    let bad = serde_json::json!({"schema_version": 1, "post_id": "p", "user_id": "u"});
    assert!(common::check("LikeAdded", &bad).is_err());
}

/// With nothing to publish, nothing is read, written or published (invariant 9).
#[tokio::test(start_paused = true)]
async fn none_publishes_reads_and_writes_nothing() {
    let w = World {
        posts: vec![PostId::new_random()],
        users: vec![UserId::new_random()],
    };
    let recs = records(&[(0, 0, true, 1), (0, 0, false, 1)]);
    let bus = MemoryBus::default();
    let suppression = MemorySuppression::default();
    let f = LikeEvents {
        suppression: suppression.clone(),
        milestones: MemoryMilestones::default(),
        counts: MemoryCounts::default(),
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published: Published::None,
            ..EventRules::default()
        }),
    };
    let text = batch(recs.iter().map(|r| w.json(r)).collect()).to_string();
    let report = f.process_json(&text, None).await.unwrap();
    assert_eq!((report.checkpoint, report.records), (None, 2));
    assert_eq!(bus.calls(), 0);
    let pair = Pair::like(w.posts[0].clone(), w.users[0].clone());
    assert_eq!(suppression.get_now(&pair), None);
}

/// A bus taking a second a call: a brownout.
struct SlowBus(MemoryBus);

impl likes_core::store::events::EventBus for SlowBus {
    async fn put(
        &self,
        entries: &[likes_core::store::events::BusEntry],
    ) -> Result<Vec<Option<String>>, likes_core::StoreError> {
        tokio::time::sleep(Duration::from_secs(1)).await;
        self.0.put(entries).await
    }
}

/// Invariant 8: near the deadline no call is started; the batch answers before it, reporting
/// the first record whose event was not sent, and the redelivery sends the rest.
#[tokio::test(start_paused = true)]
async fn a_slow_bus_never_runs_the_batch_past_its_deadline() {
    let w = World {
        posts: (0..50).map(|_| PostId::new_random()).collect(),
        users: vec![UserId::new_random()],
    };
    // Fifty unlikes of likes made before: one LikeRemoved each, nothing else.
    let recs: Vec<_> = records(&(0..50).map(|p| (0, p, true, 1)).collect::<Vec<_>>())
        .into_iter()
        .map(|mut r| {
            r.insert = false;
            r
        })
        .collect();
    let bus = MemoryBus::default();
    let f = LikeEvents {
        suppression: MemorySuppression::default(),
        milestones: MemoryMilestones::default(),
        counts: MemoryCounts::default(),
        bus: SlowBus(bus.clone()),
        settings: Settings::from(EventRules {
            published: Published::All,
            concurrency: 1,
            ..EventRules::default()
        }),
    };
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_secs(20);
    let text = batch(recs.iter().map(|r| w.json(r)).collect()).to_string();
    let report = f.process_json(&text, Some(deadline)).await.unwrap();
    // Calls start while at least 18 s (twice the 9 s budget) are left: at 0, 1 and 2 s.
    assert_eq!(started.elapsed(), Duration::from_secs(3));
    assert_eq!(bus.accepted().len(), 30);
    assert_eq!(report.checkpoint.as_deref(), Some(recs[30].seq.as_str()));
    assert_eq!(report.unsent_entries, 20);
    let rest = batch(recs[30..].iter().map(|r| w.json(r)).collect()).to_string();
    let again = f.process_json(&rest, None).await.unwrap();
    assert_eq!(again.checkpoint, None);
    assert_eq!(bus.accepted().len(), 50);
}
