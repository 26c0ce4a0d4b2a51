//! Finding the keys as API Gateway does, from the issuer's OpenID discovery document: its
//! `jwks_uri` at whatever path the provider chose, kept for later fetches, read again when the
//! keys move; a document that names another issuer, or no usable `jwks_uri`, gives no keys.
//! And the token type: with `at+jwt` an ID token is refused, before any fetch.

use jsonwebtoken::{Algorithm, Header};
use likes_auth::config::{AUDIENCE_VAR, ISSUER_VAR, TOKEN_TYPE_VAR};
use likes_auth::discovery::REDISCOVER_AFTER;
use likes_auth::testing::{self, pass, JwksServer};
use likes_auth::{AuthError, FetchError, TokenType, Verifier};

use crate::common::{config, issuer_jwks, keys, Fake, AUDIENCE, ISSUER, REFRESH_DUE, SUB};

/// As the template configures the lean profile: the issuer and the audience, nothing else.
fn discovering(issuer: &str, extra: &[(&str, &str)]) -> Verifier {
    let mut vars = vec![(ISSUER_VAR, issuer), (AUDIENCE_VAR, AUDIENCE)];
    vars.extend_from_slice(extra);
    Verifier::new(config(&vars))
}

fn token_from(issuer: &str, kid_key: &likes_auth::testing::TestKey) -> String {
    kid_key.sign(&testing::claims(issuer, AUDIENCE, SUB))
}

#[tokio::test]
async fn the_keys_are_found_at_the_jwks_uri_the_issuer_publishes() {
    let server = JwksServer::start(issuer_jwks()).await.unwrap();
    let issuer = server.issuer();
    // oidc-provider's path; Keycloak, Google and Entra ID have others, none the fixed one.
    server.discover(&issuer, &format!("{issuer}/jwks"));
    let v = discovering(&issuer, &[]);
    v.prefetch().await.expect("the keys, by discovery");
    assert_eq!((server.discovery_hits(), server.hits()), (1, 1));
    let verified = v.verify(&token_from(&issuer, &keys().rsa)).await;
    assert_eq!(verified.map(|v| v.sub), Ok(SUB.into()));

    // A rotation: the kept jwks_uri is fetched again, discovery is not read again.
    server.serve(testing::jwks(&[&keys().rsa, &keys().rsa_next]));
    pass(REFRESH_DUE).await;
    let next = token_from(&issuer, &keys().rsa_next);
    assert_eq!(v.verify(&next).await.map(|v| v.sub), Ok(SUB.into()));
    assert_eq!((server.discovery_hits(), server.hits()), (1, 2));

    // An hour on, the next refresh reads discovery again first.
    pass(REDISCOVER_AFTER).await;
    v.verify(&next).await.expect("after the refresh");
    assert_eq!((server.discovery_hits(), server.hits()), (2, 3));

    // Another hour, and discovery is down: the keys are fetched where they were, and a key
    // rotated to meanwhile is found there.
    server.answer_discovery(http::StatusCode::SERVICE_UNAVAILABLE, "{}".into());
    server.serve(testing::jwks(&[&keys().rsa_next, &keys().ec]));
    pass(REDISCOVER_AFTER).await;
    let ec = token_from(&issuer, &keys().ec);
    assert_eq!(v.verify(&ec).await.map(|v| v.sub), Ok(SUB.into()));
    assert_eq!((server.discovery_hits(), server.hits()), (3, 4));
}

#[tokio::test]
async fn keys_that_moved_are_found_again_through_discovery() {
    let first = JwksServer::start(issuer_jwks()).await.unwrap();
    let moved = JwksServer::start(testing::jwks(&[&keys().rsa, &keys().rsa_next]))
        .await
        .unwrap();
    let issuer = first.issuer();
    first.discover(&issuer, &first.url());
    let v = discovering(&issuer, &[]);
    v.verify(&token_from(&issuer, &keys().rsa)).await.unwrap();

    // The provider moves its keys: the old URL answers 404, discovery names the new one.
    first.answer(http::StatusCode::NOT_FOUND, "gone".into());
    first.discover(&issuer, &moved.url());
    pass(REFRESH_DUE).await;
    let next = token_from(&issuer, &keys().rsa_next);
    assert_eq!(v.verify(&next).await.map(|v| v.sub), Ok(SUB.into()));
    assert_eq!((first.discovery_hits(), moved.hits()), (2, 1));
}

#[tokio::test]
async fn a_document_that_is_not_the_issuers_gives_no_keys() {
    let server = JwksServer::start(issuer_jwks()).await.unwrap();
    let issuer = server.issuer();
    let jwks = format!("{issuer}/jwks");
    let cases: [(&str, String); 5] = [
        (
            "another issuer",
            serde_json::json!({"issuer": "https://evil.example", "jwks_uri": jwks}).to_string(),
        ),
        (
            "the issuer with a slash more",
            serde_json::json!({"issuer": format!("{issuer}/"), "jwks_uri": jwks}).to_string(),
        ),
        (
            "no jwks_uri",
            serde_json::json!({"issuer": issuer}).to_string(),
        ),
        (
            "keys over plain http from elsewhere",
            serde_json::json!({"issuer": issuer, "jwks_uri": "http://keys.example/jwks"})
                .to_string(),
        ),
        ("not JSON", "<html>".to_owned()),
    ];
    for (case, document) in cases {
        server.answer_discovery(http::StatusCode::OK, document);
        let v = discovering(&issuer, &[]);
        let refused = v
            .verify(&token_from(&issuer, &keys().rsa))
            .await
            .unwrap_err();
        assert!(
            matches!(refused, AuthError::Unavailable(FetchError::Discovery(_))),
            "{case}: {refused:?}"
        );
    }
    assert_eq!(
        server.hits(),
        0,
        "no key was fetched from a doubtful document"
    );

    // No discovery at all: the operator sets LIKES_JWKS_URL (JwksUrl) instead.
    server.answer_discovery(http::StatusCode::NOT_FOUND, "{}".into());
    let refused = discovering(&issuer, &[])
        .verify(&token_from(&issuer, &keys().rsa))
        .await;
    assert_eq!(
        refused,
        Err(AuthError::Unavailable(FetchError::Status(404)))
    );
}

/// A token signed with the issuer's key whose header says `typ`.
fn typed(typ: Option<&str>) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("rsa-1".into());
    header.typ = typ.map(str::to_owned);
    keys().rsa.sign_with(&header, &crate::common::claims())
}

#[tokio::test]
async fn with_at_jwt_only_access_tokens_are_accepted_and_refusals_fetch_nothing() {
    let fake = Fake::serving(issuer_jwks());
    let strict =
        Verifier::with_source(ISSUER, AUDIENCE, fake.clone()).accepting(TokenType::AccessToken);
    for id_token_like in [Some("JWT"), None, Some("dpop+jwt")] {
        assert_eq!(
            strict.verify(&typed(id_token_like)).await,
            Err(AuthError::WrongTokenType),
            "{id_token_like:?}"
        );
    }
    assert_eq!(fake.fetches(), 0, "refused before any key was looked up");
    for access in ["at+jwt", "application/at+jwt"] {
        strict.verify(&typed(Some(access))).await.expect(access);
    }
    // The default accepts every type, as API Gateway does.
    let lenient = Verifier::with_source(ISSUER, AUDIENCE, fake);
    for typ in [Some("JWT"), None, Some("at+jwt")] {
        lenient.verify(&typed(typ)).await.expect("any type");
    }
    let message = AuthError::WrongTokenType.to_string();
    assert!(message.contains("at+jwt"), "{message}");
    // The setting itself.
    let from_env = discovering(ISSUER, &[(TOKEN_TYPE_VAR, "at+jwt")]);
    assert_eq!(
        from_env.verify(&typed(Some("JWT"))).await,
        Err(AuthError::WrongTokenType)
    );
}
