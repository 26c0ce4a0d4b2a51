//! The records themselves: sequence numbers of any length, records that can never apply,
//! anomalies (invariants 3, 7, 8).

use std::sync::atomic::Ordering;

use likes_core::{PostId, UserId};
use likes_harness::stream::{event, seqs, Deliver, Rec};

use super::{count, likes_of, setup, users, BASE21};

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

/// Issue 32: one rule for a key no writer of ours makes — a reaction key naming the like
/// (`{user}#like`) or a kind outside the grammar (`likes_core::reaction::Held::Foreign`): the
/// aggregator skips its records (invariant 7), and a recount counts it as nothing, so an audit
/// sees no drift from it. (Before: the aggregator counted `{user}#like` as a reaction kind
/// `like`, adding to the post's likes, and a recount as a like.)
#[tokio::test]
async fn a_reaction_key_naming_the_like_is_counted_by_no_reader() {
    use likes_core::CountsLedger;
    use std::collections::{BTreeMap, HashMap, HashSet};
    let (_t, agg) = setup().await;
    let post = PostId::new_random();
    let user = UserId::new_random();
    let mut foreign = Rec::new(true, &post, &user, (BASE21 + 1).to_string());
    foreign.kind = Some("like".into());
    let mut unknown = Rec::new(true, &post, &user, (BASE21 + 2).to_string());
    unknown.kind = Some("Not-A-Kind".into());
    let recs = [
        Rec::new(true, &post, &user, BASE21.to_string()),
        foreign,
        unknown,
    ];
    let report = agg.deliver(&event(&recs)).await;
    assert_eq!((report.skipped, report.checkpoint), (2, None));
    let item = agg
        .store()
        .read_post(&post)
        .await
        .expect("read")
        .expect("an item");
    assert_eq!(item.kind_totals(), BTreeMap::from([("like".to_owned(), 1)]));

    let held = HashSet::from([
        user.to_string(),
        format!("{user}#like"),
        format!("{user}#Not-A-Kind"),
    ]);
    assert_eq!(
        likes_admin::recount::exact_counts(&held, &HashMap::new()),
        BTreeMap::from([("like".to_owned(), 1)])
    );
}
