//! The API function's integration tests, one binary: the real binary on a loopback Runtime API
//! (bootstrap, events, the function URL front door, X-Ray), and the handler's no-panic property.

mod bootstrap;
mod events;
mod function_url;
mod no_panic;
mod xray;
