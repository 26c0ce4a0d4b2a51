//! The lean profile against a real OpenID provider (node-oidc-provider, `likes_harness::oidc`):
//! configured as the template configures it — the issuer and the audience, nothing else — the
//! real binary finds the keys by discovery, accepts the provider's RS256 and ES256 access
//! tokens from its token endpoint, accepts a key the provider rotated to within seconds,
//! refuses a withdrawn one within 5 minutes, and with `at+jwt` refuses the provider's ID tokens.

use std::time::{Duration, Instant};

use fake_runtime::{FakeRuntime, Function};
use likes_auth::config::{AUDIENCE_VAR, ISSUER_VAR};
use likes_auth::testing::pass;
use likes_auth::{AuthError, Config, Verifier};
use likes_harness::oidc::{kid, Alg, OidcProvider, AUDIENCE, DISCOVERY_PATH, JWKS_PATH};
use likes_harness::Tables;
use serde_json::json;

use crate::function_url::{bearer, binary, invoke, url_event};

/// The template's lean profile: `LIKES_AUTH=jwt`, the issuer, the first audience; no JWKS URL.
fn env(t: &Tables, issuer: &str, extra: &[(&'static str, &str)]) -> Vec<(&'static str, String)> {
    let mut env = t.lambda_env(likes_harness::lab::roles::API);
    env.extend([
        ("LIKES_AUTH", "jwt".to_owned()),
        ("LIKES_JWT_ISSUER", issuer.to_owned()),
        ("LIKES_JWT_AUDIENCE", AUDIENCE.to_owned()),
        ("LIKES_CALLER_LIMITS", "off".to_owned()),
    ]);
    env.extend(extra.iter().map(|(k, v)| (*k, (*v).to_owned())));
    env
}

/// Generous against a loaded machine; the rule is 3 s and a fetch (key_cache tests hold the
/// exact bound on a paused clock). A 60 s floor, as before, fails it.
const ROTATION_DEADLINE: Duration = Duration::from_secs(10);

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_real_providers_tokens_are_accepted_with_the_issuer_alone_and_its_rotation_within_seconds(
) {
    let p = OidcProvider::start().await;
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env(&t, p.issuer(), &[])).expect("the binary starts");
    let like = format!("/posts/{}/like", uuid::Uuid::new_v4());

    for (user, alg) in [("alice", Alg::Rs256), ("bob", Alg::Es256)] {
        let token = p.access_token(user, alg).await;
        let (status, body, _) =
            invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&token)))).await;
        assert_eq!((status, &body["user_id"]), (200, &json!(user)), "{body}");
    }
    assert_eq!(
        (p.hits(DISCOVERY_PATH).await, p.hits(JWKS_PATH).await),
        (1, 1),
        "one discovery and one key fetch, at init"
    );

    // The provider rotates and signs with the new key at once.
    let kids = p.rotate().await;
    let carol = p.access_token("carol", Alg::Rs256).await;
    assert_eq!(kid(&carol), kids[0], "signed with the newest key");
    let rotated = Instant::now();
    let mut refusals = 0;
    loop {
        let (status, body, _) =
            invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&carol)))).await;
        if status == 200 {
            assert_eq!(body["user_id"], "carol", "{body}");
            break;
        }
        assert_eq!(
            status, 401,
            "refused as the token's, never the server's: {body}"
        );
        refusals += 1;
        assert!(
            rotated.elapsed() < ROTATION_DEADLINE,
            "the rotated key was still refused after {ROTATION_DEADLINE:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "a token signed with the key rotated to was accepted {:?} after the rotation ({refusals} refusals before)",
        rotated.elapsed()
    );
    assert_eq!(
        (p.hits(DISCOVERY_PATH).await, p.hits(JWKS_PATH).await),
        (1, 2),
        "one more key fetch for the rotation, whatever the refusals; the jwks_uri was kept"
    );
    let likers = t.like_pairs().await.len();
    assert_eq!(likers, 3, "alice, bob and carol");
}

/// The verifier the binary builds, in process, so that five minutes can pass on tokio's clock.
#[tokio::test]
async fn a_key_the_real_provider_withdrew_is_refused_within_five_minutes() {
    let p = OidcProvider::start().await;
    let issuer = p.issuer().to_owned();
    let config = Config::from_lookup(|name| match name {
        ISSUER_VAR => Some(issuer.clone().into()),
        AUDIENCE_VAR => Some(AUDIENCE.into()),
        _ => None,
    })
    .expect("the lean profile's configuration");
    let v = Verifier::new(config);
    let old = p.access_token("alice", Alg::Rs256).await;
    // The set's age counts from its fetch, on tokio's clock, which real time moves too (the
    // provider's key generation takes a while): the passes below are measured from here.
    let loaded = tokio::time::Instant::now();
    v.verify(&old).await.expect("the current key");

    p.rotate().await;
    let kept = p.withdraw().await;
    assert!(!kept.contains(&kid(&old)), "{kept:?}");
    let fetched = p.hits(JWKS_PATH).await;
    // Known to the cached set, and no fetch per request meanwhile.
    for _ in 0..20 {
        v.verify(&old).await.expect("cached for now");
    }
    pass(Duration::from_secs(299).saturating_sub(loaded.elapsed())).await;
    v.verify(&old).await.expect("299 s: cached still");
    assert_eq!(p.hits(JWKS_PATH).await, fetched, "no fetch per request");
    pass(Duration::from_secs(301).saturating_sub(loaded.elapsed())).await;
    assert_eq!(v.verify(&old).await, Err(AuthError::UnknownKey));
    assert_eq!(p.hits(JWKS_PATH).await, fetched + 1);
    let new = p.access_token("alice", Alg::Es256).await;
    v.verify(&new).await.expect("the new key");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_at_jwt_the_providers_id_tokens_are_refused_and_write_nothing() {
    let p = OidcProvider::start().await;
    let t = Tables::new().await;
    let rt = FakeRuntime::start().await.expect("runtime API");
    let strict = env(&t, p.issuer(), &[("LIKES_JWT_TOKEN_TYPE", "at+jwt")]);
    let f = Function::spawn(&binary(), &rt, strict).expect("the binary starts");
    let like = format!("/posts/{}/like", uuid::Uuid::new_v4());

    let id_token = p.id_token("mallory").await;
    let (status, body, _) =
        invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&id_token)))).await;
    assert_eq!(
        (status, &body["error"]["code"]),
        (401, &json!("unauthorized")),
        "{body}"
    );
    let message = body["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("at+jwt"), "{body}");
    let access = p.access_token("alice", Alg::Rs256).await;
    let (status, body, _) = invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&access)))).await;
    assert_eq!((status, &body["user_id"]), (200, &json!("alice")), "{body}");
    let likers: Vec<String> = t.like_pairs().await.into_iter().map(|(_, u)| u).collect();
    assert_eq!(likers, ["alice"], "the ID token wrote nothing");
    drop(f);

    // The default, as API Gateway's authorizer: the same ID token is a caller.
    let rt = FakeRuntime::start().await.expect("runtime API");
    let f = Function::spawn(&binary(), &rt, env(&t, p.issuer(), &[])).expect("the binary starts");
    let (status, body, _) =
        invoke(&rt, &f, url_event("PUT", &like, Some(&bearer(&id_token)))).await;
    assert_eq!(
        (status, &body["user_id"]),
        (200, &json!("mallory")),
        "{body}"
    );
}
