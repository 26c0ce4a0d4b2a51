//! Shared by the verifier's tests: the keys (made once per test binary: RSA generation takes a
//! moment), a verifier configured as the function would be, claims to vary, and a fake key
//! source that counts fetches.
#![allow(dead_code)] // each test binary uses its own part

use std::collections::HashMap;
use std::ffi::OsString;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use likes_auth::config::{AUDIENCE_VAR, ISSUER_VAR, JWKS_URL_VAR, JWKS_VAR};
use likes_auth::testing::{self, TestKey};
use likes_auth::{BoxFuture, Config, FetchError, JwksSource, Verifier};
use serde_json::Value;

/// Auth0-style, with the trailing slash that `iss` carries verbatim.
pub const ISSUER: &str = "https://issuer.example/";
pub const AUDIENCE: &str = "likes-api";
pub const SUB: &str = "user-7";

pub struct Keys {
    pub rsa: TestKey,
    pub ec: TestKey,
    /// The rotation's next key.
    pub rsa_next: TestKey,
    /// Not the issuer's: a forger's key.
    pub forger: TestKey,
}

pub fn keys() -> &'static Keys {
    static KEYS: OnceLock<Keys> = OnceLock::new();
    KEYS.get_or_init(|| Keys {
        rsa: TestKey::rs256("rsa-1"),
        ec: TestKey::es256("ec-1"),
        rsa_next: TestKey::rs256("rsa-2"),
        forger: TestKey::rs256("rsa-1"),
    })
}

/// The issuer's set: the RSA and the EC key.
pub fn issuer_jwks() -> String {
    testing::jwks(&[&keys().rsa, &keys().ec])
}

// The key cache's intervals, stated here rather than taken from the crate, so a changed
// constant fails the tests instead of moving them along.
pub const REFRESH_FLOOR: Duration = Duration::from_secs(2);
pub const REFRESH_JITTER: Duration = Duration::from_secs(1);
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(5);
pub const MAX_AGE: Duration = Duration::from_secs(300);
/// A refresh is surely due this long after the last fetch began.
pub const REFRESH_DUE: Duration = REFRESH_FLOOR.saturating_add(REFRESH_JITTER);
pub const RETRY_DUE: Duration = RETRY_AFTER_FAILURE.saturating_add(REFRESH_JITTER);

/// A configuration read from `vars` as the function reads its environment.
pub fn config(vars: &[(&str, &str)]) -> Config {
    let vars: HashMap<String, String> = vars
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    Config::from_lookup(|name| vars.get(name).map(OsString::from)).expect("test configuration")
}

/// Configured as the function is: issuer, audience and the JWKS URL from the environment.
pub fn verifier_for(url: &str) -> Verifier {
    Verifier::new(config(&[
        (ISSUER_VAR, ISSUER),
        (AUDIENCE_VAR, AUDIENCE),
        (JWKS_URL_VAR, url),
    ]))
}

/// With the key set inline (`LIKES_JWKS`) and a URL as well, which must then go unused.
pub fn inline_verifier(jwks: &str, url: &str) -> Verifier {
    Verifier::new(config(&[
        (ISSUER_VAR, ISSUER),
        (AUDIENCE_VAR, AUDIENCE),
        (JWKS_URL_VAR, url),
        (JWKS_VAR, jwks),
    ]))
}

/// Claims the verifier accepts.
pub fn claims() -> Value {
    testing::claims(ISSUER, AUDIENCE, SUB)
}

/// `claims()` with `name` set to `value` (or removed, for `Value::Null`).
pub fn claims_with(name: &str, value: Value) -> Value {
    let mut c = claims();
    if let Some(map) = c.as_object_mut() {
        if value.is_null() {
            map.remove(name);
        } else {
            map.insert(name.to_owned(), value);
        }
    }
    c
}

pub fn now() -> u64 {
    jsonwebtoken::get_current_timestamp()
}

/// A key source in memory that counts fetches and can be made to fail.
#[derive(Clone)]
pub struct Fake {
    fetches: Arc<AtomicUsize>,
    answer: Arc<Mutex<Result<String, FetchError>>>,
    /// How long a fetch takes (on the test's clock, paused or not).
    delay: Duration,
}

impl Fake {
    pub fn serving(jwks: String) -> Self {
        Self {
            fetches: Arc::default(),
            answer: Arc::new(Mutex::new(Ok(jwks))),
            delay: Duration::ZERO,
        }
    }

    pub fn slow(mut self, delay: Duration) -> Self {
        self.delay = delay;
        self
    }

    pub fn serve(&self, answer: Result<String, FetchError>) {
        *self.answer.lock().unwrap() = answer;
    }

    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}

impl JwksSource for Fake {
    fn fetch(&self) -> BoxFuture<'_, Result<Vec<u8>, FetchError>> {
        Box::pin(async move {
            self.fetches.fetch_add(1, Ordering::SeqCst);
            if !self.delay.is_zero() {
                tokio::time::sleep(self.delay).await;
            }
            self.answer.lock().unwrap().clone().map(String::into_bytes)
        })
    }
}
