//! For tests and the bench (feature `testing`, never in a deployed binary): key pairs made at
//! run time (no private key is committed), tokens signed with them — good ones and the forgeries
//! the verifier must refuse — a loopback JWKS server that counts its requests, and [`pass`],
//! minutes of the key cache's clock in an instant.

mod keys;
mod server;

pub use keys::{claims, jwks, token, unsigned, TestKey};
pub use server::JwksServer;

/// Moves tokio's clock on by `by` and lets it run again at once: the key cache ages on tokio's
/// clock, while the fetches are real I/O, which a clock left paused would race with its own
/// timeouts. Needs a current-thread runtime (`#[tokio::test]`).
pub async fn pass(by: std::time::Duration) {
    tokio::time::pause();
    tokio::time::advance(by).await;
    tokio::time::resume();
}
