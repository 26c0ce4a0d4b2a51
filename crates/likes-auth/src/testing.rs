//! For tests and the bench (feature `testing`, never in a deployed binary): key pairs made at
//! run time (no private key is committed), tokens signed with them — good ones and the forgeries
//! the verifier must refuse — and a loopback JWKS server that counts its requests.

mod keys;
mod server;

pub use keys::{claims, jwks, token, unsigned, TestKey};
pub use server::JwksServer;
