//! The lean profile's front door: a Lambda function URL, which has no authorizer. The real
//! `likes-api` binary, with `LIKES_AUTH=jwt`, is given function URL events (payload 2.0, no
//! authorizer claims, the token in `Authorization`) through a loopback Lambda Runtime API, and
//! verifies the token itself against a loopback JWKS, as API Gateway's authorizer would.
//! Prints the cold start (which includes the JWKS fetch: the binary prefetches it) and the first
//! request's time.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use fake_runtime::{FakeRuntime, Function, Outcome};
use jsonwebtoken::Algorithm;
use likes_auth::testing::{claims, jwks, token, JwksServer, TestKey};
use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::DynamoHomes;
use likes_core::homes::{Home, Homes};
use likes_harness::Tables;
use serde_json::{json, Value};

const ISSUER: &str = "https://issuer.example";
const AUDIENCE: &str = "likes-web";

pub(crate) fn binary() -> PathBuf {
    fake_runtime::binary_under_test("LIKES_LAMBDA_BIN", env!("CARGO_BIN_EXE_likes-api"))
}

/// A function URL event (payload 2.0, as Lambda sends it): no authorizer, the URL's own domain.
pub(crate) fn url_event(method: &str, raw_path: &str, authorization: Option<&str>) -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../events/like.json");
    let mut e: Value =
        serde_json::from_str(&std::fs::read_to_string(path).expect("sample event")).expect("JSON");
    e["rawPath"] = raw_path.into();
    e["routeKey"] = "$default".into();
    let ctx = &mut e["requestContext"];
    ctx["http"]["path"] = raw_path.into();
    ctx["http"]["method"] = method.into();
    ctx["domainName"] = "abcdefghij.lambda-url.us-east-1.on.aws".into();
    ctx["domainPrefix"] = "abcdefghij".into();
    ctx["routeKey"] = "$default".into();
    if let Some(map) = ctx.as_object_mut() {
        map.remove("authorizer");
    }
    let headers = e["headers"].as_object_mut().expect("headers");
    headers.remove("authorization");
    if let Some(a) = authorization {
        headers.insert("authorization".into(), a.into());
    }
    e
}

pub(crate) async fn invoke(rt: &FakeRuntime, f: &Function, event: Value) -> (i64, Value, Value) {
    let id = rt.push(event);
    match rt.outcome(&id, Duration::from_secs(30)).await {
        Some(Outcome::Response(v)) => {
            let status = v["statusCode"].as_i64().expect("statusCode");
            let body: Value = serde_json::from_str(v["body"].as_str().expect("a text body"))
                .expect("a JSON body");
            (status, body, v["headers"].clone())
        }
        other => panic!("no response: {other:?}\n{}", f.lines().join("\n")),
    }
}

fn env(t: &Tables, jwks_url: &str) -> Vec<(&'static str, String)> {
    let mut env = t.lambda_env(likes_harness::lab::roles::API);
    env.extend([
        ("LIKES_AUTH", "jwt".to_owned()),
        ("LIKES_JWT_ISSUER", ISSUER.to_owned()),
        ("LIKES_JWT_AUDIENCE", AUDIENCE.to_owned()),
        ("LIKES_JWKS_URL", jwks_url.to_owned()),
    ]);
    env
}

pub(crate) fn bearer(t: &str) -> String {
    format!("Bearer {t}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_verifies_the_bearer_token_itself_behind_a_function_url() {
    let (rsa, ec) = (TestKey::rs256("rsa-1"), TestKey::es256("ec-1"));
    let server = JwksServer::start(jwks(&[&rsa, &ec]))
        .await
        .expect("JWKS server");
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env(&t, &server.url())).expect("the binary starts");
    let post = uuid::Uuid::new_v4();
    let like = format!("/posts/{post}/like");

    // RS256: the first request also fetches the key set.
    let alice = rsa.sign(&claims(ISSUER, AUDIENCE, "auth0|alice"));
    let started = Instant::now();
    let (status, body, headers) =
        invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&alice)))).await;
    let first = started.elapsed();
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (&body["user_id"], &body["changed"]),
        (&json!("auth0|alice"), &json!(true))
    );
    assert_eq!(headers["cache-control"], "no-store");
    f.report(&rt, &binary());
    println!("first request (the key set was fetched during init): {first:?}");

    // ES256, warm: no second fetch.
    let bob = ec.sign(&claims(ISSUER, AUDIENCE, "auth0|bob"));
    let started = Instant::now();
    let (status, body, _) = invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&bob)))).await;
    println!("a warm request: {:?}", started.elapsed());
    assert_eq!(
        (status, &body["user_id"]),
        (200, &json!("auth0|bob")),
        "{body}"
    );
    assert_eq!(
        server.hits(),
        1,
        "the key set is cached per execution environment"
    );

    // Claims in the event (as an authorizer would pass them) are not an identity here.
    let mut claimed = url_event("PUT", &like, None);
    claimed["requestContext"]["authorizer"] =
        json!({"jwt": {"claims": {"sub": "auth0|mallory"}, "scopes": null}});
    let (status, body, _) = invoke(&rt, &f, claimed).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("unauthorized")),
        "{body}"
    );

    // Refusals: each a 401 with the API's JSON error, and nothing written.
    let mut expired = claims(ISSUER, AUDIENCE, "auth0|carol");
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .expect("a clock")
        .as_secs();
    expired["exp"] = json!(now - 120);
    let stranger = TestKey::rs256("rsa-1");
    let refused = [
        ("no token", None),
        ("garbage", Some(bearer("not.a.jwt"))),
        ("expired", Some(bearer(&rsa.sign(&expired)))),
        (
            "another issuer",
            Some(bearer(&rsa.sign(&claims(
                "https://evil.example",
                AUDIENCE,
                "auth0|carol",
            )))),
        ),
        (
            "another audience",
            Some(bearer(&rsa.sign(&claims(
                ISSUER,
                "other-app",
                "auth0|carol",
            )))),
        ),
        (
            "a key the issuer does not publish",
            Some(bearer(&stranger.sign(&claims(
                ISSUER,
                AUDIENCE,
                "auth0|carol",
            )))),
        ),
        (
            "HS256 keyed with the public key",
            Some(bearer(&token(
                Algorithm::HS256,
                "rsa-1",
                rsa.public_pem().as_bytes(),
                &claims(ISSUER, AUDIENCE, "auth0|carol"),
            ))),
        ),
    ];
    for (what, authorization) in refused {
        let (status, body, _) =
            invoke(&rt, &f, url_event("PUT", &like, authorization.as_deref())).await;
        assert_eq!(status, 401, "{what}: {body}");
        assert_eq!(body["error"]["code"], "unauthorized", "{what}: {body}");
    }
    let likers: Vec<String> = t.like_pairs().await.into_iter().map(|(_, u)| u).collect();
    assert_eq!(likers.len(), 2, "only alice and bob liked: {likers:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn keys_that_cannot_be_fetched_are_a_503_not_a_401() {
    let rsa = TestKey::rs256("rsa-1");
    let server = JwksServer::start(jwks(&[&rsa])).await.expect("JWKS server");
    server.answer(http::StatusCode::INTERNAL_SERVER_ERROR, "down".into());
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env(&t, &server.url())).expect("the binary starts");
    let alice = rsa.sign(&claims(ISSUER, AUDIENCE, "auth0|alice"));
    let like = format!("/posts/{}/like", uuid::Uuid::new_v4());
    let (status, body, headers) =
        invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&alice)))).await;
    assert_eq!(status, 503, "{body}");
    assert_eq!(body["error"]["code"], "unavailable");
    assert!(headers.get("retry-after").is_some(), "{headers}");
    assert!(t.like_pairs().await.is_empty());
}

/// In two regions (`LIKES_HOME_CLAIM`, docs/regions.md): the binary takes the caller's home
/// from the token it verified itself, serves the homes opened in its region's table, and
/// answers any other home, a token without the claim, or a claim that is not a string with
/// `421 wrong_region`, writing nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_serves_its_regions_homes_by_the_token_it_verified() {
    let rsa = TestKey::rs256("rsa-1");
    let server = JwksServer::start(jwks(&[&rsa])).await.expect("JWKS server");
    let t = Tables::new().await;
    let table = format!("erase-requests-{}", uuid::Uuid::new_v4().simple());
    create_table(&t.client, &ERASE_REQUESTS, &table)
        .await
        .expect("the table");
    let eu = Home::parse("eu").expect("a home");
    DynamoHomes::new(t.client.clone(), &table)
        .set(&eu, true)
        .await
        .expect("eu opened");
    let mut env = env(&t, &server.url());
    env.extend([
        ("LIKES_HOME_CLAIM", "custom:home".to_owned()),
        ("ERASE_REQUESTS_TABLE_NAME", table),
    ]);
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
    let like = format!("/posts/{}/like", uuid::Uuid::new_v4());
    let token = |sub: &str, home: Option<Value>| {
        let mut c = claims(ISSUER, AUDIENCE, sub);
        if let Some(home) = home {
            c["custom:home"] = home;
        }
        bearer(&rsa.sign(&c))
    };
    let home_user = token("auth0|eu-user", Some(json!("eu")));
    let (status, body, _) = invoke(&rt, &f, url_event("PUT", &like, Some(&home_user))).await;
    assert_eq!(status, 200, "{body}");
    for (who, home) in [
        ("auth0|us-user", Some(json!("us"))),
        ("auth0|no-home", None),
        ("auth0|numeric-home", Some(json!(7))),
    ] {
        let (status, body, _) =
            invoke(&rt, &f, url_event("PUT", &like, Some(&token(who, home)))).await;
        assert_eq!(
            (status, &body["error"]["code"]),
            (421, &json!("wrong_region")),
            "{who}: {body}"
        );
    }
    let likers: Vec<String> = t.like_pairs().await.into_iter().map(|(_, u)| u).collect();
    assert_eq!(likers, ["auth0|eu-user"], "only the home's user liked");
}

/// Sixty warm requests (likes, reads, unlikes) through the binary, each answered correctly;
/// prints their latency percentiles. `tests/scripts/lambda-memory.sh` runs it with the binary held to
/// a Lambda memory size's CPU share, to choose the API function's memory.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn warm_requests_print_their_latency() {
    let rsa = TestKey::rs256("rsa-1");
    let server = JwksServer::start(jwks(&[&rsa])).await.expect("JWKS server");
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    // One caller, sixty requests as fast as they go: a script, which the per-caller limits
    // would hold back; latency is measured without them.
    let mut env = env(&t, &server.url());
    env.push(("LIKES_CALLER_LIMITS", "off".to_owned()));
    let f = Function::spawn(&binary(), &rt, env).expect("the binary starts");
    let alice = bearer(&rsa.sign(&claims(ISSUER, AUDIENCE, "auth0|alice")));
    let mut took = Vec::new();
    for i in 0..60 {
        let like = format!("/posts/p{}/like", i % 20);
        let method = ["PUT", "GET", "DELETE"][i / 20];
        let started = Instant::now();
        let (status, body, _) = invoke(&rt, &f, url_event(method, &like, Some(&alice))).await;
        took.push(started.elapsed());
        assert_eq!(status, 200, "{method} {like}: {body}");
        assert_eq!(
            body["liked"],
            json!(method != "DELETE"),
            "{method} {like}: {body}"
        );
    }
    took.sort();
    let at = |p: usize| took[(took.len() * p / 100).min(took.len() - 1)];
    println!(
        "warm requests through the runtime API (emulator included): p50 {:?}, p90 {:?}, p99 {:?}, max {:?}",
        at(50),
        at(90),
        at(99),
        took[took.len() - 1]
    );
}
