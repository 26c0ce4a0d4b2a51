//! Each role of the template allows exactly the calls its code makes: no less (the lab in front
//! of the stack's emulator refuses nothing) and no more (every action of every statement is
//! used on at least one of its resources, and every resource by at least one of its actions),
//! over every configuration a deployment can choose: the like alone, reactions in `multi` and
//! in `single` mode, events `notifications`, `all` and `none`, caller limits on and off. Each
//! configuration's stack takes the same tour: likes and unlikes, plain and named (with their
//! retries and a named no-op), reads of every route, reactions, a person's own erase through
//! the worker, the product's decisions on its bus (a deleted post, a malformed event, a
//! suspension), and every `likes-admin` command as the operators' policy (an operator's
//! suspension of another user running beside the rest).
//!
//! What no code of ours calls, but AWS does on the role's behalf or an operator does by hand,
//! is listed in [`NOT_OURS`], each with why.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::admin::Local;
use crate::common::{http, request, token, Emulator};

/// (identity, statement, action) no code of ours calls, and who does.
const NOT_OURS: [(&str, &str, &str, &str); 6] = [
    ("CountAggregatorFunction", "FailureDestination", "*", "Lambda's event source mapping, sending a batch it gave up on (100 retries or a day) to the on-failure destination; the local mapping does the same with the role (its give-up path is tested in infra/local/src/esm/tests.rs), too late for a tour"),
    ("LikeEventsFunction", "FailureDestination", "*", "Lambda's event source mapping, as the aggregator's"),
    ("CountAggregatorFunction", "LikesStreamRead", "dynamodb:ListStreams", "Lambda's event source mapping, finding the stream; the local mapping is given its ARN"),
    ("LikeEventsFunction", "LikesStreamRead", "dynamodb:ListStreams", "Lambda's event source mapping, finding the stream; the local mapping is given its ARN"),
    ("EraseWorkerFunction", "EraseJobsReceive", "sqs:GetQueueAttributes", "Lambda's SQS event source mapping, reading the queue's attributes"),
    ("OperatorPolicy", "FailedWork", "*", "an operator reading the failure queues by hand (aws sqs receive-message on the stack's EraseDeadLetterQueueUrl and AggregatorFailureQueueUrl outputs); likes-admin does not read them"),
];

fn not_ours(identity: &str, sid: &str, action: &str) -> bool {
    NOT_OURS.iter().any(|(i, s, a, _)| {
        *i == identity && *s == sid && (*a == "*" || a.eq_ignore_ascii_case(action))
    })
}

/// One configuration's settings, and whether it has reactions.
struct Setup {
    env: Vec<(&'static str, String)>,
    kinds: bool,
}

fn setups() -> Vec<Setup> {
    let set =
        |pairs: &[(&'static str, &str)]| pairs.iter().map(|(k, v)| (*k, (*v).to_owned())).collect();
    vec![
        Setup {
            env: set(&[
                ("LIKES_PUBLISHED_EVENTS", "notifications"),
                ("LIKES_LIMIT_WRITES", "50/s,100"),
            ]),
            kinds: false,
        },
        Setup {
            env: set(&[
                ("LIKES_PUBLISHED_EVENTS", "all"),
                ("LIKES_REACTION_KINDS", "like,love,+1"),
                ("LIKES_REACTION_MODE", "multi"),
                ("LIKES_SUMMARY_MINE", "fast"),
            ]),
            kinds: true,
        },
        Setup {
            env: set(&[
                ("LIKES_PUBLISHED_EVENTS", "none"),
                ("LIKES_REACTION_KINDS", "like,love,+1"),
                ("LIKES_REACTION_MODE", "single"),
            ]),
            kinds: true,
        },
    ]
}

fn ok(port: u16, method: &str, path: &str, tok: &str, key: Option<&str>) -> Value {
    let headers: Vec<(&str, &str)> = key.map(|k| ("Idempotency-Key", k)).into_iter().collect();
    let (s, b) = request(port, method, path, Some(tok), &headers, b"").expect("an answer");
    assert!((200..300).contains(&s), "{method} {path}: {s} {b}");
    b
}

/// Polls the stack's lab until `identity` made `action` on a resource ending in `suffix`.
fn wait_for_call(local: &Local, identity: &str, action: &str, suffix: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    loop {
        if local.stack.lab_saw(identity, action, suffix) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{identity} never made {action} on …{suffix}"
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// The tour: every route, every kind of write, the erase, every admin command.
/// The tour, with an operator's suspension of a user beside it (its settle is as long as the
/// rest of the tour anyway), and the restore after.
fn tour(local: &Local, setup: &Setup) -> Value {
    let d = "auth0|role-d";
    ok(local.stack.port, "PUT", "/posts/p3/like", &token(d), None);
    std::thread::scope(|scope| {
        let suspension = scope.spawn(|| local.admin(&["suspend-user", "--user", d]));
        steps(local, setup);
        let report = suspension
            .join()
            .expect("suspend-user")
            .expect("suspend-user");
        assert_eq!(report.doc["moved"], 1, "{}", report.doc);
    });
    let report = local
        .admin(&["restore-user", "--user", d])
        .expect("restore-user");
    assert_eq!(report.doc["moved"], 1, "{}", report.doc);
    local.stack.lab()
}

fn steps(local: &Local, setup: &Setup) {
    let port = local.stack.port;
    let (a, b, c) = (
        token("auth0|role-a"),
        token("auth0|role-b"),
        token("auth0|role-c"),
    );
    let like = |p: &str| format!("/posts/{p}/like");
    for _ in 0..2 {
        ok(port, "PUT", &like("p1"), &a, None);
        ok(port, "DELETE", &like("p1"), &a, None);
    }
    // Named: a like and its retry, an unlike, and a no-op (already as asked: a condition check).
    ok(port, "PUT", &like("p1"), &a, Some("k-1"));
    ok(port, "PUT", &like("p1"), &a, Some("k-1"));
    ok(port, "PUT", &like("p1"), &a, Some("k-2"));
    ok(port, "DELETE", &like("p1"), &a, Some("k-3"));
    ok(port, "PUT", &like("p2"), &a, None);
    for (who, post) in [(&b, "p1"), (&c, "p1"), (&c, "p3")] {
        ok(port, "PUT", &like(post), who, None);
    }
    ok(port, "GET", &like("p1"), &b, None);
    ok(port, "GET", "/posts/p1/likes/count", &b, None);
    ok(port, "GET", "/posts/p1/likes", &b, None);
    ok(port, "GET", "/users/me/likes", &b, None);
    ok(port, "GET", "/likes/summary?post_ids=p1,p2", &b, None);
    if setup.kinds {
        ok(port, "PUT", "/posts/p1/reactions/love", &b, None);
        ok(port, "PUT", "/posts/p1/reactions/%2B1", &b, Some("k-4"));
        ok(port, "GET", "/posts/p1/reactions", &b, None);
        ok(port, "GET", "/posts/p1/reactions/love/users", &b, None);
        ok(port, "DELETE", "/posts/p1/reactions/love", &b, None);
        ok(port, "PUT", "/posts/p2/reactions/love", &b, None);
        // With SummaryMine=fast, from the caller's indexes (`by_user`, `by_reactor`).
        let since = "/likes/summary?post_ids=p1,p2&since=2026-01-01T00:00:00Z";
        ok(port, "GET", since, &b, None);
    }
    // A named like whose answer is lost (the connection closed after it applied): settled by
    // its marker, read back.
    local.stack.arm_fault(
        &json!({"operation": "TransactWriteItems", "identity": "LikesApiFunction", "fault": "close"}),
    );
    ok(port, "PUT", &like("p4"), &a, Some("k-5"));
    if setup.kinds {
        // Beside role-a's like of p4: two kinds in `multi` mode, a replacement in `single`.
        ok(port, "PUT", "/posts/p4/reactions/love", &a, None);
    }
    // A person's own erase, asked twice: the second request joins the job while the first is
    // still noting it sent (that note delayed), and moves its time forward, so that the worker
    // continues the job as a new message up to it, then clears the record.
    local.stack.arm_fault(
        &json!({"operation": "UpdateItem", "table": "erase-requests", "identity": "LikesApiFunction",
            "skip": 1, "fault": "delay:2000"}),
    );
    std::thread::scope(|scope| {
        let first =
            scope.spawn(|| http(port, "DELETE", "/users/me/likes", Some(&b)).expect("the erase"));
        std::thread::sleep(Duration::from_millis(500));
        let (s, body) = http(port, "DELETE", "/users/me/likes", Some(&b)).expect("again");
        assert_eq!(s, 202, "{body}");
        let (s, body) = first.join().expect("the first erase");
        assert_eq!(s, 202, "{body}");
    });
    // A post whose Counts writes fail three attempts running: its batch fails, and the
    // aggregator notes the post for `recount --noted` (invariant 11).
    local.stack.arm_fault(
        &json!({"operation": "UpdateItem", "table": "counts", "identity": "CountAggregatorFunction",
            "times": 3, "fault": "refuse"}),
    );
    ok(port, "PUT", &like("p5"), &a, None);
    wait_for_call(
        local,
        "CountAggregatorFunction",
        "dynamodb:PutItem",
        "table/counts",
    );
    // Every admin command, as the operators' policy (Local::admin fails on a refusal); the
    // recount while likes flow on its post, so that its window has entries.
    local.admin(&["audit", "--post", "p1"]).expect("audit");
    local.admin(&["audit", "--all"]).expect("audit --all");
    // Likes flow until the recount has ended (at least 20; under load the command may start
    // after a fixed burst is over, and its window would then see none), every 100 ms, each of
    // five users liking then unliking in turn.
    std::thread::scope(|scope| {
        let recount = scope.spawn(|| local.admin(&["recount", "--post", "p1"]));
        let mut i = 0;
        while i < 20 || (!recount.is_finished() && i < 1_200) {
            let who = token(&format!("auth0|role-flow{}", i % 5));
            let method = if (i / 5) % 2 == 0 { "PUT" } else { "DELETE" };
            ok(port, method, &like("p1"), &who, None);
            std::thread::sleep(Duration::from_millis(100));
            i += 1;
        }
        recount.join().expect("the recount").expect("recount");
    });
    local
        .admin(&["erase-user", "--user", "auth0|role-c", "--yes"])
        .expect("erase-user");
    local
        .admin(&["erase-post", "--post", "p2", "--yes"])
        .expect("erase-post");
    local.admin(&["backfill"]).expect("backfill");
    local
        .admin(&["recount", "--noted"])
        .expect("recount --noted");
    // In `multi` mode role-a holds two kinds of p4 (the like and love, above): one goes.
    local.admin(&["single-mode", "--yes"]).expect("single-mode");
    // The product's decisions on its bus, to the worker: a deleted post (its partitions read
    // and emptied; p4 still holds role-a's like) and a malformed event (set aside on the
    // dead-letter queue).
    local.put_product_event(
        "PostDeleted",
        &json!({"post_id": "p4", "at": "2026-12-07T10:00:00Z"}),
    );
    local.put_product_event("PostDeleted", &json!({"post_id": "p4"}));
    wait_for_call(
        local,
        "EraseWorkerFunction",
        "dynamodb:BatchWriteItem",
        "table/likes",
    );
    wait_for_call(
        local,
        "EraseWorkerFunction",
        "dynamodb:Query",
        "table/likes",
    );
    wait_for_call(
        local,
        "EraseWorkerFunction",
        "sqs:SendMessage",
        "likes-erase-dlq",
    );
    // A suspension: the decision recorded, the user's likes (role-a still likes p5) read and
    // moved out of sight.
    local.put_product_event(
        "UserSuspended",
        &json!({"user_id": "auth0|role-a", "at": likes_core::time::now_ts()}),
    );
    for (action, suffix) in [
        ("dynamodb:PutItem", "table/erase-requests"),
        ("dynamodb:GetItem", "table/erase-requests"),
        ("dynamodb:GetItem", "table/likes"),
        ("dynamodb:PutItem", "table/likes"),
    ] {
        wait_for_call(local, "EraseWorkerFunction", action, suffix);
    }
    wait_for_call(
        local,
        "EraseWorkerFunction",
        "sqs:SendMessage",
        "likes-erase",
    );
    wait_for_call(
        local,
        "EraseWorkerFunction",
        "dynamodb:DeleteItem",
        "table/erase-requests",
    );
}

#[test]
fn every_role_allows_exactly_the_calls_its_code_makes_in_every_configuration() {
    let labs: Vec<Value> = std::thread::scope(|scope| {
        let runs: Vec<_> = setups()
            .into_iter()
            .map(|setup| {
                scope.spawn(move || {
                    let local = Local::with(Emulator::start(), None, setup.env.clone());
                    tour(&local, &setup)
                })
            })
            .collect();
        runs.into_iter()
            .map(|r| r.join().expect("a tour"))
            .collect()
    });
    let decided: Vec<&Value> = labs
        .iter()
        .flat_map(|l| l["decided"].as_array().into_iter().flatten())
        .collect();
    let denied: Vec<&&Value> = decided.iter().filter(|d| !d["denied"].is_null()).collect();
    assert!(denied.is_empty(), "no less: the lab refused {denied:#?}");
    // (identity, statement, action) and (identity, statement, resource) that some call used.
    let mut actions = BTreeSet::new();
    let mut resources = BTreeSet::new();
    for d in &decided {
        let by = &d["allowed_by"];
        let (identity, sid) = (
            d["identity"].as_str().unwrap_or(""),
            by["sid"].as_str().unwrap_or(""),
        );
        actions.insert((
            identity.to_owned(),
            sid.to_owned(),
            d["action"].as_str().unwrap_or("").to_ascii_lowercase(),
        ));
        resources.insert((
            identity.to_owned(),
            sid.to_owned(),
            by["resource"].as_str().unwrap_or("").to_owned(),
        ));
    }
    let mut unused = Vec::new();
    for (identity, statements) in labs[0]["policies"].as_object().expect("the lab's policies") {
        for s in statements
            .as_array()
            .into_iter()
            .flatten()
            .filter(|s| s["allow"] == true)
        {
            let sid = s["sid"].as_str().unwrap_or("");
            for action in s["actions"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let used = actions.contains(&(
                    identity.clone(),
                    sid.to_owned(),
                    action.to_ascii_lowercase(),
                ));
                if !used && !not_ours(identity, sid, action) {
                    unused.push(format!("{identity} {sid}: {action} never called"));
                }
            }
            for resource in s["resources"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
            {
                let used =
                    resources.contains(&(identity.clone(), sid.to_owned(), resource.to_owned()));
                if !used && !not_ours(identity, sid, "*") {
                    unused.push(format!("{identity} {sid}: {resource} never touched"));
                }
            }
        }
    }
    assert!(
        unused.is_empty(),
        "no more: the template allows what no code calls:\n{}",
        unused.join("\n")
    );
    println!(
        "roles: {} decisions over {} configurations, none refused; not ours: {}",
        decided.len(),
        labs.len(),
        NOT_OURS
            .map(|(i, s, a, why)| format!("{i} {s} {a} ({why})"))
            .join("; ")
    );
}
