//! What the local stack (`make dev`) and the tests use to play AWS's side. Never part of a
//! deployed function.
//!
//! - [`apigw`]: API Gateway HTTP API (payload 2.0) events, as API Gateway sends them after its
//!   JWT authorizer;
//! - [`stream`]: DynamoDB stream records in the shape Lambda hands to a function;
//! - [`sqs`]: SQS messages in the shape of Lambda's SQS event;
//! - [`faulty_counts`]: a Counts store that injects failures;
//! - [`rng`]: a seeded random stream.

pub mod apigw;
pub mod faulty_counts;
pub mod rng;
pub mod sqs;
pub mod stream;
