//! `make dev` against a real OpenID provider (`likes_harness::oidc`): with `LIKES_AUTH=jwt` and
//! only the issuer and the audience, nothing plays the authorizer and the API verifies the
//! provider's tokens itself, keys found by discovery, as the lean profile does on Lambda. The
//! local authorizer's own dev tokens are then nobody's. A setting that cannot work stops it at
//! start, naming the setting.

use std::process::Command;

use likes_harness::oidc::{Alg, OidcProvider, AUDIENCE};
use serde_json::json;

use crate::common::{http, token, Options, Stack};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn make_dev_verifies_a_real_providers_tokens_itself() {
    let p = OidcProvider::start().await;
    let opts = Options {
        env: vec![
            ("LIKES_AUTH", "jwt".into()),
            ("LIKES_JWT_ISSUER", p.issuer().into()),
            ("LIKES_JWT_AUDIENCE", AUDIENCE.into()),
        ],
        ..Default::default()
    };
    let stack = tokio::task::spawn_blocking(move || Stack::start(&opts))
        .await
        .expect("the stack starts");
    let alice = p.access_token("alice", Alg::Es256).await;
    let port = stack.port;
    let like = format!("/posts/{}/like", uuid::Uuid::new_v4());
    let dev_token = token("mallory");
    let answers = tokio::task::spawn_blocking(move || {
        [
            http(port, "PUT", &like, Some(&alice)),
            http(port, "GET", &like, Some(&alice)),
            http(port, "PUT", &like, Some(&dev_token)),
            http(port, "PUT", &like, None),
        ]
        .map(|a| a.expect("the stack answers"))
    })
    .await
    .expect("requests");
    let [(put, put_body), (get, get_body), (dev, dev_body), (none, _)] = answers;
    assert_eq!(
        (put, &put_body["user_id"]),
        (200, &json!("alice")),
        "{put_body}"
    );
    assert_eq!((get, &get_body["liked"]), (200, &json!(true)), "{get_body}");
    assert_eq!(
        dev, 401,
        "a local dev token is not the provider's: {dev_body}"
    );
    assert_eq!(none, 401);
}

#[test]
fn a_setting_that_cannot_work_stops_it_at_start() {
    let dead = format!("http://127.0.0.1:{}", crate::common::free_port());
    for (env, named) in [
        (vec![("LIKES_AUTH", "jwt")], "LIKES_JWT_ISSUER"),
        (
            vec![
                ("LIKES_AUTH", "jwt"),
                ("LIKES_JWT_ISSUER", dead.as_str()),
                ("LIKES_JWT_AUDIENCE", "a"),
            ],
            "keys",
        ),
        (vec![("LIKES_AUTH", "jwks")], "LIKES_AUTH"),
    ] {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_likes-local"));
        cmd.env_remove("LIKES_JWT_ISSUER")
            .env_remove("LIKES_JWT_AUDIENCE")
            .env("LIKES_PORT", crate::common::free_port().to_string())
            .env("LIKES_DEMO_PORT", crate::common::free_port().to_string())
            .env("LIKES_DYNAMODB_ENDPOINT", "http://127.0.0.1:9")
            .env("NO_COLOR", "1");
        for (k, v) in &env {
            cmd.env(k, v);
        }
        let out = cmd.output().expect("likes-local runs");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success(), "{env:?}: it started");
        assert!(stderr.contains(named), "{env:?}: {stderr}");
    }
}
