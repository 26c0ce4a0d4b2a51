//! Erasing a user's and a post's likes, and backfilling a table the stream never saw.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::{StreamSpecification, StreamViewType};
use likes_aws::dynamo::schema::{create_table, TableDef, LIKES};
use likes_sim::rng::SplitMix;
use serde_json::Value;

use super::Local;
use crate::common::{http, token, wait_for_count, Emulator, Options, Stack};

pub(super) fn posts(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("post-{i:02}")).collect()
}

/// Others like and unlike `posts` at random until `stop`.
pub(super) fn background(
    local: &Local,
    posts: &[String],
    tokens: &[String],
    stop: &Arc<AtomicBool>,
) -> std::thread::JoinHandle<usize> {
    let (port, posts, tokens, stop) = (
        local.stack.port,
        posts.to_vec(),
        tokens.to_vec(),
        stop.clone(),
    );
    std::thread::spawn(move || {
        let mut rng = SplitMix(99);
        let mut sent = 0;
        while !stop.load(Ordering::SeqCst) {
            let p = &posts[rng.below(posts.len() as u64) as usize];
            let t = &tokens[rng.below(tokens.len() as u64) as usize];
            let method = if rng.below(2) == 0 { "PUT" } else { "DELETE" };
            // Load is what the stack accepted: a stack answering 500s keeps nothing flowing.
            if matches!(
                http(port, method, &format!("/posts/{p}/like"), Some(t)),
                Ok((200, _))
            ) {
                sent += 1;
            }
        }
        sent
    })
}

#[test]
fn erase_user_removes_every_like_while_others_keep_liking() {
    let local = Local::start(None);
    let posts = posts(50);
    let leaver = token("auth0|leaver");
    let others: Vec<String> = (0..4).map(|i| token(&format!("auth0|stay{i}"))).collect();
    for (i, p) in posts.iter().enumerate() {
        let path = format!("/posts/{p}/like");
        assert_eq!(
            http(local.stack.port, "PUT", &path, Some(&leaver))
                .unwrap()
                .0,
            200
        );
        let other = &others[i % others.len()];
        assert_eq!(
            http(local.stack.port, "PUT", &path, Some(other)).unwrap().0,
            200
        );
    }
    let stop = Arc::new(AtomicBool::new(false));
    let load = background(&local, &posts, &others, &stop);
    let started = std::time::Instant::now();
    let r = local.admin(&["erase-user", "--user", "auth0|leaver", "--yes"]);
    let took = started.elapsed();
    stop.store(true, Ordering::SeqCst);
    let sent = load.join().expect("the load");
    let r = r.expect("erase-user");
    assert_eq!(r.doc["deleted"], 50, "{}", r.doc);
    assert!(sent > 0, "nobody liked during the erase");
    println!(
        "erase-user: 50 likes in {:.1} s (two empty sweeps 1 s apart included), {sent} other requests meanwhile",
        took.as_secs_f64()
    );

    let (s, mine) = http(local.stack.port, "GET", "/users/me/likes", Some(&leaver)).unwrap();
    assert_eq!(s, 200);
    assert_eq!(mine["items"], Value::Array(vec![]), "{mine}");
    for p in &posts {
        let (_, b) = http(
            local.stack.port,
            "GET",
            &format!("/posts/{p}/like"),
            Some(&leaver),
        )
        .unwrap();
        assert_eq!(b["liked"], false, "{p}: {b}");
        local.wait_exact(p, Duration::from_secs(60));
    }
    // Idempotent: a second run finds nothing left.
    let again = local
        .admin(&["erase-user", "--user", "auth0|leaver", "--yes"])
        .expect("again");
    assert_eq!(again.doc["deleted"], 0, "{}", again.doc);
}

#[test]
fn erase_post_takes_two_thousand_likes_over_every_bucket_to_zero() {
    let local = Local::start(None);
    let doomed: Vec<(String, String)> = (0..2000)
        .map(|i| ("doomed".to_owned(), format!("u{i:04}")))
        .collect();
    let kept: Vec<(String, String)> = (0..30)
        .map(|i| ("kept".to_owned(), format!("u{i:04}")))
        .collect();
    local.load("likes", &doomed);
    local.load("likes", &kept);
    let table = local.wait_exact("doomed", Duration::from_secs(180));
    assert_eq!(table.iter().sum::<i64>(), 2000);
    assert!(table.iter().all(|c| *c > 0), "not every bucket: {table:?}");
    let kept_before = local.wait_exact("kept", Duration::from_secs(60));

    let started = std::time::Instant::now();
    let r = local
        .admin(&["erase-post", "--post", "doomed", "--yes"])
        .expect("erase-post");
    let took = started.elapsed().as_secs_f64();
    println!(
        "erase-post: 2,000 likes in {took:.1} s ({:.0} likes/s)",
        2000.0 / took
    );
    assert_eq!(r.doc["deleted"], 2000, "{}", r.doc);
    assert_eq!(
        local.wait_exact("doomed", Duration::from_secs(180)),
        vec![0; 16]
    );
    assert_eq!(
        local.wait_exact("kept", Duration::from_secs(60)),
        kept_before
    );
    wait_for_count(&local.stack, "doomed", &token("auth0|reader"), 0);
}

#[test]
fn backfill_makes_every_count_exact_for_likes_the_stream_never_saw() {
    // Likes written while the table had no stream, as before the stream existed.
    let emulator = Emulator::start();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
    let unstreamed = TableDef {
        stream_view: None,
        ..LIKES
    };
    rt.block_on(create_table(&client, &unstreamed, "likes"))
        .expect("the Likes table");
    let posts = posts(16);
    let likes: Vec<(String, String)> = posts
        .iter()
        .enumerate()
        .flat_map(|(i, p)| (0..(i * 7) % 45).map(move |u| (p.clone(), format!("old{u:03}"))))
        .collect();
    super::load(&rt, &client, "likes", &likes);
    // The stream starts only now; the stack reads from it.
    let spec = StreamSpecification::builder()
        .stream_enabled(true)
        .stream_view_type(StreamViewType::KeysOnly)
        .build()
        .expect("a spec");
    rt.block_on(
        client
            .update_table()
            .table_name("likes")
            .stream_specification(spec)
            .send(),
    )
    .expect("the stream enabled");
    drop(rt);
    let local = Local::on(emulator, None);
    let readers: Vec<String> = (0..3).map(|i| token(&format!("auth0|new{i}"))).collect();
    let stop = Arc::new(AtomicBool::new(false));
    let load = background(&local, &posts[..5], &readers, &stop);

    let state = std::env::temp_dir().join(format!("backfill-{}", uuid::Uuid::new_v4().simple()));
    let state_arg = state.to_string_lossy().into_owned();
    let r = local
        .admin(&[
            "backfill",
            "--segments",
            "4",
            "--concurrency",
            "2",
            "--state",
            &state_arg,
        ])
        .expect("backfill");
    stop.store(true, Ordering::SeqCst);
    load.join().expect("the load");
    println!("backfill: {}", r.doc);
    assert!(
        r.doc["items"].as_u64().unwrap_or(0) >= likes.len() as u64,
        "{}",
        r.doc
    );
    for p in &posts {
        let exact = local.wait_exact(p, Duration::from_secs(60));
        if !posts[..5].contains(p) {
            let loaded = likes.iter().filter(|(q, _)| q == p).count() as i64;
            assert_eq!(exact.iter().sum::<i64>(), loaded, "{p}");
        }
    }
    // Resumable: a rerun with the same state skips what is done. (It may find a post more: one
    // with no loaded likes whose first like came from the load after the first scan passed it.)
    let again = local
        .admin(&["backfill", "--state", &state_arg])
        .expect("backfill again");
    assert_eq!(again.doc["skipped_done"], r.doc["posts"], "{}", again.doc);
    assert_eq!(again.doc["corrected_buckets"], 0, "{}", again.doc);
    let _ = std::fs::remove_file(state);
}

#[test]
fn a_persons_own_erase_through_the_api_survives_a_crash_of_the_stack() {
    let emulator = Emulator::start();
    let state = std::env::temp_dir().join(format!("erase-me-{}", uuid::Uuid::new_v4().simple()));
    let opts = Options {
        endpoint: Some(emulator.endpoint.clone()),
        state_dir: Some(state),
        ..Options::default()
    };
    let stack = Stack::start(&opts);
    let port = stack.port;
    let me = token("auth0|erase-me");
    let other = token("auth0|stays");
    let posts = posts(30);
    for p in &posts {
        let path = format!("/posts/{p}/like");
        assert_eq!(http(port, "PUT", &path, Some(&me)).unwrap().0, 200);
        assert_eq!(http(port, "PUT", &path, Some(&other)).unwrap().0, 200);
    }
    // No identity, no erase; an identity in the body is refused; neither changes anything.
    assert_eq!(
        http(port, "DELETE", "/users/me/likes", None).unwrap().0,
        401
    );
    let (s, _) = crate::common::request(
        port,
        "DELETE",
        "/users/me/likes",
        Some(&me),
        &[],
        br#"{"user_id":"auth0|stays"}"#,
    )
    .unwrap();
    assert_eq!(s, 400);

    let (s, job) = http(port, "DELETE", "/users/me/likes", Some(&me)).unwrap();
    assert_eq!(s, 202, "{job}");
    assert_eq!(job["status"], "accepted", "{job}");
    assert!(
        uuid::Uuid::parse_str(job["job_id"].as_str().unwrap_or("")).is_ok(),
        "{job}"
    );
    assert_eq!(job["user_id"], "auth0|erase-me");
    // A like made after the request is a new like: the erase leaves it.
    assert_eq!(
        http(port, "PUT", "/posts/after/like", Some(&me)).unwrap().0,
        200
    );
    // Whatever the worker had done, the stack dies now; the job is in the queue.
    stack.crash();
    let stack = Stack::start_on(port, &opts);

    let deadline = std::time::Instant::now() + Duration::from_secs(90);
    loop {
        let (s, mine) = http(port, "GET", "/users/me/likes", Some(&me)).unwrap();
        assert_eq!(s, 200, "{mine}");
        let left: Vec<&Value> = mine["items"].as_array().into_iter().flatten().collect();
        if left.len() == 1 {
            assert_eq!(left[0]["post_id"], "after", "{mine}");
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the erase did not finish: {} likes left",
            left.len()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("a runtime");
    let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
    for p in &posts {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let post = likes_core::PostId::parse(p).expect("id");
        let store = likes_aws::DynamoCounts::new(client.clone(), "counts");
        loop {
            use likes_core::CountsRead;
            let n = rt.block_on(store.post_count(&post)).expect("count");
            if n == 1 {
                break;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{p}: count {n}, want 1"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }
    drop(stack);
}
