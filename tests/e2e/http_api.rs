//! End to end, as a user runs it: the `likes-local` binary on a free port with its own emulator,
//! real HTTP, real tokens, the stream poller feeding the aggregator.

use crate::common;

use common::{http, request, token, wait_for_count, Options, Stack, SECRET};
use likes_local::jwt;
use serde_json::Value;

fn start(fail_first_writes: usize) -> Stack {
    Stack::start(&Options {
        fail_first_writes,
        ..Options::default()
    })
}

fn chrono_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

#[test]
fn likes_flow_through_the_stream_into_counts_even_after_a_failed_batch() {
    // The aggregator's first two writes fail: the poller must redeliver from the reported record.
    let stack = start(2);
    let post = uuid::Uuid::new_v4().to_string();
    let users: Vec<String> = (0..3).map(|_| uuid::Uuid::new_v4().to_string()).collect();
    let tokens: Vec<String> = users.iter().map(|u| token(u)).collect();
    for (u, t) in users.iter().zip(&tokens) {
        let (s, b) = http(stack.port, "PUT", &format!("/posts/{post}/like"), Some(t)).unwrap();
        assert_eq!(s, 200, "{b}");
        assert_eq!(b["user_id"], u.as_str());
        assert_eq!(b["changed"], true);
    }
    wait_for_count(&stack, &post, &tokens[0], 3);
    let log = stack.log.lock().unwrap().clone();
    assert!(
        log.contains("FAILED from"),
        "a failed batch was reported:\n{log}"
    );

    let (s, b) = http(
        stack.port,
        "DELETE",
        &format!("/posts/{post}/like"),
        Some(&tokens[1]),
    )
    .unwrap();
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)));
    let took = wait_for_count(&stack, &post, &tokens[0], 2);
    println!("an unlike reached the count in {took:?}");
}

#[test]
fn the_local_authorizer_rejects_bad_tokens_and_a_token_acts_only_as_its_user() {
    let stack = start(0);
    let post = uuid::Uuid::new_v4().to_string();
    let (a, b) = (
        uuid::Uuid::new_v4().to_string(),
        uuid::Uuid::new_v4().to_string(),
    );
    let path = format!("/posts/{post}/like");

    let with = |secret: &str, issuer: &str, audience: &str| jwt::Authorizer {
        secret: secret.into(),
        issuer: issuer.into(),
        audience: audience.into(),
    };
    let local = with(SECRET, jwt::DEFAULT_ISSUER, jwt::DEFAULT_AUDIENCE);
    let forged = with("not-the-secret", jwt::DEFAULT_ISSUER, jwt::DEFAULT_AUDIENCE)
        .issue(&a, 600)
        .unwrap();
    let expired = local.issue(&a, -30).unwrap();
    let wrong_issuer = with(SECRET, "https://elsewhere", jwt::DEFAULT_AUDIENCE)
        .issue(&a, 600)
        .unwrap();
    let wrong_audience = with(SECRET, jwt::DEFAULT_ISSUER, "another-app")
        .issue(&a, 600)
        .unwrap();
    let now = chrono_now();
    let no_iss = jwt::sign(
        SECRET,
        &jwt::Claims {
            sub: Some(a.clone()),
            exp: Some(now + 600),
            iat: None,
            nbf: None,
            iss: None,
            aud: Some(jwt::DEFAULT_AUDIENCE.into()),
            other: Default::default(),
        },
    )
    .unwrap();
    let valid = token(&a);
    let payload = valid.split('.').nth(1).unwrap();
    use base64::Engine as _;
    let none_header =
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(r#"{"alg":"none","typ":"JWT"}"#);
    let alg_none = format!("{none_header}.{payload}.");
    for (name, tok, says) in [
        ("no token", None, "missing bearer token"),
        ("bad signature", Some(forged.as_str()), "signature"),
        ("expired", Some(expired.as_str()), "expired"),
        ("alg none", Some(alg_none.as_str()), ""),
        ("garbage", Some("abc.def.ghi"), ""),
        ("wrong issuer", Some(wrong_issuer.as_str()), "issuer"),
        ("wrong audience", Some(wrong_audience.as_str()), "audience"),
        ("no iss", Some(no_iss.as_str()), "no iss claim"),
    ] {
        let (s, body) = http(stack.port, "PUT", &path, tok).unwrap();
        assert_eq!(s, 401, "{name}: {body}");
        assert_eq!(body["error"]["code"], "unauthorized", "{name}");
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(says), "{name}: {message}");
    }

    // A body that is not text reaches the handler base64-encoded, as API Gateway sends it, and
    // is refused like any body.
    let (s, body) = request(
        stack.port,
        "PUT",
        &path,
        Some(&valid),
        &[],
        &[0xff, 0xfe, 0x00],
    )
    .unwrap();
    assert_eq!(
        (s, body["error"]["code"].as_str()),
        (400, Some("unexpected_body")),
        "{body}"
    );

    // B likes; A's token can only ever act as A.
    let tok_b = token(&b);
    let (s, _) = http(stack.port, "PUT", &path, Some(&tok_b)).unwrap();
    assert_eq!(s, 200);
    let (s, body) = http(stack.port, "DELETE", &path, Some(&valid)).unwrap();
    assert_eq!(s, 200);
    assert_eq!(body["user_id"], a.as_str());
    assert_eq!(body["changed"], false, "A had no like to remove");
    let (_, body) = http(stack.port, "GET", &path, Some(&tok_b)).unwrap();
    assert_eq!(body["liked"], true, "B's like is untouched");
    wait_for_count(&stack, &post, &valid, 1);
}

#[test]
fn identity_provider_subs_and_snowflake_post_ids_work_end_to_end() {
    let stack = start(0);
    let (alice, bob) = (
        "auth0|5f7c8ec7c33c6c004bbafe82",
        "google-oauth2|104763291827364512345",
    );
    let (ta, tb) = (token(alice), token(bob));
    // A snowflake id as is, and one with `:` percent-encoded in the path.
    let (p1, p2) = ("1798765432109876543", "urn:post:1798765432109876544");
    let (e1, e2) = (p1.to_owned(), p2.replace(':', "%3A"));
    for (post, tok) in [(&e1, &ta), (&e1, &tb), (&e2, &ta)] {
        let (s, b) = http(stack.port, "PUT", &format!("/posts/{post}/like"), Some(tok)).unwrap();
        assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)), "{b}");
    }
    let (_, b) = http(stack.port, "GET", &format!("/posts/{e2}/like"), Some(&ta)).unwrap();
    assert_eq!(
        (b["post_id"].as_str(), b["user_id"].as_str()),
        (Some(p2), Some(alice))
    );
    wait_for_count(&stack, &e1, &ta, 2);
    wait_for_count(&stack, &e2, &ta, 1);

    let field = |b: &Value, f: &str| -> Vec<String> {
        let mut v: Vec<String> = b["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|i| i[f].as_str().unwrap().to_owned())
            .collect();
        v.sort();
        v
    };
    let (_, mine) = http(stack.port, "GET", "/users/me/likes", Some(&ta)).unwrap();
    assert_eq!(field(&mine, "post_id"), [p1, p2]);
    let (_, likers) = http(stack.port, "GET", &format!("/posts/{e1}/likes"), Some(&tb)).unwrap();
    assert_eq!(field(&likers, "user_id"), [alice, bob]);
    let summary = format!("/likes/summary?post_ids={e1},{e2}");
    let (s, b) = http(stack.port, "GET", &summary, Some(&tb)).unwrap();
    assert_eq!(s, 200, "{b}");
    let items = b["items"].as_array().unwrap();
    assert_eq!(
        (items[0]["post_id"].as_str(), &items[0]["like_count"]),
        (Some(p1), &Value::from(2))
    );
    assert_eq!(
        (&items[0]["liked_by_me"], &items[1]["liked_by_me"]),
        (&Value::Bool(true), &Value::Bool(false))
    );

    let (s, b) = http(
        stack.port,
        "DELETE",
        &format!("/posts/{e1}/like"),
        Some(&tb),
    )
    .unwrap();
    assert_eq!((s, &b["changed"]), (200, &Value::Bool(true)));
    wait_for_count(&stack, &e1, &ta, 1);
}
