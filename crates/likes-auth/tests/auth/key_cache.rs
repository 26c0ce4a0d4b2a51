//! The key set's life in one execution environment: fetched once and shared, refreshed for a
//! rotation within 3 s, at most 30 times a minute for a flood of unknown kids, refreshed when 5
//! minutes old, kept when a refresh fails; an unreachable issuer is `Unavailable` (503), not the token's fault;
//! inline keys are never fetched. Paused tokio clocks stand in for minutes.

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::{
    claims, inline_verifier, issuer_jwks, keys, verifier_for, Fake, AUDIENCE, ISSUER, MAX_AGE,
    REFRESH_DUE, REFRESH_FLOOR, REFRESH_JITTER, RETRY_AFTER_FAILURE, RETRY_DUE,
};
use http::StatusCode;
use jsonwebtoken::{Algorithm, Header};
use likes_auth::testing::{self, pass, JwksServer};
use likes_auth::{AuthError, FetchError, Verifier};
use tokio::time;

fn with_kid(kid: &str) -> String {
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some(kid.into());
    keys().rsa.sign_with(&header, &claims())
}

#[tokio::test]
async fn a_rotated_key_is_fetched_once_and_a_withdrawn_one_refused() {
    let k = keys();
    let server = JwksServer::start(testing::jwks(&[&k.rsa])).await.unwrap();
    let v = verifier_for(&server.url());
    v.verify(&k.rsa.sign(&claims()))
        .await
        .expect("the current key");
    assert_eq!(server.hits(), 1);

    // The issuer publishes the next key and withdraws the old one; a token with the new kid
    // arrives at once: the set was fetched a moment ago, so no refresh yet.
    server.serve(testing::jwks(&[&k.rsa_next]));
    let next = k.rsa_next.sign(&claims());
    assert_eq!(v.verify(&next).await, Err(AuthError::UnknownKey));
    assert_eq!(server.hits(), 1, "a refresh within the floor is not due");

    pass(REFRESH_DUE).await;
    assert_eq!(
        v.verify(&next).await.expect("after one refresh").sub,
        common::SUB
    );
    assert_eq!(server.hits(), 2);
    // The old kid is gone from the set, and a refresh for it is not due: refused, no fetch.
    assert_eq!(
        v.verify(&k.rsa.sign(&claims())).await,
        Err(AuthError::UnknownKey)
    );
    assert_eq!(v.verify(&next).await.map(|v| v.sub), Ok(common::SUB.into()));
    assert_eq!(server.hits(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_flood_of_unknown_kids_costs_at_most_one_fetch_per_floor() {
    let fake = Fake::serving(issuer_jwks());
    let v = Verifier::with_source(ISSUER, AUDIENCE, fake.clone());
    v.verify(&keys().rsa.sign(&claims())).await.unwrap();
    assert_eq!(fake.fetches(), 1);
    time::advance(REFRESH_FLOOR - Duration::from_millis(1)).await;
    for i in 0..20 {
        let made_up = with_kid(&format!("made-up-{i}"));
        assert_eq!(v.verify(&made_up).await, Err(AuthError::UnknownKey));
    }
    assert_eq!(fake.fetches(), 1, "within the floor: no fetch");

    // A minute of forged kids, ten a second: each fetch is at least the floor after the one
    // before, and at most the floor and the jitter.
    for i in 0..600 {
        let made_up = with_kid(&format!("flood-{i}"));
        assert_eq!(v.verify(&made_up).await, Err(AuthError::UnknownKey));
        time::advance(Duration::from_millis(100)).await;
    }
    let fetched = fake.fetches() - 1;
    let most = (60_000 / REFRESH_FLOOR.as_millis()) as usize;
    let fewest = (60_000 / REFRESH_DUE.as_millis()) as usize - 1;
    assert!(
        (fewest..=most).contains(&fetched),
        "{fetched} fetches in a minute: between {fewest} and {most} expected"
    );
    // Known keys never wait on or cause a fetch.
    let before = fake.fetches();
    v.verify(&keys().ec.sign(&claims())).await.unwrap();
    assert_eq!(fake.fetches(), before);
}

#[tokio::test(start_paused = true)]
async fn concurrent_first_requests_share_one_fetch() {
    let fake = Fake::serving(issuer_jwks()).slow(Duration::from_millis(50));
    let v = Arc::new(Verifier::with_source(ISSUER, AUDIENCE, fake.clone()));
    let mut tasks = tokio::task::JoinSet::new();
    for i in 0..20 {
        let v = v.clone();
        let token = if i % 2 == 0 { &keys().rsa } else { &keys().ec }.sign(&claims());
        tasks.spawn(async move { v.verify(&token).await.map(|v| v.sub) });
    }
    while let Some(result) = tasks.join_next().await {
        assert_eq!(result.unwrap(), Ok(common::SUB.into()));
    }
    assert_eq!(fake.fetches(), 1);
}

#[tokio::test(start_paused = true)]
async fn a_prefetch_at_start_up_is_the_only_fetch() {
    let fake = Fake::serving(issuer_jwks());
    let v = Verifier::with_source(ISSUER, AUDIENCE, fake.clone());
    v.prefetch().await.expect("prefetch");
    v.prefetch().await.expect("a second prefetch is a no-op");
    assert_eq!(fake.fetches(), 1);
    v.verify(&keys().rsa.sign(&claims())).await.unwrap();
    v.verify(&keys().ec.sign(&claims())).await.unwrap();
    assert_eq!(fake.fetches(), 1);

    let down = Fake::serving(String::new());
    down.serve(Err(FetchError::Status(503)));
    let v = Verifier::with_source(ISSUER, AUDIENCE, down.clone());
    assert_eq!(
        v.prefetch().await,
        Err(AuthError::Unavailable(FetchError::Status(503)))
    );
}

#[tokio::test(start_paused = true)]
async fn a_set_five_minutes_old_is_refreshed_and_a_withdrawn_key_stops_working() {
    let fake = Fake::serving(issuer_jwks());
    let v = Verifier::with_source(ISSUER, AUDIENCE, fake.clone());
    let rsa = keys().rsa.sign(&claims());
    v.verify(&rsa).await.unwrap();
    fake.serve(Ok(testing::jwks(&[&keys().ec])));
    time::advance(MAX_AGE - Duration::from_secs(1)).await;
    v.verify(&rsa).await.expect("still the cached set");
    assert_eq!(fake.fetches(), 1);
    time::advance(Duration::from_secs(1)).await;
    assert_eq!(v.verify(&rsa).await, Err(AuthError::UnknownKey));
    assert_eq!(fake.fetches(), 2);
}

#[tokio::test(start_paused = true)]
async fn a_failed_refresh_keeps_the_set_it_had() {
    let fake = Fake::serving(issuer_jwks());
    let v = Verifier::with_source(ISSUER, AUDIENCE, fake.clone());
    let rsa = keys().rsa.sign(&claims());
    v.verify(&rsa).await.unwrap();
    fake.serve(Err(FetchError::Status(500)));
    // An old set whose refresh fails is still used: better than refusing everyone.
    time::advance(MAX_AGE).await;
    v.verify(&rsa)
        .await
        .expect("the 5-minute-old set, the refresh having failed");
    assert_eq!(fake.fetches(), 2);
    // A kid that needed the failed refresh is the server's problem, not the token's.
    time::advance(RETRY_DUE).await;
    let refused = v.verify(&with_kid("new")).await.unwrap_err();
    assert!(refused.is_unavailable(), "{refused:?}");
    assert_eq!(fake.fetches(), 3);
    // Until the next fetch is due, a kid the set lacks stays the server's problem: the key may
    // be published, and the client should retry, not give up.
    let refused = v.verify(&with_kid("newer")).await.unwrap_err();
    assert!(refused.is_unavailable(), "{refused:?}");
    assert_eq!(fake.fetches(), 3);
    v.verify(&rsa).await.expect("known keys unaffected");
}

#[tokio::test(start_paused = true)]
async fn before_any_set_has_loaded_a_failure_is_retried_after_five_seconds() {
    let fake = Fake::serving(String::new());
    fake.serve(Err(FetchError::Timeout(Duration::from_secs(2))));
    let v = Verifier::with_source(ISSUER, AUDIENCE, fake.clone());
    let rsa = keys().rsa.sign(&claims());
    for _ in 0..10 {
        assert_eq!(
            v.verify(&rsa).await,
            Err(AuthError::Unavailable(FetchError::Timeout(
                Duration::from_secs(2)
            )))
        );
    }
    assert_eq!(
        fake.fetches(),
        1,
        "one attempt answers every request for 5 s"
    );
    fake.serve(Ok(issuer_jwks()));
    time::advance(RETRY_AFTER_FAILURE - Duration::from_millis(1)).await;
    assert!(v.verify(&rsa).await.is_err(), "not yet retried");
    assert_eq!(fake.fetches(), 1);
    time::advance(REFRESH_JITTER + Duration::from_millis(1)).await;
    v.verify(&rsa).await.expect("the issuer is back");
    assert_eq!(fake.fetches(), 2);
}

#[tokio::test]
async fn an_unreachable_or_broken_jwks_endpoint_is_unavailable() {
    let rsa = keys().rsa.sign(&claims());
    let server = JwksServer::start(issuer_jwks()).await.unwrap();
    let v = verifier_for(&server.url());

    server.answer(StatusCode::INTERNAL_SERVER_ERROR, "oops".into());
    assert_eq!(
        v.verify(&rsa).await,
        Err(AuthError::Unavailable(FetchError::Status(500)))
    );

    pass(RETRY_DUE).await;
    server.serve("<html>not a key set</html>".into());
    let refused = v.verify(&rsa).await.unwrap_err();
    assert!(
        matches!(refused, AuthError::Unavailable(FetchError::Unreadable(_))),
        "{refused:?}"
    );

    pass(RETRY_DUE).await;
    server.serve(format!(r#"{{"keys":[],"pad":"{}"}}"#, "x".repeat(70_000)));
    let refused = v.verify(&rsa).await.unwrap_err();
    assert!(
        matches!(refused, AuthError::Unavailable(FetchError::TooLarge(_))),
        "{refused:?}"
    );

    let url = server.url();
    server.stop().await;
    pass(RETRY_DUE).await;
    let refused = v.verify(&rsa).await.unwrap_err();
    assert!(
        matches!(refused, AuthError::Unavailable(FetchError::Request(_))),
        "{refused:?}"
    );
    // And a fresh verifier pointed at the dead port.
    let refused = verifier_for(&url).verify(&rsa).await.unwrap_err();
    assert!(refused.is_unavailable(), "{refused:?}");
    assert!(
        !refused.to_string().contains("127.0.0.1"),
        "the client sees no internals"
    );
}

#[tokio::test(start_paused = true)]
async fn a_jwks_endpoint_that_never_answers_times_out() {
    let server = JwksServer::start(issuer_jwks()).await.unwrap();
    server.hang();
    let v = verifier_for(&server.url());
    let started = time::Instant::now();
    let refused = v.verify(&keys().rsa.sign(&claims())).await.unwrap_err();
    assert_eq!(
        refused,
        AuthError::Unavailable(FetchError::Timeout(likes_auth::fetch::FETCH_TIMEOUT))
    );
    assert_eq!(started.elapsed(), likes_auth::fetch::FETCH_TIMEOUT);
}

#[tokio::test]
async fn inline_keys_are_never_fetched() {
    let server = JwksServer::start(issuer_jwks()).await.unwrap();
    let v = inline_verifier(&issuer_jwks(), &server.url());
    for key in [&keys().rsa, &keys().ec] {
        v.verify(&key.sign(&claims())).await.expect("inline key");
    }
    assert_eq!(
        v.verify(&with_kid("unknown")).await,
        Err(AuthError::UnknownKey)
    );
    pass(MAX_AGE + RETRY_DUE).await;
    assert_eq!(
        v.verify(&with_kid("unknown")).await,
        Err(AuthError::UnknownKey)
    );
    v.verify(&keys().rsa.sign(&claims())).await.expect("still");
    assert_eq!(server.hits(), 0);
}
