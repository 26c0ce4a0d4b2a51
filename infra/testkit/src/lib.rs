//! The one test kit: what the tests and the local stack (`make dev`) both need to play AWS.
//! Never part of a deployed function.
//!
//! - [`apigw`]: API Gateway HTTP API (payload 2.0) events, as API Gateway sends them after its
//!   JWT authorizer;
//! - [`stream`]: DynamoDB stream records in the shape Lambda hands to a function;
//! - [`faults`]: a Counts store that injects failures;
//! - [`emulator`]: the SDK configuration for the local emulator;
//! - [`rng`]: a seeded random stream.

pub mod apigw;
pub mod emulator;
pub mod faults;
pub mod rng;
pub mod stream;
