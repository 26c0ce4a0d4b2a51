//! A deleted account's erase holds (issue 32): `erase-user` runs the worker's procedure, its
//! settle included, so that a like whose write lands late (held by the network within the
//! API's bound) is gone when the tool reports; and a like made after the erase with an access
//! token issued before it is removed by the last sweep the tool queues, which the erase worker
//! runs once the longest token lifetime (`LIKES_MAX_TOKEN_LIFETIME_SECS`, 20 s here, the
//! lifetime of the token the test mints) has passed.
//! Before: two sweeps a second apart, no settle, nothing after; both likes survived while the
//! tool printed "erased N likes" and exited 0.

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use serde_json::json;

use super::Local;
use crate::common::{http, request, Emulator};

const GONE: &str = "auth0|gone";
/// The longest token lifetime the stack is told, and the account's token's.
const LIFETIME_SECS: i64 = 20;

/// A token for `user` that lives `secs`, as the local authorizer issues them.
fn token_for(user: &str, secs: i64) -> String {
    likes_local::jwt::Authorizer {
        secret: crate::common::SECRET.into(),
        issuer: likes_local::jwt::DEFAULT_ISSUER.into(),
        audience: likes_local::jwt::DEFAULT_AUDIENCE.into(),
    }
    .issue(user, secs)
    .expect("a token")
}

/// The posts the user has a like of, read consistently from the table itself.
fn likes_of(local: &Local, user: &str) -> Vec<String> {
    let items = local
        .rt
        .block_on(likes_harness::scan(&local.client, "likes"));
    items
        .iter()
        .filter(|i| {
            i.get("user_id")
                .and_then(|v| v.as_s().ok())
                .map(String::as_str)
                == Some(user)
        })
        .filter_map(|i| i.get("post_id").and_then(|v| v.as_s().ok()).cloned())
        .collect()
}

fn markers_of(local: &Local, user: &str) -> usize {
    local
        .rt
        .block_on(
            local
                .client
                .query()
                .table_name("markers")
                .key_condition_expression("user_id = :u")
                .expression_attribute_values(":u", AttributeValue::S(user.to_owned()))
                .consistent_read(true)
                .send(),
        )
        .expect("the markers")
        .count as usize
}

#[test]
fn an_erased_account_keeps_no_like_landing_late_or_made_with_an_old_token() {
    let local = Local::with(
        Emulator::start(),
        None,
        vec![("LIKES_MAX_TOKEN_LIFETIME_SECS", LIFETIME_SECS.to_string())],
    );
    let port = local.stack.port;
    let old_token = token_for(GONE, LIFETIME_SECS);
    assert_eq!(
        http(port, "PUT", "/posts/early/like", Some(&old_token))
            .unwrap()
            .0,
        200
    );

    // A named like held 3 s on its way to the table: it lands after the erase's first sweeps.
    local.stack.arm_fault(
        &json!({"operation": "TransactWriteItems", "identity": "LikesApiFunction",
            "fault": "hold:3000"}),
    );
    std::thread::scope(|scope| {
        let late = scope.spawn(|| {
            request(
                port,
                "PUT",
                "/posts/late/like",
                Some(&old_token),
                &[("Idempotency-Key", "late-1")],
                b"",
            )
        });
        let deadline = Instant::now() + Duration::from_secs(30);
        while !local
            .stack
            .lab_saw("LikesApiFunction", "dynamodb:PutItem", "table/markers")
        {
            assert!(
                Instant::now() < deadline,
                "the held like never left the API"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        let r = local
            .admin(&["erase-user", "--user", GONE, "--yes"])
            .expect("erase-user");
        assert_eq!(r.exit_code(), 0, "{}", r.doc);
        assert!(r.doc["final_sweep_job"].is_string(), "{}", r.doc);
        late.join().expect("the late like").expect("an answer");
    });
    assert_eq!(markers_of(&local, GONE), 1, "the held like was written");
    assert_eq!(
        likes_of(&local, GONE),
        Vec::<String>::new(),
        "no like of the erased account survives the tool's report"
    );

    // The account's token is still valid: a like made with it now is removed by the last sweep.
    assert_eq!(
        http(port, "PUT", "/posts/after/like", Some(&old_token))
            .unwrap()
            .0,
        200
    );
    assert_eq!(likes_of(&local, GONE), ["after"]);
    let deadline = Instant::now() + Duration::from_secs(120);
    while !likes_of(&local, GONE).is_empty() {
        assert!(
            Instant::now() < deadline,
            "the like made with the old token survived the last sweep; the stack's log:\n{}",
            local
                .stack
                .log
                .lock()
                .map(|l| l.clone())
                .unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    // The sweep came no earlier than the token's end: it is refused now (a read, so that the
    // probe writes nothing; within a second: `exp` is in whole seconds, and the job's settled
    // second sweep, 15 s on, covers that second).
    let deadline = Instant::now() + Duration::from_secs(5);
    while http(port, "GET", "/posts/after/like", Some(&old_token))
        .unwrap()
        .0
        != 401
    {
        assert!(
            Instant::now() < deadline,
            "the old token outlived the last sweep"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}
