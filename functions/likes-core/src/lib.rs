//! Domain core of the likes service: identifiers, the bucket hash, stored keys, errors, and the
//! DynamoDB stores for the Likes and Counts tables.

pub mod bucket;
pub mod config;
pub mod counts_table;
pub mod error;
pub mod ids;
pub mod likes_table;
pub mod schema;
pub mod seq;
pub mod store_error;
pub mod time;

pub use bucket::{bucket_of, PostBucket, BUCKETS};
pub use counts_table::{ApplyOutcome, CountRow, CountsStore, DynamoCounts};
pub use error::{ApiError, StoreError};
pub use ids::{PostId, UserId};
pub use likes_table::{DynamoLikes, LikerPos, LikesStore, Page, UserLikePos};
pub use seq::SeqNo;
