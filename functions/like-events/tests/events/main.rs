//! The events function's integration tests, one binary: the delivery model and batches in memory,
//! the real binary on a loopback Runtime API, reactions, and its state on the emulator.

mod batches;
mod common;
mod delivery_model;
mod events;
mod milestone_wait;
mod milestones;
mod reactions;
mod state_on_dynamodb;
