//! The likes service's AWS adapters: everything that talks to AWS, behind the ports of
//! `likes-core`.
//!
//! Layout:
//! - [`dynamo`]: the DynamoDB stores — one module per table, holding every expression on it
//!   ([`dynamo::likes`], [`dynamo::counts`], the events function's [`dynamo::suppression`] and
//!   [`dynamo::milestones`]) — the tables' schema, the batch and paging calls,
//!   and the sorting of SDK failures;
//! - [`sqs_erase_queue`]: the erase queue; [`eventbridge`]: the like events' bus;
//! - [`sdk`]: the SDK configuration and clients (AWS, or an emulator's endpoint);
//! - [`env`]: every setting a function reads from its environment;
//! - [`lambda`]: start-up and the invocation's deadline; [`logs`]: the JSON log lines;
//! - [`stream_batch`]: what a stream reader's batch answers, and its metrics line;
//! - [`xray`]: a subsegment per AWS call when tracing is on.

pub mod dynamo;
pub mod env;
pub mod eventbridge;
pub mod lambda;
pub mod logs;
pub mod sdk;
pub mod sqs_erase_queue;
pub mod stream_batch;
pub mod xray;

pub use dynamo::{
    DynamoBlocks, DynamoCounts, DynamoErasureRequests, DynamoHomes, DynamoLikes, DynamoMilestones,
    DynamoPolicies, DynamoSuppression, DynamoSuspensions,
};
