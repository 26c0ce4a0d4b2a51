//! Per-caller limits through `make dev` (issue 25): a caller far over its limit gets 429s with
//! `Retry-After`, while other callers' requests at the same time all succeed; flips of one
//! post are limited apart from writes to other posts.

use crate::common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{exchange, http, token, Options, Stack};

const LISTS_PER_SEC: u64 = 5;
const LISTS_BURST: u64 = 10;

fn stack() -> Stack {
    Stack::start(&Options {
        limits: vec![
            (
                "LIKES_LIMIT_LISTS",
                format!("{LISTS_PER_SEC}/s,{LISTS_BURST}"),
            ),
            ("LIKES_LIMIT_FLIPS", "6/min,6".to_owned()),
        ],
        ..Options::default()
    })
}

#[test]
fn a_caller_at_ten_times_its_limit_is_refused_while_others_are_served() {
    let stack = stack();
    let port = stack.port;
    let abuser = token("limits-abuser");
    let summary = "/likes/summary?post_ids=p1,p2,p3";
    // The abuser: 10x the lists limit, for 3 s, from 5 threads.
    let run_for = Duration::from_secs(3);
    let per_thread_gap = Duration::from_millis(1000 * 5 / (10 * LISTS_PER_SEC));
    let started = Instant::now();
    let done = Arc::new(AtomicBool::new(false));
    let abusers: Vec<_> = (0..5)
        .map(|_| {
            let abuser = abuser.clone();
            std::thread::spawn(move || {
                let mut answers = Vec::new();
                while started.elapsed() < run_for {
                    let sent = Instant::now();
                    answers.push(exchange(port, "GET", summary, Some(&abuser), &[], b"").unwrap());
                    std::thread::sleep(per_thread_gap.saturating_sub(sent.elapsed()));
                }
                answers
            })
        })
        .collect();
    // Meanwhile three people, each within their limits: a like, a count, a summary a second.
    let people: Vec<_> = (0..3)
        .map(|n| {
            let done = Arc::clone(&done);
            std::thread::spawn(move || {
                let me = token(&format!("limits-person-{n}"));
                let mut statuses = Vec::new();
                let mut i = 0;
                while !done.load(Ordering::SeqCst) {
                    i += 1;
                    for (method, path) in [
                        ("PUT", format!("/posts/lp{n}-{i}/like")),
                        ("GET", "/posts/lp0/likes/count".to_owned()),
                        ("GET", summary.to_owned()),
                    ] {
                        let (status, body) = http(port, method, &path, Some(&me)).unwrap();
                        statuses.push((status, path, body));
                    }
                    std::thread::sleep(Duration::from_millis(300));
                }
                statuses
            })
        })
        .collect();
    let answers: Vec<_> = abusers
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    done.store(true, Ordering::SeqCst);
    let elapsed = started.elapsed().as_secs_f64();
    for person in people {
        for (status, path, body) in person.join().unwrap() {
            assert_eq!(
                status, 200,
                "a person within limits was refused: {path} {body}"
            );
        }
    }
    let admitted = answers.iter().filter(|(s, _, _)| *s == 200).count() as f64;
    let refused: Vec<_> = answers.iter().filter(|(s, _, _)| *s == 429).collect();
    assert_eq!(
        admitted as usize + refused.len(),
        answers.len(),
        "only 200s and 429s: {:?}",
        answers.iter().map(|a| a.0).collect::<Vec<_>>()
    );
    let allowed = LISTS_BURST as f64 + LISTS_PER_SEC as f64 * elapsed;
    assert!(
        admitted <= allowed + 1.0,
        "{admitted} admitted in {elapsed:.1}s; the limit allows {allowed:.0}"
    );
    assert!(
        refused.len() as f64 >= answers.len() as f64 / 2.0,
        "{} of {} refused at 10x the limit",
        refused.len(),
        answers.len()
    );
    for (_, headers, body) in refused {
        assert_eq!(body["error"]["code"], "rate_limited", "{body}");
        let retry: u64 = headers
            .iter()
            .find(|(k, _)| k == "retry-after")
            .and_then(|(_, v)| v.parse().ok())
            .expect("a 429 carries Retry-After");
        assert!((1..=2).contains(&retry), "Retry-After {retry}");
    }
}

#[test]
fn flips_of_one_post_are_limited_and_other_posts_are_not() {
    let stack = stack();
    let me = token("limits-flipper");
    let mut statuses = Vec::new();
    for i in 0..12 {
        let method = if i % 2 == 0 { "PUT" } else { "DELETE" };
        statuses.push(http(stack.port, method, "/posts/flipped/like", Some(&me)).unwrap());
    }
    let admitted = statuses.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(admitted, 6, "{statuses:?}");
    let (status, body) = &statuses[11];
    assert_eq!(
        (*status, &body["error"]["code"]),
        (429, &"rate_limited".into())
    );
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("one post")),
        "{body}"
    );
    // The refused flips wrote nothing: the post is as the sixth flip (an unlike) left it.
    let (_, like) = http(stack.port, "GET", "/posts/flipped/like", Some(&me)).unwrap();
    assert_eq!(like["liked"], false, "{like}");
    let (status, _) = http(stack.port, "PUT", "/posts/another/like", Some(&me)).unwrap();
    assert_eq!(status, 200, "another post is not limited by these flips");
}

/// One token's flood of erase requests (limits off, to show the queue itself holds): every
/// answer names one pending job, one job is queued, and another person's erase, asked for
/// right after the flood, completes as promptly as it would alone.
#[test]
fn an_erase_flood_leaves_one_job_and_another_persons_erase_is_not_delayed() {
    let stack = Stack::start(&Options {
        limits: vec![("LIKES_CALLER_LIMITS", "off".to_owned())],
        ..Options::default()
    });
    let port = stack.port;
    let (flooder, other) = (token("auth0|erase-flooder"), token("auth0|erase-other"));
    for (who, n) in [(&flooder, 3), (&other, 3)] {
        for i in 0..n {
            let (status, _) = http(port, "PUT", &format!("/posts/ef-{i}/like"), Some(who)).unwrap();
            assert_eq!(status, 200);
        }
    }
    let threads: Vec<_> = (0..10)
        .map(|_| {
            let flooder = flooder.clone();
            std::thread::spawn(move || {
                (0..10)
                    .map(|_| http(port, "DELETE", "/users/me/likes", Some(&flooder)).unwrap())
                    .collect::<Vec<_>>()
            })
        })
        .collect();
    let answers: Vec<_> = threads
        .into_iter()
        .flat_map(|t| t.join().unwrap())
        .collect();
    let ids: std::collections::HashSet<String> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 202, "{body}");
            body["job_id"].as_str().unwrap_or_default().to_owned()
        })
        .collect();
    assert_eq!(ids.len(), 1, "100 requests, one pending job: {ids:?}");
    let asked = Instant::now();
    let (status, job) = http(port, "DELETE", "/users/me/likes", Some(&other)).unwrap();
    assert_eq!(status, 202, "{job}");
    let gone = |who: &str| {
        let (_, mine) = http(port, "GET", "/users/me/likes", Some(who)).unwrap();
        mine["items"]
            .as_array()
            .is_some_and(|items| items.is_empty())
    };
    // A job's last sweep waits `SETTLE` (15 s) after its request; a job queued behind a
    // flood would wait for the flood's jobs on top.
    let deadline = asked + likes_core::erase_job::SETTLE + Duration::from_secs(30);
    while !gone(&other) {
        assert!(
            Instant::now() < deadline,
            "the other person's erase is stuck"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    println!(
        "another person's erase after a flood of 100: done in {:.1} s",
        asked.elapsed().as_secs_f64()
    );
    while !gone(&flooder) {
        assert!(Instant::now() < deadline, "the flooder's erase is stuck");
        std::thread::sleep(Duration::from_millis(100));
    }
    let log = stack.log.lock().unwrap().clone();
    let queued = log
        .lines()
        .filter(|l| l.contains("erase of a user's likes queued") && l.contains("erase-flooder"))
        .count();
    assert_eq!(queued, 1, "jobs queued for the flooder");
}
