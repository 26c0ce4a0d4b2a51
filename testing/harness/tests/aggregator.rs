//! The count aggregator against the emulator, through the real handler: each of its numbered
//! invariants (`count_aggregator`'s crate documentation) under redelivery, bisects and injected
//! failures. Each test names the invariants it checks.

use std::collections::HashMap;
use std::sync::atomic::Ordering;

use count_aggregator::Aggregator;
use likes_aws::DynamoCounts;
use likes_core::{bucket_of, CountsLedger, CountsRead, PostBucket, PostId, UserId, BUCKETS};
use likes_harness::stream::{event, seqs, Deliver, FaultPlan, FaultyCounts, Rec};
use likes_harness::Tables;

type Agg = Aggregator<FaultyCounts<DynamoCounts>>;

async fn setup() -> (Tables, Agg) {
    let t = Tables::new().await;
    let agg = Aggregator::new(FaultyCounts::new(t.counts()));
    (t, agg)
}

async fn count(agg: &Agg, post: &PostId) -> i64 {
    agg.store().post_count(post).await.expect("count")
}

/// `n` users, each landing in a different bucket where possible.
fn users(n: usize) -> Vec<UserId> {
    (0..n).map(|_| UserId::new_random()).collect()
}

/// Likes by distinct users of one post, with 21-digit sequence numbers.
fn likes_of(post: &PostId, users: &[UserId], base: u128) -> Vec<Rec> {
    seqs(base, users.len())
        .into_iter()
        .zip(users)
        .map(|(s, u)| Rec::new(true, post, u, s))
        .collect()
}

const BASE21: u128 = 100_000_000_000_000_000_000; // 21 digits

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

/// Invariant 3 across sequence-number lengths.
#[tokio::test]
async fn sequence_numbers_compare_numerically_from_21_to_40_digits() {
    let (_t, agg) = setup().await;
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let other = UserId::new_random();
    // Same row for every record: the user decides the bucket.
    let steps = [
        "999999999999999999998".to_owned(),  // 21 digits
        "999999999999999999999".to_owned(),  // 21 digits
        "1000000000000000000000".to_owned(), // 22 digits: "1…" < "9…" as strings
        "9".repeat(39),                      // 39 digits
        format!("1{}", "0".repeat(39)),      // 40 digits
        format!("1{}1", "0".repeat(38)),     // 40 digits
    ];
    let users_seq = [
        user.clone(),
        user.clone(),
        user.clone(),
        user.clone(),
        user.clone(),
        user.clone(),
    ];
    let inserts = [true, false, true, false, true, false];
    for i in 0..steps.len() {
        let rec = Rec::new(inserts[i], &post, &users_seq[i], steps[i].clone());
        let report = agg.deliver(&event(&[rec])).await;
        assert_eq!(
            report.duplicates,
            0,
            "step {i} ({} digits) was treated as old",
            steps[i].len()
        );
        // A redelivery of the previous record is still recognised.
        if i > 0 {
            let prev = Rec::new(inserts[i - 1], &post, &user, steps[i - 1].clone());
            let again = agg.deliver(&event(&[prev])).await;
            assert_eq!(again.duplicates, 1, "step {i}");
        }
    }
    assert_eq!(count(&agg, &post).await, 0);
    let _ = other;
}

/// Invariant 7.
#[tokio::test]
async fn unparsable_and_ignored_records_do_not_block_the_shard() {
    use likes_harness::stream::{event_json, record_json};
    let (_t, agg) = setup().await;
    let post = PostId::new_random();
    let good = likes_of(&post, &users(3), BASE21);
    let mut bad_key = record_json(&good[0]);
    bad_key["dynamodb"]["Keys"]["post_bucket"]["S"] = "not a post id#3".into();
    let mut bad_bucket = record_json(&good[0]);
    bad_bucket["dynamodb"]["Keys"]["post_bucket"]["S"] = format!("{post}#16").into();
    let mut no_key = record_json(&good[0]);
    no_key["dynamodb"]["Keys"] = serde_json::json!({"user_id": {"S": "x"}});
    let mut no_seq = record_json(&good[0]);
    no_seq["dynamodb"]
        .as_object_mut()
        .unwrap()
        .remove("SequenceNumber");
    let mut modify = record_json(&good[1]);
    modify["eventName"] = "MODIFY".into();
    let records = vec![
        bad_key,
        record_json(&good[0]),
        bad_bucket,
        no_key,
        no_seq,
        modify,
        record_json(&good[1]),
        record_json(&good[2]),
    ];
    let report = agg.deliver(&event_json(&records)).await;
    assert_eq!(report.checkpoint, None, "nothing blocks the shard");
    assert_eq!(report.skipped, 4);
    assert_eq!(report.ignored, 1);
    assert_eq!(count(&agg, &post).await, 3);
}

/// Invariant 8.
#[tokio::test]
async fn a_count_that_would_go_negative_is_applied_and_flagged() {
    let (_t, agg) = setup().await;
    let (post, user) = (PostId::new_random(), UserId::new_random());
    // An unlike whose like was never counted (e.g. lost to stream retention).
    let report = agg
        .deliver(&event(&[Rec::new(false, &post, &user, BASE21.to_string())]))
        .await;
    assert_eq!(report.checkpoint, None);
    assert_eq!(report.anomalies, 1);
    assert_eq!(agg.totals.anomalies.load(Ordering::Relaxed), 1);
    assert_eq!(count(&agg, &post).await, -1, "applied, not hidden");
}

/// Invariant 8.
#[tokio::test]
async fn a_record_dropped_as_applied_but_newer_than_the_row_is_flagged() {
    use likes_harness::stream::{event_json, record_json};
    let (_t, agg) = setup().await;
    let post = PostId::new_random();
    let user = UserId::new_random();
    let s = seqs(BASE21, 2);
    // The row's hwm reaches s[1]...
    let first = agg
        .deliver(&event(&[Rec::new(true, &post, &user, s[1].clone())]))
        .await;
    assert_eq!(first.anomalies, 0);
    // ...so s[0] is dropped as already applied. Were it created before the row's last write,
    // that would be an ordinary redelivery; created an hour later, it cannot have been applied.
    let mut late = record_json(&Rec::new(true, &post, &user, s[0].clone()));
    let in_an_hour = chrono::Utc::now().timestamp() as f64 + 3600.0;
    late["dynamodb"]["ApproximateCreationDateTime"] = in_an_hour.into();
    let report = agg.deliver(&event_json(&[late])).await;
    assert_eq!(report.duplicates, 1);
    assert_eq!(report.anomalies, 1);
    assert_eq!(report.checkpoint, None);

    let ordinary = record_json(&Rec::new(true, &post, &user, s[0].clone()));
    let report = agg.deliver(&event_json(&[ordinary])).await;
    assert_eq!((report.duplicates, report.anomalies), (1, 0));
}

/// Invariant 8, however far the aggregator lags: the mark's record was created two hours ago
/// and the item written just now; a record dropped as applied but created an hour ago cannot
/// have been applied. Compared with the item's `updated_at` (as before) it passed unseen.
#[tokio::test]
async fn a_dropped_record_newer_than_the_marks_record_is_flagged_despite_lag() {
    use likes_harness::stream::{event_json, record_json};
    let (_t, agg) = setup().await;
    let (post, user) = (PostId::new_random(), UserId::new_random());
    let s = seqs(BASE21, 2);
    let now = chrono::Utc::now().timestamp() as f64;
    let created = |r: &Rec, at: f64| {
        let mut v = record_json(r);
        v["dynamodb"]["ApproximateCreationDateTime"] = at.into();
        v
    };
    let mark = Rec::new(true, &post, &user, s[1].clone());
    let first = agg
        .deliver(&event_json(&[created(&mark, now - 7200.0)]))
        .await;
    assert_eq!(first.anomalies, 0);
    let earlier = Rec::new(true, &post, &user, s[0].clone());
    let late = agg
        .deliver(&event_json(&[created(&earlier, now - 3600.0)]))
        .await;
    assert_eq!((late.duplicates, late.anomalies), (1, 1));
    let ordinary = agg
        .deliver(&event_json(&[created(&earlier, now - 7300.0)]))
        .await;
    assert_eq!((ordinary.duplicates, ordinary.anomalies), (1, 0));
    assert_eq!(count(&agg, &post).await, 1);
}
