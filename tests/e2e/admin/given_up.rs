//! Drift found where it starts (issue 32): a batch the aggregator gives up, holding a post's
//! first likes, leaves that post with likes and no Counts item. The runbook of
//! `AggregatorDlqAlarm` (docs/operations.md) is followed step by step, through the local
//! stack with its mapping giving up after one retry (`LIKES_LOCAL_MAX_RETRIES`, as Lambda gives
//! up after `MaximumRetryAttempts`) and the lab refusing every Counts update of the aggregator
//! meanwhile (an outage of the post's items: the connection reset before the call applied).
//! Before: `audit --all` listed posts from the Counts table only, found nothing and exited 0,
//! and nothing named the lost post.

use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::Local;
use crate::common::{http, token, Emulator};

fn like(local: &Local, post: &str, user: &str) {
    let (s, b) = http(
        local.stack.port,
        "PUT",
        &format!("/posts/{post}/like"),
        Some(&token(user)),
    )
    .expect("the API");
    assert_eq!(s, 200, "{b}");
}

/// The posts an audit's report names as drifted.
fn drifted(doc: &Value) -> Vec<String> {
    doc["posts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["drifted"] == json!(true))
        .filter_map(|p| p["post_id"].as_str().map(str::to_owned))
        .collect()
}

#[test]
fn a_batch_given_up_is_found_and_made_exact_by_the_runbook() {
    let local = Local::with(
        Emulator::start(),
        None,
        vec![("LIKES_LOCAL_MAX_RETRIES", "1".to_owned())],
    );
    like(&local, "steady", "ann");
    local.wait_exact("steady", Duration::from_secs(60));

    // The outage: every Counts update of the aggregator fails, until its batch is given up.
    local.stack.arm_fault(
        &(json!({"operation": "UpdateItem", "table": "counts",
            "identity": "CountAggregatorFunction", "fault": "refuse", "times": 1_000_000})),
    );
    for user in ["bo", "cy", "di"] {
        like(&local, "first-lost", user);
    }
    like(&local, "steady", "eve");
    let deadline = Instant::now() + Duration::from_secs(120);
    while local.stack.stats()["mapping"]["given_up"].as_u64() < Some(1) {
        assert!(
            Instant::now() < deadline,
            "no batch given up: {}",
            local.stack.stats()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    local.stack.clear_faults();
    assert_eq!(
        local.counted("first-lost").iter().sum::<i64>(),
        0,
        "the post's first likes were given up"
    );
    assert_eq!(local.table_counts("first-lost").iter().sum::<i64>(), 3);

    // Step 1 of the runbook: the audit finds the drift, the post without a count included.
    let audit = local.admin(&["audit", "--all"]).expect("the audit runs");
    assert_eq!(audit.exit_code(), 1, "{}", audit.doc);
    let found = drifted(&audit.doc);
    assert!(found.contains(&"first-lost".to_owned()), "{}", audit.doc);
    assert!(found.contains(&"steady".to_owned()), "{}", audit.doc);

    // Step 2: every noted post recounted exact, its note cleared.
    let repair = local
        .admin(&["recount", "--noted"])
        .expect("the repair runs");
    assert_eq!(repair.exit_code(), 0, "{}", repair.doc);
    let repaired: Vec<&str> = repair.doc["repaired"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|r| r["post_id"].as_str())
        .collect();
    assert_eq!(repaired, ["first-lost", "steady"], "{}", repair.doc);
    assert_eq!(
        local.counted("first-lost"),
        local.table_counts("first-lost")
    );
    assert_eq!(local.counted("steady"), local.table_counts("steady"));

    // Step 3: the audit is clean, and a second repair finds nothing left to do.
    let audit = local.admin(&["audit", "--all"]).expect("the audit runs");
    assert_eq!(audit.exit_code(), 0, "{}", audit.doc);
    let again = local
        .admin(&["recount", "--noted"])
        .expect("the repair runs");
    assert_eq!(again.doc["notes"], json!(0), "{}", again.doc);
}
