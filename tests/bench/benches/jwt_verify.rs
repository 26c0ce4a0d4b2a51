//! CPU cost of the in-function JWT check (the FunctionUrl profile): one RS256 and one ES256
//! verification with the key set warm (what every request pays; a cold environment's fetch is
//! timed by `make bench`).
//!
//! `cargo bench -p likes-bench --bench jwt_verify`

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion};
use likes_auth::testing::{claims, jwks, TestKey};
use likes_auth::{KeySet, Verifier};

const ISSUER: &str = "https://issuer.example/";
const AUDIENCE: &str = "likes-api";

fn bench(c: &mut Criterion) {
    let rsa = TestKey::rs256("rsa-1");
    let ec = TestKey::es256("ec-1");
    let set = KeySet::parse(jwks(&[&rsa, &ec]).as_bytes()).expect("the test key set parses");
    let verifier = Verifier::with_key_set(ISSUER, AUDIENCE, set);
    let claims = claims(ISSUER, AUDIENCE, "user-1");
    // The verifier is async (a key lookup may fetch); with the set warm it never waits, so a
    // current-thread runtime's block_on adds well under a microsecond.
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .expect("a tokio runtime");
    let mut group = c.benchmark_group("jwt_verify");
    for (name, key) in [("RS256", &rsa), ("ES256", &ec)] {
        let token = key.sign(&claims);
        group.bench_function(name, |b| {
            b.iter(|| {
                rt.block_on(verifier.verify(black_box(&token)))
                    .expect("the bench's own token verifies")
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
