//! Like events end to end, as `make dev` runs them: likes through HTTP, the Likes stream read
//! by the events function's own mapping, events put on the emulator's bus, a rule delivering
//! them to `likes-events`, read back from `GET /_local/events`.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant};

use common::{http, token, Options, Stack};
use serde_json::Value;

fn detail_types<'a>(events: &'a [Value], post: &str) -> BTreeMap<&'a str, Vec<&'a Value>> {
    let mut out: BTreeMap<&str, Vec<&Value>> = BTreeMap::new();
    for e in events.iter().filter(|e| e["detail"]["post_id"] == post) {
        assert_eq!(e["source"], "likes", "{e}");
        out.entry(e["detail-type"].as_str().unwrap_or("?"))
            .or_default()
            .push(&e["detail"]);
    }
    out
}

fn count(by: &BTreeMap<&str, Vec<&Value>>, t: &str) -> usize {
    by.get(t).map_or(0, Vec::len)
}

fn idle_rounds(stack: &Stack) -> u64 {
    stack.stats()["events"]["mapping"]["idle_rounds"]
        .as_u64()
        .unwrap_or(0)
}

#[test]
fn toggling_notifies_once_retracts_once_and_each_milestone_comes_once() {
    let stack = Stack::start(&Options {
        published_events: Some("all".into()),
        ..Options::default()
    });
    let post = uuid::Uuid::new_v4().to_string();
    let path = format!("/posts/{post}/like");
    let toggler = uuid::Uuid::new_v4().to_string();
    let tok = token(&toggler);
    // like → unlike → like → unlike → like, well inside the 24 h window.
    for method in ["PUT", "DELETE", "PUT", "DELETE", "PUT"] {
        let (s, b) = http(stack.port, method, &path, Some(&tok)).unwrap();
        assert_eq!(
            (s, &b["changed"]),
            (200, &Value::Bool(true)),
            "{method}: {b}"
        );
    }
    // Nine more likers: the count reaches 10.
    for _ in 0..9 {
        let t = token(&uuid::Uuid::new_v4().to_string());
        let (s, b) = http(stack.port, "PUT", &path, Some(&t)).unwrap();
        assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    }
    // What must come: 3 + 9 likes and 2 unlikes, 10 notifications, 1 retraction, 2 milestones.
    let want = [
        ("LikeAdded", 12),
        ("LikeRemoved", 2),
        ("LikeNotification", 10),
        ("LikeRetraction", 1),
        ("LikeMilestone", 2),
    ];
    let deadline = Instant::now() + Duration::from_secs(60);
    let reached = |events: &[Value]| {
        let by = detail_types(events, &post);
        want.iter().all(|(t, n)| count(&by, t) >= *n)
    };
    while !reached(&stack.events()) {
        assert!(
            Instant::now() < deadline,
            "events missing: {:?}\n{}",
            detail_types(&stack.events(), &post)
                .iter()
                .map(|(t, v)| (*t, v.len()))
                .collect::<Vec<_>>(),
            stack.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    // Then nothing more: the events mapping idles twice (caught up, every batch answered), and
    // the feed holds still over a poll of its queue.
    let idle = idle_rounds(&stack);
    let mut last = stack.events().len();
    loop {
        std::thread::sleep(Duration::from_millis(300));
        let now = stack.events().len();
        if idle_rounds(&stack) >= idle + 2 && now == last {
            break;
        }
        last = now;
        assert!(
            Instant::now() < deadline + Duration::from_secs(30),
            "never idle"
        );
    }
    let events = stack.events();
    let by = detail_types(&events, &post);
    for (t, n) in want {
        assert_eq!(count(&by, t), n, "{t}: {:?}", by.get(t));
    }
    // Every like and unlike present, each under its own id.
    let changes: BTreeSet<&str> = by["LikeAdded"]
        .iter()
        .chain(&by["LikeRemoved"])
        .map(|d| d["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(changes.len(), 14);
    // The toggler: one notification, one retraction naming it.
    let mine = |t: &str| -> Vec<&Value> {
        by[t]
            .iter()
            .copied()
            .filter(|d| d["user_id"] == toggler.as_str())
            .collect()
    };
    let (notes, retractions) = (mine("LikeNotification"), mine("LikeRetraction"));
    assert_eq!(
        (notes.len(), retractions.len()),
        (1, 1),
        "{notes:?} {retractions:?}"
    );
    assert_eq!(retractions[0]["retracts"], notes[0]["event_id"]);
    let all_ids: BTreeSet<&str> = by
        .values()
        .flatten()
        .map(|d| d["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(all_ids.len(), 12 + 2 + 10 + 1 + 2, "every event its own id");
    let milestones: Vec<u64> = by["LikeMilestone"]
        .iter()
        .map(|d| d["milestone"].as_u64().unwrap())
        .collect();
    assert_eq!(BTreeSet::from_iter(milestones), BTreeSet::from([1, 10]));
    println!(
        "{} events for the post; the events function: {}",
        by.values().map(Vec::len).sum::<usize>(),
        stack.stats()["events"]
    );
}
