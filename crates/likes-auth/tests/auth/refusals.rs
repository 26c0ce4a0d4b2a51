//! Every rule of the verifier, against a loopback JWKS serving an RS256 and an ES256 key: the
//! tokens it must refuse (each asserting the one refusal its rule gives, so the test fails if
//! that rule is removed), and beside each the nearest token it must accept.

use crate::common;

use common::{claims, claims_with, keys, now, verifier_for, AUDIENCE, ISSUER, SUB};
use jsonwebtoken::{Algorithm, Header};
use likes_auth::testing::{self, JwksServer};
use likes_auth::{AuthError, Verifier};
use serde_json::{json, Value};

async fn issuer() -> (JwksServer, Verifier) {
    let server = JwksServer::start(common::issuer_jwks())
        .await
        .expect("loopback JWKS server");
    let verifier = verifier_for(&server.url());
    (server, verifier)
}

/// Signed with the issuer's RSA key.
fn rsa(claims: &Value) -> String {
    keys().rsa.sign(claims)
}

#[tokio::test]
async fn accepts_rs256_and_es256_tokens_of_the_issuer_with_one_fetch() {
    let (server, v) = issuer().await;
    for key in [&keys().rsa, &keys().ec] {
        let verified = v.verify(&key.sign(&claims())).await.expect("valid token");
        assert_eq!(verified.sub, SUB);
        assert_eq!(verified.claims["iss"], ISSUER);
        assert_eq!(verified.claims["sub"], SUB);
    }
    let header = format!("Bearer {}", keys().ec.sign(&claims()));
    assert_eq!(
        v.verify_authorization(Some(&header)).await.unwrap().sub,
        SUB
    );
    assert_eq!(server.hits(), 1, "one fetch serves every later request");
}

#[tokio::test]
async fn alg_none_is_refused_before_any_key_is_fetched() {
    let (server, v) = issuer().await;
    let token = testing::unsigned(&keys().rsa.kid, &claims());
    assert_eq!(v.verify(&token).await, Err(AuthError::UnsupportedAlgorithm));
    // "None", "NONE": still no.
    let b64 = |s: &str| {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(s)
    };
    for alg in ["None", "NONE", "", "rs256"] {
        let header = json!({"alg": alg, "kid": keys().rsa.kid}).to_string();
        let token = format!("{}.{}.", b64(&header), b64(&claims().to_string()));
        assert_eq!(
            v.verify(&token).await,
            Err(AuthError::UnsupportedAlgorithm),
            "{alg:?}"
        );
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn hs256_keyed_with_the_issuers_public_key_is_refused() {
    let (server, v) = issuer().await;
    let rsa = &keys().rsa;
    // The key-confusion forgery: anyone can read the public key, and a verifier that let the
    // token pick HMAC would take the public key as the shared secret.
    let jwk = rsa.jwk().to_string();
    for secret in [rsa.public_pem().as_bytes(), jwk.as_bytes()] {
        let forged = testing::token(Algorithm::HS256, &rsa.kid, secret, &claims());
        assert_eq!(
            v.verify(&forged).await,
            Err(AuthError::UnsupportedAlgorithm)
        );
    }
    assert_eq!(server.hits(), 0, "refused before the key lookup");
}

#[tokio::test]
async fn every_other_algorithm_is_refused() {
    let (server, v) = issuer().await;
    let rsa = &keys().rsa;
    for alg in [Algorithm::HS384, Algorithm::HS512] {
        let forged = testing::token(alg, &rsa.kid, b"secret", &claims());
        assert_eq!(
            v.verify(&forged).await,
            Err(AuthError::UnsupportedAlgorithm),
            "{alg:?}"
        );
    }
    // The issuer's own RSA key, but RS384/RS512/PS256: not what API Gateway accepts either.
    for alg in [Algorithm::RS384, Algorithm::RS512, Algorithm::PS256] {
        let mut header = Header::new(alg);
        header.kid = Some(rsa.kid.clone());
        let token = rsa.sign_with(&header, &claims());
        assert_eq!(
            v.verify(&token).await,
            Err(AuthError::UnsupportedAlgorithm),
            "{alg:?}"
        );
    }
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn a_token_without_kid_or_with_critical_extensions_is_refused() {
    let (server, v) = issuer().await;
    let no_kid = keys()
        .rsa
        .sign_with(&Header::new(Algorithm::RS256), &claims());
    assert_eq!(v.verify(&no_kid).await, Err(AuthError::MissingKeyId));
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(keys().rsa.kid.clone());
    header.crit = Some(vec!["exp".into()]);
    let crit = keys().rsa.sign_with(&header, &claims());
    assert_eq!(v.verify(&crit).await, Err(AuthError::CriticalHeader));
    assert_eq!(server.hits(), 0);
}

#[tokio::test]
async fn the_kid_must_be_published_and_its_key_type_must_match_the_algorithm() {
    let (_server, v) = issuer().await;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("not-published".into());
    let unknown = keys().rsa.sign_with(&header, &claims());
    assert_eq!(v.verify(&unknown).await, Err(AuthError::UnknownKey));
    // ES256 naming the RSA key's kid (signed with the EC key: the signature is "right").
    let mut header = Header::new(Algorithm::ES256);
    header.kid = Some(keys().rsa.kid.clone());
    let crossed = keys().ec.sign_with(&header, &claims());
    assert_eq!(v.verify(&crossed).await, Err(AuthError::KeyMismatch));
}

#[tokio::test]
async fn a_signature_by_another_key_or_over_other_claims_is_refused() {
    let (_server, v) = issuer().await;
    // Same kid, the forger's key.
    let forged = keys().forger.sign(&claims());
    assert_eq!(v.verify(&forged).await, Err(AuthError::BadSignature));
    // A real token with its claims swapped for another user's.
    let real = rsa(&claims());
    let other = rsa(&claims_with("sub", json!("someone-else")));
    let parts: Vec<&str> = real.split('.').collect();
    let other_payload = other.split('.').nth(1).unwrap();
    let spliced = format!("{}.{}.{}", parts[0], other_payload, parts[2]);
    assert_eq!(v.verify(&spliced).await, Err(AuthError::BadSignature));
    let es = keys().ec.sign(&claims());
    let es_parts: Vec<&str> = es.split('.').collect();
    let es_spliced = format!("{}.{}.{}", es_parts[0], other_payload, es_parts[2]);
    assert_eq!(v.verify(&es_spliced).await, Err(AuthError::BadSignature));
}

#[tokio::test]
async fn exp_is_required_and_allows_sixty_seconds_of_skew() {
    let (_server, v) = issuer().await;
    let expired = rsa(&claims_with("exp", json!(now() - 61)));
    assert_eq!(v.verify(&expired).await, Err(AuthError::Expired));
    let within = rsa(&claims_with("exp", json!(now() - 59)));
    assert!(
        v.verify(&within).await.is_ok(),
        "59 s past exp is within the leeway"
    );
    let none = rsa(&claims_with("exp", Value::Null));
    assert_eq!(v.verify(&none).await, Err(AuthError::MissingClaim("exp")));
}

#[tokio::test]
async fn nbf_and_iat_in_the_future_beyond_sixty_seconds_are_refused() {
    let (_server, v) = issuer().await;
    // 62, not 61: the clock may tick between signing and checking.
    let early = rsa(&claims_with("nbf", json!(now() + 62)));
    assert_eq!(v.verify(&early).await, Err(AuthError::NotYetValid));
    let near = rsa(&claims_with("nbf", json!(now() + 58)));
    assert!(v.verify(&near).await.is_ok());
    let issued_later = rsa(&claims_with("iat", json!(now() + 62)));
    assert_eq!(
        v.verify(&issued_later).await,
        Err(AuthError::IssuedInFuture)
    );
    let issued_near = rsa(&claims_with("iat", json!(now() + 58)));
    assert!(v.verify(&issued_near).await.is_ok());
    let bad = rsa(&claims_with("iat", json!("yesterday")));
    assert_eq!(v.verify(&bad).await, Err(AuthError::InvalidClaim("iat")));
}

#[tokio::test]
async fn the_issuer_must_match_exactly() {
    let (_server, v) = issuer().await;
    for iss in ["https://evil.example/", "https://issuer.example"] {
        let token = rsa(&claims_with("iss", json!(iss)));
        let refused = v.verify(&token).await.unwrap_err();
        assert_eq!(refused, AuthError::WrongIssuer, "{iss}");
        assert!(
            !refused.to_string().contains("evil"),
            "no echo of the token's claims"
        );
    }
    let listed = rsa(&claims_with("iss", json!([ISSUER])));
    assert_eq!(v.verify(&listed).await, Err(AuthError::InvalidClaim("iss")));
    let missing = rsa(&claims_with("iss", Value::Null));
    assert_eq!(
        v.verify(&missing).await,
        Err(AuthError::MissingClaim("iss"))
    );
}

#[tokio::test]
async fn the_audience_must_be_ours_in_aud_or_else_client_id() {
    let (_server, v) = issuer().await;
    let other = rsa(&claims_with("aud", json!("another-api")));
    assert_eq!(v.verify(&other).await, Err(AuthError::WrongAudience));
    let listed = rsa(&claims_with("aud", json!(["another-api", AUDIENCE])));
    assert!(
        v.verify(&listed).await.is_ok(),
        "aud as a list containing ours"
    );
    let not_listed = rsa(&claims_with("aud", json!(["another-api"])));
    assert_eq!(v.verify(&not_listed).await, Err(AuthError::WrongAudience));

    // Cognito access tokens: no aud, client_id.
    let mut cognito = claims_with("aud", Value::Null);
    cognito["client_id"] = json!(AUDIENCE);
    assert!(
        v.verify(&rsa(&cognito)).await.is_ok(),
        "client_id without aud"
    );
    cognito["client_id"] = json!("another-client");
    assert_eq!(
        v.verify(&rsa(&cognito)).await,
        Err(AuthError::WrongAudience)
    );
    // With both, aud decides (as API Gateway): our client_id does not rescue another aud.
    let mut both = claims_with("aud", json!("another-api"));
    both["client_id"] = json!(AUDIENCE);
    assert_eq!(v.verify(&rsa(&both)).await, Err(AuthError::WrongAudience));
    let neither = rsa(&claims_with("aud", Value::Null));
    assert_eq!(
        v.verify(&neither).await,
        Err(AuthError::MissingClaim("aud"))
    );
}

#[tokio::test]
async fn sub_is_required() {
    let (_server, v) = issuer().await;
    let missing = rsa(&claims_with("sub", Value::Null));
    assert_eq!(
        v.verify(&missing).await,
        Err(AuthError::MissingClaim("sub"))
    );
    for bad in [json!(7), json!("")] {
        let token = rsa(&claims_with("sub", bad.clone()));
        assert_eq!(
            v.verify(&token).await,
            Err(AuthError::InvalidClaim("sub")),
            "{bad}"
        );
    }
}

#[tokio::test]
async fn garbage_is_malformed_and_no_token_is_missing() {
    let (server, v) = issuer().await;
    for garbage in [
        "garbage",
        "a.b.c",
        "a.b",
        "....",
        "eyJhbGciOiJSUzI1NiJ9",
        "ü.ö.ä",
    ] {
        assert_eq!(
            v.verify(garbage).await,
            Err(AuthError::Malformed),
            "{garbage}"
        );
    }
    // A good header over a payload that is not JSON.
    let real = rsa(&claims());
    let parts: Vec<&str> = real.split('.').collect();
    let junk = format!("{}.bm90IGpzb24.{}", parts[0], parts[2]);
    assert!(v.verify(&junk).await.is_err());
    assert_eq!(
        v.verify_authorization(None).await,
        Err(AuthError::MissingToken)
    );
    assert_eq!(
        v.verify_authorization(Some("Basic dTpw")).await,
        Err(AuthError::MissingToken)
    );
    assert!(server.hits() <= 1);
}
