//! A post's milestones over several batches and a redelivery, counted raw — every
//! `LikeMilestone` the bus accepted, per (post, milestone), so that a duplicate counts twice
//! (invariant 6). The delivery model counts a milestone's distinct ids, which a milestone
//! announced again under its own id passes; this test pins how many times each one is put: once,
//! and once more only when the record it was announced for is redelivered. In memory, the
//! aggregator counting ahead of each batch; no wait, no clock.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::world::{count_ahead, records, Rec, World};
use like_events::{LikeEvents, Settings};
use likes_aws::env::{EventRules, Published};
use likes_core::store::memory::{MemoryBus, MemoryCounts, MemoryMilestones, MemorySuppression};
use likes_core::{PostId, UserId};
use likes_sim::stream::batch;
use serde_json::Value;

type Function = LikeEvents<MemorySuppression, MemoryMilestones, MemoryCounts, MemoryBus>;

/// The accepted milestones, raw: (post index, milestone) → (times put, their ids, the counts
/// they carried, the records they were announced for).
type Raw = BTreeMap<(usize, u64), (usize, Vec<String>, Vec<i64>, Vec<String>)>;

fn raw(bus: &MemoryBus, w: &World) -> Raw {
    let mut out = Raw::new();
    for e in bus
        .accepted()
        .into_iter()
        .filter(|e| e.detail_type == "LikeMilestone")
    {
        let d: Value = serde_json::from_str(&e.detail).expect("JSON");
        common::check(e.detail_type, &d).expect("valid under its schema");
        let post = w
            .posts
            .iter()
            .position(|p| d["post_id"] == p.as_str())
            .expect("a post of the world");
        let slot = out
            .entry((post, d["milestone"].as_u64().expect("milestone")))
            .or_default();
        slot.0 += 1;
        slot.1.push(d["event_id"].as_str().expect("id").to_owned());
        slot.2.push(d["like_count"].as_i64().expect("like_count"));
        slot.3
            .push(d["sequence_number"].as_str().expect("seq").to_owned());
    }
    out
}

/// Delivers `recs` as one batch, the aggregator having counted them first (unless `counted`).
async fn deliver(f: &Function, w: &World, recs: &[Rec], counted: bool) {
    if !counted {
        count_ahead(&f.counts, w, recs).await;
    }
    let text = batch(recs.iter().map(|r| w.json(r)).collect()).to_string();
    let report = f.process_json(&text, None).await.expect("a stream event");
    assert_eq!(report.checkpoint, None, "a batch done");
}

/// Post 0's count jumps from 0 to 10 in one batch: milestones 1 and 10, once each. Post 1
/// reaches 1 in one batch and 10 in the next, which is then redelivered whole: its 10 is put
/// again for the record it was announced for, under the same id, and its 1 (another record's)
/// is not. Later likes, unlikes down below 10 and likes back up announce nothing again.
#[tokio::test(start_paused = true)]
async fn each_milestone_is_put_once_and_again_only_for_its_redelivered_record() {
    let w = World {
        posts: vec![PostId::new_random(), PostId::new_random()],
        users: (0..12).map(|_| UserId::new_random()).collect(),
    };
    let mut ops: Vec<(usize, usize, bool, i64)> = Vec::new();
    // 0..10: ten likes on post 0; 10: post 1's first like; 11..20: its 2nd to 10th.
    ops.extend((0..10).map(|u| (u, 0, true, 1)));
    ops.extend((0..10).map(|u| (u, 1, true, 1)));
    // 20, 21: an 11th like on each post; 22..26: four unlikes of post 1 (down to 7);
    // 26..30: the four likes again (back to 11).
    ops.extend([(10, 0, true, 1), (10, 1, true, 1)]);
    ops.extend((0..4).map(|u| (u, 1, false, 1)));
    ops.extend((0..4).map(|u| (u, 1, true, 1)));
    let recs = records(&ops);
    assert_eq!(recs.len(), 30);
    let bus = MemoryBus::default();
    let f: Function = LikeEvents {
        suppression: MemorySuppression::default(),
        milestones: MemoryMilestones::default(),
        counts: MemoryCounts::default(),
        bus: bus.clone(),
        settings: Settings::from(EventRules {
            published: Published::Notifications,
            window: Duration::from_secs(86_400),
            count_wait: Duration::ZERO,
            concurrency: 2,
        }),
    };
    let times = |raw: &Raw| -> BTreeMap<(usize, u64), usize> {
        raw.iter().map(|(k, v)| (*k, v.0)).collect()
    };

    deliver(&f, &w, &recs[..10], false).await;
    deliver(&f, &w, &recs[10..11], false).await;
    deliver(&f, &w, &recs[11..20], false).await;
    let first = raw(&bus, &w);
    assert_eq!(
        times(&first),
        BTreeMap::from([((0, 1), 1), ((0, 10), 1), ((1, 1), 1), ((1, 10), 1)]),
        "a jump from 0 to 10 announces 1 and 10; each milestone once"
    );
    // Announced with the count read, for the batch's last like.
    assert_eq!(first[&(0, 1)].2, [10]);
    assert_eq!(first[&(0, 10)].3, [recs[9].seq.clone()]);
    assert_eq!(first[&(1, 1)].3, [recs[10].seq.clone()]);
    assert_eq!(first[&(1, 10)].2, [10]);
    assert_eq!(first[&(1, 10)].3, [recs[19].seq.clone()]);

    // Redelivered whole (a lost answer): the record 10 was announced for puts it again, under
    // its id; milestone 1 was another batch's record's, and is not put again.
    deliver(&f, &w, &recs[11..20], true).await;
    let again = raw(&bus, &w);
    assert_eq!(
        times(&again),
        BTreeMap::from([((0, 1), 1), ((0, 10), 1), ((1, 1), 1), ((1, 10), 2)]),
        "only the redelivered record's milestone again"
    );
    let ids = &again[&(1, 10)].1;
    assert_eq!(ids[0], ids[1], "the same id again");

    // An 11th like on each post, one batch each; unlikes down to 7, likes back up to 11.
    deliver(&f, &w, &recs[20..21], false).await;
    deliver(&f, &w, &recs[21..22], false).await;
    deliver(&f, &w, &recs[22..26], false).await;
    deliver(&f, &w, &recs[26..30], false).await;
    assert_eq!(
        times(&raw(&bus, &w)),
        times(&again),
        "nothing announced again by later likes"
    );
}
