//! The API function's integration tests, one binary: the real binary on a loopback Runtime API
//! (bootstrap, events, the function URL front door, against a real OpenID provider too, X-Ray),
//! and the handler's no-panic property.

mod bootstrap;
mod events;
mod feed_counts;
mod function_url;
mod hot_counts;
mod no_panic;
mod oidc;
mod xray;
