//! The aggregator function's integration tests, one binary: the real binary on a loopback
//! Runtime API, with the sample events.

mod bootstrap;
mod events;
