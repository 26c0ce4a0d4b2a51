//! What the in-function JWT check (the FunctionUrl profile) costs: one verification with the
//! key set warm (per request), the first verification of an execution environment against a
//! loopback JWKS (fetch + parse + verify, per cold start when keys are fetched), and loading
//! the system's root certificates (per cold start, before the first https fetch).

use std::time::{Duration, Instant};

use likes_auth::testing::{claims, jwks, JwksServer, TestKey};
use likes_auth::{Config, HttpJwks, KeySet, Verifier};

const ISSUER: &str = "https://issuer.example/";
const AUDIENCE: &str = "likes-api";

pub struct JwtCost {
    pub rs256_us: f64,
    pub es256_us: f64,
    /// Median over rounds, each a fresh verifier: its first token's verification.
    pub first_fetch_ms: f64,
    pub roots_ms: f64,
}

/// Mean µs of one verification of `token`, over `budget`.
async fn verify_rate(v: &Verifier, token: &str, budget: Duration) -> f64 {
    let started = Instant::now();
    let mut n = 0u64;
    while started.elapsed() < budget {
        for _ in 0..100 {
            if v.verify(token).await.is_err() {
                crate::fail("the bench's own token was refused");
            }
        }
        n += 100;
    }
    started.elapsed().as_secs_f64() * 1e6 / n as f64
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[xs.len() / 2]
}

pub async fn measure() -> JwtCost {
    let rsa = TestKey::rs256("rsa-1");
    let ec = TestKey::es256("ec-1");
    let set_json = jwks(&[&rsa, &ec]);
    let set = KeySet::parse(set_json.as_bytes()).unwrap_or_else(|e| crate::fail(&e.to_string()));
    let warm = Verifier::with_key_set(ISSUER, AUDIENCE, set);
    let claims = claims(ISSUER, AUDIENCE, "user-1");
    let (rs_token, es_token) = (rsa.sign(&claims), ec.sign(&claims));
    let rs256_us = verify_rate(&warm, &rs_token, Duration::from_secs(1)).await;
    let es256_us = verify_rate(&warm, &es_token, Duration::from_secs(1)).await;

    let server = JwksServer::start(set_json)
        .await
        .unwrap_or_else(|e| crate::fail(&format!("loopback JWKS server: {e}")));
    let mut firsts = Vec::new();
    for _ in 0..21 {
        let config = Config::from_lookup(|name| match name {
            "LIKES_JWT_ISSUER" => Some(ISSUER.into()),
            "LIKES_JWT_AUDIENCE" => Some(AUDIENCE.into()),
            "LIKES_JWKS_URL" => Some(server.url().into()),
            _ => None,
        })
        .unwrap_or_else(|e| crate::fail(&e.to_string()));
        let cold = Verifier::new(config);
        let started = Instant::now();
        if cold.verify(&rs_token).await.is_err() {
            crate::fail("the first verification against the loopback JWKS failed");
        }
        firsts.push(started.elapsed().as_secs_f64() * 1e3);
    }

    let mut roots = Vec::new();
    for _ in 0..5 {
        let fetcher = HttpJwks::new(http::Uri::from_static("https://issuer.example/jwks"));
        let started = Instant::now();
        if let Err(e) = fetcher.prepare() {
            crate::fail(&format!("loading root certificates: {e}"));
        }
        roots.push(started.elapsed().as_secs_f64() * 1e3);
    }
    JwtCost {
        rs256_us,
        es256_us,
        first_fetch_ms: median(firsts),
        roots_ms: median(roots),
    }
}
