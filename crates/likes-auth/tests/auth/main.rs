//! The verifier's integration tests, one binary (each binary is a link): every refusal against a
//! loopback JWKS, and the key cache's refetch rules.

mod common;
mod key_cache;
mod refusals;
