//! Domain core of the likes service: identifiers, the bucket hash, stored keys, sequence
//! numbers, and the stores for the Likes and Counts tables. Nothing here knows about HTTP.

pub mod bucket;
pub mod config;
pub mod erase;
pub mod erase_queue;
pub mod ids;
pub mod schema;
pub mod seq;
pub mod store;
pub mod time;
pub mod token;
pub mod xray;

pub use bucket::{bucket_of, PostBucket, BUCKETS};
pub use ids::{IdError, PostId, UserId};
pub use seq::Seq;
pub use seq::SeqNo;
pub use store::{
    ApplyOutcome, BucketCount, BucketWrite, CountsStore, DynamoCounts, DynamoLikes, FenceWrite,
    LikerPos, LikesStore, Page, PostCounts, StoreError, UserLikePos, WindowEntry,
};
pub use token::WriteToken;
