//! The erase worker's integration tests, one binary: the real binary on a loopback Runtime API,
//! its continuation and the pending erasures.

mod continuation;
mod events;
mod pending;
mod product;
