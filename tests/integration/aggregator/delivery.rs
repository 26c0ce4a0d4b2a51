//! Invariants 1 to 6 under redelivery, bisects and failed writes.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use likes_core::{bucket_of, CountsAdmin, CountsLedger, PostBucket, PostId, UserId, BUCKETS};
use likes_harness::stream::{event, seqs, Deliver, FaultPlan, Rec};

use super::{count, likes_of, setup, users, BASE21};

/// Invariants 2 and 3.
#[tokio::test]
async fn a_batch_applied_twice_counts_once() {
    let (_t, agg) = setup().await;
    let post = PostId::new_random();
    let recs = likes_of(&post, &users(40), BASE21);
    for _ in 0..2 {
        let report = agg.deliver(&event(&recs)).await;
        assert_eq!(report.checkpoint, None);
        assert_eq!(report.anomalies, 0);
    }
    assert_eq!(count(&agg, &post).await, 40);
}

/// Invariant 3, for likes and unlikes.
#[tokio::test]
async fn redelivery_from_any_record_inside_a_batch_never_double_counts() {
    let (_t, agg) = setup().await;
    let post = PostId::new_random();
    let us = users(12);
    // Likes then unlikes of some of the same users: both signs must be deduplicated.
    let mut recs = likes_of(&post, &us, BASE21);
    let mut seq = BASE21 + 100;
    for u in us.iter().take(5) {
        recs.push(Rec::new(false, &post, u, seq.to_string()));
        seq += 3;
    }
    agg.deliver(&event(&recs)).await;
    assert_eq!(count(&agg, &post).await, 7);
    for start in 0..recs.len() {
        let report = agg.deliver(&event(&recs[start..])).await;
        assert_eq!(report.checkpoint, None);
        assert_eq!(report.anomalies, 0);
        assert_eq!(
            count(&agg, &post).await,
            7,
            "after redelivery from record {start}"
        );
    }
}

/// Invariants 3 and 5 under a bisect.
#[tokio::test]
async fn bisected_halves_after_a_midway_failure_give_the_right_counts() {
    let (_t, agg) = setup().await;
    let posts: Vec<PostId> = (0..6).map(|_| PostId::new_random()).collect();
    let mut recs = Vec::new();
    let mut seq = BASE21;
    for round in 0..4 {
        for (i, p) in posts.iter().enumerate() {
            if (round + i) % 2 == 0 {
                recs.push(Rec::new(true, p, &UserId::new_random(), seq.to_string()));
                seq += 1;
            }
        }
    }
    // The whole batch fails after 3 writes: a function error, so Lambda bisects.
    agg.store().set_plan(FaultPlan {
        fail_writes_after: Some(3),
        ..FaultPlan::default()
    });
    let failed = agg.deliver(&event(&recs)).await;
    agg.store().clear();
    assert!(failed.checkpoint.is_some());
    let mid = recs.len() / 2;
    for half in [&recs[..mid], &recs[mid..]] {
        let report = agg.deliver(&event(half)).await;
        assert_eq!(report.checkpoint, None);
    }
    for p in &posts {
        let want = recs.iter().filter(|r| r.post == *p).count() as i64;
        assert_eq!(count(&agg, p).await, want);
    }
}

/// Invariant 4.
#[tokio::test]
async fn like_and_unlike_in_one_batch_then_redelivery_from_the_unlike() {
    let (t, agg) = setup().await;
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let s = seqs(BASE21, 2);
    let recs = vec![
        Rec::new(true, &post, &user, s[0].clone()),
        Rec::new(false, &post, &user, s[1].clone()),
    ];
    let writes_before = agg.store().writes.load(Ordering::SeqCst);
    agg.deliver(&event(&recs)).await;
    // Delta 0 still wrote (and advanced the hwm to the unlike).
    assert_eq!(agg.store().writes.load(Ordering::SeqCst) - writes_before, 1);
    let item = t
        .counts()
        .read_post(&post)
        .await
        .unwrap()
        .expect("a delta-0 group still writes the post's item");
    let row = &item.buckets[usize::from(likes_core::bucket_of(&user))];
    assert_eq!(
        row.hwm.as_ref().map(|h| h.raw().to_owned()),
        Some(s[1].clone())
    );
    assert_eq!(row.count, 0);

    let report = agg.deliver(&event(&recs[1..])).await;
    assert_eq!(report.checkpoint, None);
    assert_eq!(report.duplicates, 1);
    assert_eq!(
        count(&agg, &post).await,
        0,
        "the unlike must not be applied twice"
    );
}

/// Invariant 1: one row per (post, bucket), whatever the interleaving.
#[tokio::test]
async fn many_posts_and_all_buckets_interleaved() {
    let (t, agg) = setup().await;
    let posts: Vec<PostId> = (0..5).map(|_| PostId::new_random()).collect();
    // Users covering all 16 buckets.
    let mut by_bucket: HashMap<u8, UserId> = HashMap::new();
    while by_bucket.len() < BUCKETS as usize {
        let u = UserId::new_random();
        by_bucket.entry(bucket_of(&u)).or_insert(u);
    }
    let mut extra = users(30);
    extra.extend(by_bucket.values().cloned());
    let mut recs = Vec::new();
    let mut seq = BASE21;
    // Interleave posts record by record.
    for (i, u) in extra.iter().enumerate() {
        for (j, p) in posts.iter().enumerate() {
            if (i + j) % 3 != 0 {
                recs.push(Rec::new(true, p, u, seq.to_string()));
                seq += 1;
            }
        }
    }
    // Unlike a few again.
    for r in recs.clone().iter().step_by(7) {
        recs.push(Rec::new(false, &r.post, &r.user, seq.to_string()));
        seq += 1;
    }
    for chunk in recs.chunks(50) {
        assert_eq!(agg.deliver(&event(chunk)).await.checkpoint, None);
    }
    for p in &posts {
        let want = recs
            .iter()
            .filter(|r| r.post == *p)
            .map(|r| if r.insert { 1 } else { -1 })
            .sum::<i64>();
        assert_eq!(count(&agg, p).await, want);
    }
    // One item per post, with a mark for each bucket that had records; every bucket exercised.
    let want: std::collections::BTreeSet<(String, u8)> = recs
        .iter()
        .map(|r| (r.post.to_string(), r.row().bucket))
        .collect();
    let mut got = std::collections::BTreeSet::new();
    for item in t.scan(&t.counts_table).await {
        let post = item["post_id"].as_s().unwrap().clone();
        for b in 0..BUCKETS {
            if item.contains_key(&format!("h{b}")) {
                got.insert((post.clone(), b));
            }
        }
    }
    assert_eq!(got, want);
    assert_eq!(
        t.scan(&t.counts_table).await.len(),
        posts.len(),
        "one item per post"
    );
    let buckets: std::collections::HashSet<u8> = recs.iter().map(|r| r.row().bucket).collect();
    assert_eq!(buckets.len(), BUCKETS as usize);
}

/// Invariants 5 and 6.
#[tokio::test]
async fn one_failing_post_reports_its_lowest_unapplied_record_and_the_rest_apply() {
    let (_t, agg) = setup().await;
    let posts: Vec<PostId> = (0..4).map(|_| PostId::new_random()).collect();
    let mut recs = Vec::new();
    let mut seq = BASE21;
    for _ in 0..3 {
        for p in &posts {
            recs.push(Rec::new(true, p, &UserId::new_random(), seq.to_string()));
            seq += 1;
        }
    }
    // Fail the row of the second post's first record.
    let victim = recs[1].clone();
    agg.store().set_plan(FaultPlan {
        fail_rows: [victim.row()].into_iter().collect(),
        ..FaultPlan::default()
    });
    let report = agg.deliver(&event(&recs)).await;
    agg.store().clear();
    let response = report.response();
    assert_eq!(response.batch_item_failures.len(), 1);
    assert_eq!(
        response.batch_item_failures[0].item_identifier.as_deref(),
        Some(victim.seq.as_str()),
        "the lowest unapplied sequence number, exactly as received"
    );
    // The post's buckets are written together: none of them applied; every other post was.
    for p in &posts {
        let want = if *p == victim.post { 0 } else { 3 };
        assert_eq!(count(&agg, p).await, want, "other posts were applied");
    }
    assert_eq!(report.failed_posts, 1);
    // Lambda redelivers from the checkpoint.
    let at = recs.iter().position(|r| r.seq == victim.seq).unwrap();
    assert_eq!(agg.deliver(&event(&recs[at..])).await.checkpoint, None);
    for p in &posts {
        assert_eq!(count(&agg, p).await, 3);
    }
}

/// Invariant 2: one write per post, however many of its buckets the batch holds.
#[tokio::test]
async fn the_happy_path_sends_exactly_one_write_per_post() {
    let (_t, agg) = setup().await;
    let posts: Vec<PostId> = (0..3).map(|_| PostId::new_random()).collect();
    let mut recs = Vec::new();
    let mut seq = BASE21;
    for _ in 0..40 {
        for p in &posts {
            recs.push(Rec::new(true, p, &UserId::new_random(), seq.to_string()));
            seq += 1;
        }
    }
    let groups: std::collections::HashSet<PostBucket> = recs.iter().map(Rec::row).collect();
    let report = agg.deliver(&event(&recs)).await;
    assert_eq!((report.groups, report.posts), (groups.len(), posts.len()));
    assert!(
        groups.len() > 2 * posts.len(),
        "the posts' likes span many buckets"
    );
    assert_eq!(agg.store().writes.load(Ordering::SeqCst), posts.len());
    assert_eq!(agg.store().reads.load(Ordering::SeqCst), 0);
    for p in &posts {
        assert_eq!(count(&agg, p).await, 40);
    }
}

/// Invariants 3 and 5 when a Counts write applies and its answer is lost on the network (the
/// lab resets, closes, times out or answers 500 after the emulator applied it): the aggregator
/// settles it by reading the post's mark (or reports the post unapplied), and the batch coming
/// again is kept out by the mark.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_counts_write_that_applied_and_lost_its_answer_counts_once() {
    use likes_harness::lab::{lab, roles};
    use likes_lab::{Fault, FaultRule};
    for fault in [
        Fault::Reset,
        Fault::Close,
        Fault::ServerError,
        Fault::Timeout,
    ] {
        let (t, agg) = setup().await;
        let post = PostId::new_random();
        let recs = likes_of(&post, &users(9), BASE21);
        let mut rule = FaultRule::once("UpdateItem", &t.counts_table, fault.clone());
        rule.identity = Some(roles::AGGREGATOR.to_owned());
        let struck = lab().add_fault(rule);
        let first = agg.deliver(&event(&recs)).await;
        assert_eq!(struck.load(Ordering::SeqCst), 1, "{fault:?}");
        assert_eq!(first.anomalies, 0, "{fault:?}");
        assert_eq!(
            count(&agg, &post).await,
            9,
            "{fault:?}: the write did apply, once"
        );
        let again = agg.deliver(&event(&recs)).await;
        assert_eq!((again.checkpoint, again.anomalies), (None, 0), "{fault:?}");
        assert_eq!(count(&agg, &post).await, 9, "{fault:?}: applied twice");
    }
}

/// Invariant 11: a failing batch notes every post it leaves unapplied — here a post whose
/// first likes those are, which has no Counts item — before it answers, so that `recount
/// --noted` finds it if Lambda gives the batch up; noting again gives a new note (a clear of
/// the old one then fails); a batch that applies notes nothing.
#[tokio::test]
async fn a_failing_batch_notes_each_post_it_leaves_unapplied() {
    let (t, agg) = setup().await;
    let admin = t.counts();
    let (steady, first) = (PostId::new_random(), PostId::new_random());
    let recs = likes_of(&steady, &users(3), BASE21);
    let report = agg.deliver(&event(&recs)).await;
    assert_eq!((report.failed_posts, report.noted_posts), (0, 0));
    assert!(admin.repair_notes().await.expect("notes").is_empty());

    let mut batch = likes_of(&first, &users(3), BASE21 + 10);
    batch.extend(likes_of(&steady, &users(2), BASE21 + 20));
    agg.store().set_plan(FaultPlan {
        fail_rows: batch
            .iter()
            .filter(|r| r.post == first)
            .map(Rec::row)
            .collect(),
        ..FaultPlan::default()
    });
    let report = agg.deliver(&event(&batch)).await;
    assert_eq!((report.failed_posts, report.noted_posts), (1, 1));
    assert_eq!(count(&agg, &steady).await, 5, "the other post applied");
    assert!(agg.store().read_post(&first).await.expect("read").is_none());
    let notes = admin.repair_notes().await.expect("notes");
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert_eq!(notes[0].post, first);
    assert_eq!(Some(notes[0].from.clone()), report.checkpoint);

    // Lambda retries; the post fails again and is noted again: the old note no longer clears.
    agg.deliver(&event(&batch)).await;
    let again = admin.repair_notes().await.expect("notes");
    assert_eq!(again.len(), 1);
    assert_ne!(again[0].id, notes[0].id);
    assert!(!admin.clear_note(&notes[0]).await.expect("clear"));
    assert!(admin.clear_note(&again[0]).await.expect("clear"));
    assert!(admin.repair_notes().await.expect("notes").is_empty());
    assert_eq!(
        t.scan(&t.counts_table).await.len(),
        1,
        "the one post's item: a cleared note is gone"
    );
}

/// Invariant 11, for a batch given up for age: its posts may only ever have been deferred (no
/// time left in the invocation), never failed. A batch an hour behind notes them; a fresh one
/// deferred by its deadline does not (it is retried at once, and nothing is wrong).
#[tokio::test]
async fn a_batch_an_hour_behind_notes_its_deferred_posts() {
    use likes_harness::stream::{event_json, record_json};
    let (t, agg) = setup().await;
    let admin = t.counts();
    let (fresh, old) = (PostId::new_random(), PostId::new_random());
    let batch = |post: &PostId, age_secs: i64| {
        let recs: Vec<serde_json::Value> = likes_of(post, &users(2), BASE21)
            .iter()
            .map(|r| {
                let mut json = record_json(r);
                let created = chrono::Utc::now().timestamp() - age_secs;
                json["dynamodb"]["ApproximateCreationDateTime"] = created.into();
                json
            })
            .collect();
        event_json(&recs)
    };
    // Less time left than a post needs (9 s): every post is deferred, as near a deadline.
    let deliver = |post: &PostId, age_secs: i64| {
        let text = batch(post, age_secs).0;
        let agg = &agg;
        async move {
            let deadline = Some(tokio::time::Instant::now() + std::time::Duration::from_secs(5));
            agg.process_json(&text, deadline).await.expect("a batch")
        }
    };
    let report = deliver(&fresh, 5).await;
    assert_eq!((report.deferred_posts, report.noted_posts), (1, 0));
    let report = deliver(&old, 7_200).await;
    assert_eq!((report.deferred_posts, report.failed_posts), (1, 0));
    assert_eq!(report.noted_posts, 1);
    let notes = admin.repair_notes().await.expect("notes");
    assert_eq!(
        notes.iter().map(|n| &n.post).collect::<Vec<_>>(),
        vec![&old]
    );
}
