//! The bearer JWT, verified inside the function as API Gateway's JWT authorizer verifies it, for
//! the `FunctionUrl` profile (a Lambda function URL has no authorizer). See `docs/auth.md`.
//!
//! ```no_run
//! # async fn handler(authorization: Option<&str>) -> Result<(), likes_auth::AuthError> {
//! # let verifier = likes_auth::Verifier::from_env().expect("config");
//! // Once per execution environment (it holds the cached key set):
//! // let verifier = likes_auth::Verifier::from_env()?;
//! // Per request:
//! let verified = verifier.verify_authorization(authorization).await?;
//! let user = verified.sub; // and verified.claims, as the authorizer's claims were
//! # Ok(()) }
//! ```
//!
//! Modules, one job each: [`config`] (the environment), [`discovery`] (where the issuer's keys
//! are, as API Gateway finds them), [`jwks`] (which published keys are usable), [`keys`] (the
//! per-environment cache and when it refreshes), [`fetch`] (the HTTPS fetch), [`verify`] (the
//! rules), [`error`] (the refusals).

pub mod config;
pub mod discovery;
pub mod error;
pub mod fetch;
pub mod jwks;
pub mod keys;
#[cfg(feature = "testing")]
pub mod testing;
pub mod verify;

pub use config::{Config, ConfigError, KeysFrom, TokenType};
pub use discovery::DiscoveredJwks;
pub use error::AuthError;
pub use fetch::{BoxFuture, FetchError, HttpJwks, JwksSource};
pub use jwks::KeySet;
pub use verify::{bearer, Verified, Verifier, LEEWAY_SECS};
