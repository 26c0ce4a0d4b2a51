//! In-memory stores with DynamoDB's semantics, for tests of the logic above the stores (the
//! handlers, the aggregator, the erase and admin flows, the paging rules) that need no
//! emulator. Behind the `testing` feature: never in a deployed binary.
//!
//! As on DynamoDB, recount windows live with the likes: [`MemoryCounts::recording_into`] makes
//! the aggregator's window entries visible to the admin tool's reads of a [`MemoryLikes`].

mod counts;
mod likes;
mod likes_admin;

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::bucket::PostBucket;
use crate::seq::SeqNo;
use crate::store::StoreError;

pub use counts::MemoryCounts;
pub use likes::MemoryLikes;

fn poisoned() -> StoreError {
    StoreError::Internal("a test store's lock was poisoned".into())
}

/// Recount window entries by (bucket, job, user): the user's last change and whether it liked.
pub type Windows = HashMap<(PostBucket, String, String), (SeqNo, bool)>;

/// The window entries, shared by the Counts store that records them and the Likes store the
/// admin tool reads them from.
pub type SharedWindows = Arc<Mutex<Windows>>;
