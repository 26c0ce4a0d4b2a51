//! The binary's answers to bad usage and bad input: exit status 2, a message naming the
//! problem, and nothing written to either table. Against the shared emulator (`make test`).

use std::collections::BTreeSet;
use std::process::Command;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_aws::dynamo::schema::{create_table, COUNTS, LIKES};

fn endpoint() -> String {
    std::env::var("LIKES_TEST_DYNAMODB_ENDPOINT")
        .expect("LIKES_TEST_DYNAMODB_ENDPOINT: run with `make test`, which starts the emulator")
}

/// Every item of a table, printed, sorted: what "nothing written" compares.
async fn snapshot(client: &Client, table: &str) -> BTreeSet<String> {
    let out = client.scan().table_name(table).send().await.expect("scan");
    out.items()
        .iter()
        .map(|i| {
            format!(
                "{:?}",
                i.iter().collect::<std::collections::BTreeMap<_, _>>()
            )
        })
        .collect()
}

/// Arguments, environment, and what the message must name.
type Case<'a> = (Vec<&'a str>, Vec<(&'a str, &'a str)>, &'a str);

fn admin(args: &[&str], env: &[(&str, &str)]) -> (i32, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_likes-admin"));
    cmd.args(args)
        .env_remove("LIKES_TABLE_NAME")
        .env_remove("COUNTS_TABLE_NAME")
        .env_remove("ERASE_REQUESTS_TABLE_NAME")
        .env("LIKES_DYNAMODB_ENDPOINT", endpoint());
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("likes-admin runs");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[tokio::test(flavor = "multi_thread")]
async fn bad_usage_and_input_exit_2_naming_the_problem_and_write_nothing() {
    let client = likes_aws::sdk::emulator_dynamo(&endpoint()).await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let (likes, counts) = (format!("likes-{suffix}"), format!("counts-{suffix}"));
    create_table(&client, &LIKES, &likes).await.expect("Likes");
    create_table(&client, &COUNTS, &counts)
        .await
        .expect("Counts");
    for user in ["alice", "bob"] {
        client
            .put_item()
            .table_name(&likes)
            .item("post_bucket", AttributeValue::S("p1#3".into()))
            .item("user_id", AttributeValue::S(user.into()))
            .send()
            .await
            .expect("a like");
    }
    let before = (
        snapshot(&client, &likes).await,
        snapshot(&client, &counts).await,
    );
    let env = [
        ("LIKES_TABLE_NAME", likes.as_str()),
        ("COUNTS_TABLE_NAME", counts.as_str()),
    ];
    let missing = format!("nope-{suffix}");
    let cases: Vec<Case> = vec![
        // An id outside the grammar, in each place an id is taken.
        (
            vec!["erase-user", "--user", "not an id"],
            env.to_vec(),
            "--user must be",
        ),
        (
            vec!["erase-post", "--post", "a/b"],
            env.to_vec(),
            "--post must be",
        ),
        // An erase on no terminal, unconfirmed.
        (vec!["erase-post", "--post", "p1"], env.to_vec(), "--yes"),
        (
            vec![
                "erase-user",
                "--user",
                "alice",
                "--erase-queue-url",
                "http://127.0.0.1:9/000000000000/likes-erase",
            ],
            env.to_vec(),
            "--yes",
        ),
        // An account's erase with nowhere to queue its last sweep.
        (
            vec!["erase-user", "--user", "alice", "--yes"],
            env.to_vec(),
            "--erase-queue-url",
        ),
        // A suspension with nowhere to record it, of no valid id, or in no table.
        (
            vec!["suspend-user", "--user", "alice"],
            env.to_vec(),
            "--erase-requests-table",
        ),
        (
            vec!["set-policy", "--post", "p1", "--author", "alice"],
            env.to_vec(),
            "--erase-requests-table",
        ),
        (
            vec!["set-policy", "--post", "p1", "--author", "al ice"],
            env.to_vec(),
            "--author must be",
        ),
        (
            vec!["restore-user", "--user", "bob smith"],
            env.to_vec(),
            "--user must be",
        ),
        (
            vec![
                "suspend-user",
                "--user",
                "alice",
                "--erase-requests-table",
                &missing,
            ],
            env.to_vec(),
            &missing,
        ),
        (
            vec!["recount", "--post", "p1", "--noted"],
            env.to_vec(),
            "--noted",
        ),
        (
            vec!["recount", "--post", "p1#3"],
            env.to_vec(),
            "--post must be",
        ),
        (
            vec!["audit", "--post", "p1", "--post", ""],
            env.to_vec(),
            "--post must be",
        ),
        // A table that does not exist.
        (
            vec!["recount", "--post", "p1", "--likes-table", &missing],
            env.to_vec(),
            &missing,
        ),
        // A missing flag or table name.
        (vec!["recount"], env.to_vec(), "--post"),
        (vec!["audit"], env.to_vec(), "--post"),
        (vec!["audit", "--post", "p1"], vec![], "LIKES_TABLE_NAME"),
        (
            vec!["backfill", "--segments", "0"],
            env.to_vec(),
            "--segments",
        ),
        (vec!["frobnicate"], env.to_vec(), "frobnicate"),
    ];
    for (args, env, names) in cases {
        let (code, stderr) = admin(&args, &env);
        assert_eq!(code, 2, "{args:?}: exit {code}, stderr: {stderr}");
        assert!(
            stderr.contains(names),
            "{args:?}: the message does not name {names:?}: {stderr}"
        );
    }
    let after = (
        snapshot(&client, &likes).await,
        snapshot(&client, &counts).await,
    );
    assert_eq!(before, after, "bad input changed a table");

    // A dry run counts and changes nothing.
    let out = Command::new(env!("CARGO_BIN_EXE_likes-admin"))
        .args(["--json", "erase-post", "--post", "p1", "--dry-run"])
        .env("LIKES_DYNAMODB_ENDPOINT", endpoint())
        .envs(env)
        .output()
        .expect("likes-admin runs");
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    let doc: serde_json::Value = serde_json::from_slice(&out.stdout).expect("a JSON report");
    assert_eq!(
        (doc["would_delete"].as_i64(), &doc["dry_run"]),
        (Some(2), &serde_json::json!(true))
    );
    let after = (
        snapshot(&client, &likes).await,
        snapshot(&client, &counts).await,
    );
    assert_eq!(before, after, "a dry run changed a table");
}

/// What operators expect of a command line tool: a version, and errors as JSON under --json,
/// readable when DynamoDB cannot be reached.
#[test]
fn version_json_errors_and_an_unreachable_endpoint() {
    let out = Command::new(env!("CARGO_BIN_EXE_likes-admin"))
        .arg("--version")
        .output()
        .expect("likes-admin runs");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("likes-admin "));

    let (code, stderr) = admin(&["--json", "recount", "--post", "a/b"], &[]);
    assert_eq!(code, 2, "{stderr}");
    let err: serde_json::Value = serde_json::from_str(stderr.trim()).expect("a JSON error");
    assert_eq!(err["error"]["code"], "usage", "{err}");
    assert!(err["error"]["message"]
        .as_str()
        .is_some_and(|m| m.contains("--post must be")));

    // Nothing listens on this port: a sentence, not the SDK's dump, and exit status 3.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let dead = format!("http://127.0.0.1:{port}");
    let env = [
        ("LIKES_TABLE_NAME", "likes"),
        ("COUNTS_TABLE_NAME", "counts"),
        ("LIKES_DYNAMODB_ENDPOINT", dead.as_str()),
    ];
    let (code, stderr) = admin(&["audit", "--post", "p1"], &env);
    assert_eq!(code, 3, "{stderr}");
    assert!(stderr.contains("could not be reached"), "{stderr}");
    assert!(
        stderr.lines().count() <= 2,
        "a dump, not a sentence: {stderr}"
    );
}
