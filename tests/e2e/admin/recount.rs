//! Audit and recount through the local stack.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use likes_core::{bucket_of, UserId};
use likes_sim::rng::SplitMix;
use serde_json::{json, Value};

use super::Local;
use crate::common::{http, token, wait_for_count};

fn like(local: &Local, post: &str, tok: &str, on: bool) -> u16 {
    let method = if on { "PUT" } else { "DELETE" };
    let path = format!("/posts/{post}/like");
    http(local.stack.port, method, &path, Some(tok))
        .map(|(s, _)| s)
        .unwrap_or(0)
}

fn bucket(user: &str) -> u8 {
    bucket_of(&UserId::parse(user).expect("a user id"))
}

/// The buckets a recount report says it corrected.
fn corrected(doc: &Value) -> BTreeSet<u64> {
    doc["buckets"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|b| b["corrected"] == true)
        .filter_map(|b| b["bucket"].as_u64())
        .collect()
}

/// Control items left in the post's buckets by a recount (fences, window entries).
fn leftovers(local: &Local, post: &str) -> usize {
    use aws_sdk_dynamodb::types::AttributeValue;
    (0..16)
        .map(|b| {
            let out = local.rt.block_on(
                local
                    .client
                    .query()
                    .table_name("likes")
                    .key_condition_expression("post_bucket = :pb AND user_id > :tilde")
                    .expression_attribute_values(":pb", AttributeValue::S(format!("{post}#{b}")))
                    .expression_attribute_values(":tilde", AttributeValue::S("~".into()))
                    .consistent_read(true)
                    .send(),
            );
            out.expect("query").count as usize
        })
        .sum()
}

#[test]
fn audit_reports_exactly_the_drifted_bucket_and_recount_repairs_it() {
    let local = Local::start(None);
    let users: Vec<String> = (0..12).map(|i| format!("auth0|aud{i}")).collect();
    let tokens: Vec<String> = users.iter().map(|u| token(u)).collect();
    for (i, tok) in tokens.iter().enumerate() {
        assert_eq!(like(&local, "drifty", tok, true), 200);
        if i % 2 == 0 {
            assert_eq!(like(&local, "quiet", tok, true), 200);
        }
    }
    let table = local.wait_exact("drifty", Duration::from_secs(60));
    local.wait_exact("quiet", Duration::from_secs(60));
    let b = bucket(&users[0]);
    local.drift("drifty", b, 5);

    let r = local
        .admin(&["audit", "--post", "quiet", "--post", "drifty"])
        .expect("audit runs");
    assert!(!r.clean, "drift found means exit status 1: {}", r.doc);
    assert_eq!(r.doc["drifted"], 1, "{}", r.doc);
    assert_eq!(r.doc["posts"][0]["drifted"], false, "{}", r.doc);
    let want = json!([{"bucket": b, "kind": "like", "counted": table[usize::from(b)] + 5, "exact": table[usize::from(b)]}]);
    assert_eq!(r.doc["posts"][1]["drifts"], want, "{}", r.doc);
    let all = local.admin(&["audit", "--all"]).expect("audit --all runs");
    let drifted: Vec<&Value> = all.doc["posts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|p| p["drifted"] == true)
        .map(|p| &p["post_id"])
        .collect();
    assert_eq!(drifted, vec!["drifty"], "{}", all.doc);
    assert!(
        local
            .admin(&["audit", "--post", "quiet"])
            .expect("audit")
            .clean
    );

    // A recount of a correct post changes nothing, and leaves nothing behind.
    let before = local.counted("quiet");
    let r = local
        .admin(&["recount", "--post", "quiet"])
        .expect("recount");
    assert!(corrected(&r.doc).is_empty(), "{}", r.doc);
    assert_eq!(local.counted("quiet"), before);
    assert_eq!(leftovers(&local, "quiet"), 0);

    // One repair of a post at a time: a lease its holder keeps renewing is refused, with a
    // clear message, whatever the clocks say.
    let post = likes_core::PostId::parse("drifty").expect("id");
    let counts = local.stores.counts.clone();
    let holder = local.rt.spawn(async move {
        let work = async {
            tokio::time::sleep(Duration::from_secs(6)).await;
            Ok(())
        };
        likes_admin::lease::hold(&counts, &post, "otherjob", Duration::from_secs(2), work).await
    });
    std::thread::sleep(Duration::from_millis(500));
    let refused = local.admin(&["recount", "--post", "drifty"]);
    match refused {
        Err(e @ likes_admin::AdminError::Busy { .. }) => {
            assert!(
                e.to_string().contains("is being repaired by job otherjob"),
                "{e}"
            )
        }
        other => panic!("a second recount was not refused: {other:?}"),
    }
    local
        .rt
        .block_on(holder)
        .expect("the holder ran")
        .expect("it held the post and released it");

    let r = local
        .admin(&["recount", "--post", "drifty"])
        .expect("recount");
    assert_eq!(
        corrected(&r.doc),
        BTreeSet::from([u64::from(b)]),
        "{}",
        r.doc
    );
    assert_eq!(local.counted("drifty"), table);
    assert_eq!(leftovers(&local, "drifty"), 0);
    assert!(
        local
            .admin(&["audit", "--post", "drifty"])
            .expect("audit")
            .clean
    );
    let total: i64 = table.iter().sum();
    wait_for_count(&local.stack, "drifty", &tokens[0], total);
}

#[test]
fn recount_of_a_hot_post_is_exact_while_likes_flow_and_batches_are_redelivered() {
    const USERS: usize = 40;
    const THREADS: usize = 8;
    const EACH: u64 = 70;
    let local = Local::start(Some(20_261_201));
    let users: Vec<String> = (0..USERS).map(|i| format!("user-{i:02}")).collect();
    let tokens: Arc<Vec<String>> = Arc::new(users.iter().map(|u| token(u)).collect());
    for tok in tokens.iter().take(USERS / 2) {
        assert_eq!(like(&local, "hot", tok, true), 200);
    }
    let table = local.wait_exact("hot", Duration::from_secs(60));
    // Drift in three buckets, one of them below what the table holds.
    let mut drifted: Vec<u8> = (0..16u8)
        .filter(|b| table[usize::from(*b)] > 1)
        .take(3)
        .collect();
    drifted.sort();
    for (b, d) in drifted.iter().zip([4, -2, 1]) {
        local.drift("hot", *b, d);
    }

    let (stop, sent, during, recounting) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicU64::new(0)),
        Arc::new(AtomicBool::new(false)),
    );
    let port = local.stack.port;
    let clients: Vec<_> = (0..THREADS)
        .map(|t| {
            let (stop, sent, during, recounting, tokens) = (
                stop.clone(),
                sent.clone(),
                during.clone(),
                recounting.clone(),
                tokens.clone(),
            );
            std::thread::spawn(move || {
                let mut rng = SplitMix(t as u64 + 7);
                let mut mine = 0;
                while mine < EACH || !stop.load(Ordering::SeqCst) {
                    let u = rng.below(USERS as u64) as usize;
                    let method = if rng.below(100) < 55 { "PUT" } else { "DELETE" };
                    let answered = http(port, method, "/posts/hot/like", Some(&tokens[u]));
                    // Load is what the stack accepted: a stack answering 500s keeps nothing flowing.
                    if matches!(answered, Ok((200, _))) {
                        mine += 1;
                        sent.fetch_add(1, Ordering::SeqCst);
                        if recounting.load(Ordering::SeqCst) {
                            during.fetch_add(1, Ordering::SeqCst);
                        }
                    }
                }
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while sent.load(Ordering::SeqCst) < 100 {
        assert!(
            std::time::Instant::now() < deadline,
            "the load did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    recounting.store(true, Ordering::SeqCst);
    let started = std::time::Instant::now();
    let r = local.admin(&["recount", "--post", "hot"]);
    let took = started.elapsed();
    recounting.store(false, Ordering::SeqCst);
    let overlapped = during.load(Ordering::SeqCst);
    stop.store(true, Ordering::SeqCst);
    for c in clients {
        c.join().expect("a client");
    }
    let r = r.unwrap_or_else(|e| {
        let log = local
            .stack
            .log
            .lock()
            .map(|l| l.clone())
            .unwrap_or_default();
        let noted: Vec<&str> = log
            .lines()
            .filter(|l| l.contains("WARN") || l.contains("ERROR"))
            .take(30)
            .collect();
        panic!("the recount: {e}\n{}", noted.join("\n"))
    });
    let total = sent.load(Ordering::SeqCst);
    let exact = local.wait_exact("hot", Duration::from_secs(120));
    let stats = local.stack.stats();
    println!(
        "recount under load: {:.1} s; {total} requests, {overlapped} while the recount ran; corrected {:?}; mapping {stats}",
        took.as_secs_f64(),
        corrected(&r.doc)
    );
    assert!(total >= 500, "only {total} requests");
    assert!(overlapped > 0, "no request ran during the recount");
    // Exactly the drifted buckets were corrected: nothing counted twice or lost elsewhere.
    let want: BTreeSet<u64> = drifted.iter().map(|b| u64::from(*b)).collect();
    assert_eq!(corrected(&r.doc), want, "{}", r.doc);
    let injected = &stats["injected"];
    assert!(
        injected["duplicate_deliveries"].as_u64().unwrap_or(0)
            + injected["function_errors"].as_u64().unwrap_or(0)
            + injected["write_failures"].as_u64().unwrap_or(0)
            > 0,
        "the mapping injected no redelivery: {stats}"
    );
    assert_eq!(leftovers(&local, "hot"), 0);
    wait_for_count(&local.stack, "hot", &tokens[0], exact.iter().sum());
}
