//! In-memory stores with DynamoDB's semantics, for tests of the logic above the stores (the
//! handlers, the aggregator, the erase and admin flows, the paging rules) that need no
//! emulator. Behind the `testing` feature: never in a deployed binary.
//!
//! As on DynamoDB, recount windows live with the likes: [`MemoryCounts::recording_into`] makes
//! the aggregator's window entries visible to the admin tool's reads of a [`MemoryLikes`].

mod counts;
mod erasures;
mod events;
mod likes;
mod likes_admin;
mod reactions;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use crate::bucket::PostBucket;
use crate::store::{StoreError, Window};

pub use counts::MemoryCounts;
pub use erasures::MemoryErasureRequests;
pub use events::{BusFaults, MemoryBus, MemoryMilestones, MemorySuppression};
pub use likes::MemoryLikes;

fn poisoned() -> StoreError {
    StoreError::Internal("a test store's lock was poisoned".into())
}

/// Recount window entries by bucket and sort key (`crate::control::window_key`): whether the
/// change was a like.
pub type Windows = BTreeMap<(PostBucket, String), bool>;

/// The window entries, shared by the Counts store that records them and the Likes store the
/// admin tool reads them from.
pub type SharedWindows = Arc<Mutex<Windows>>;

/// `job`'s window on `bucket` among the recorded entries.
fn read_window(windows: &Windows, bucket: &PostBucket, job: &str) -> Window {
    let range = crate::control::job_window(job);
    Window::of(
        job,
        windows
            .iter()
            .filter(|((b, key), _)| b == bucket && range.contains(key))
            .map(|((_, key), liked)| (key.as_str(), *liked)),
    )
}
