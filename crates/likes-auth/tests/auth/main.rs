//! The verifier's integration tests, one binary (each binary is a link): every refusal against a
//! loopback JWKS, the key cache's refetch rules, discovery and the token type.

mod common;
mod discovery;
mod key_cache;
mod refusals;
