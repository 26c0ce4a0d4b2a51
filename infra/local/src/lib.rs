//! The whole likes system on one machine, for development: moto's DynamoDB + Streams + SQS +
//! EventBridge emulator, API Gateway with its JWT authorizer, and the stream event source
//! mappings (the aggregator's and the events function's), played locally around the same
//! handler code that runs on Lambda.

pub mod api;
pub mod chaos;
pub mod cors;
pub mod demo;
pub mod dev;
pub mod erase_poller;
pub mod error;
pub mod esm;
pub mod events;
pub mod gateway;
pub mod jwt;
pub mod lab;
pub mod moto;
pub mod product_bus;
pub mod settings;
pub mod setup;
pub mod sqs_poll;

pub use dev::dev;
pub use error::LocalError;
pub use settings::Settings;
