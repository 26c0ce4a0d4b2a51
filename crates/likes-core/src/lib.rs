//! The likes domain, free of the AWS SDK: identifiers, the bucket hash, stored keys and
//! timestamps, stream sequence numbers, request tokens, the control items' keys, the store
//! ports and the erase procedures. The adapters that talk to AWS are `likes-aws`; nothing here
//! knows about HTTP, Lambda or DynamoDB's wire format.
//!
//! Layout:
//! - [`ids`]: the id grammar (`PostId`, `UserId`);
//! - [`bucket`]: the bucket hash (a persistent format) and the Likes partition key;
//! - [`reaction`]: reaction kinds, the mode, and a reaction's sort key;
//! - [`seq`]: stream sequence numbers, compared as numbers, and their stored form;
//! - [`stream_event`]: a Likes stream batch as Lambda delivers it, as its readers decode it;
//! - [`stream_record`]: one record of it, read as both readers start from it;
//! - [`time`]: the `liked_at` format;
//! - [`write_token`]: what identifies one like or unlike request (`Idempotency-Key`);
//! - [`control`]: the keys of control items (request markers, recount fences, windows, leases);
//! - [`store`]: the ports the handlers, the aggregator and the admin tool are written against,
//!   the paging rules, and (feature `testing`) in-memory stores;
//! - [`erase`], [`erase_job`]: erasing a person's or a post's likes, and the queued job;
//! - [`moderation`], [`suspend`], [`moderate`]: the product's decisions about users as recorded,
//!   a user's items moved out of sight and back, and a decision applied (both together);
//! - [`policy`]: a post's policy (new likes taken, who sees its counts and its likers);
//! - [`block`]: who blocks whom;
//! - [`homes`]: which users' homes a region serves, in two regions.

pub mod block;
pub mod bucket;
pub mod control;
pub mod erase;
pub mod erase_job;
pub mod homes;
pub mod ids;
pub mod moderate;
pub mod moderation;
pub mod policy;
pub mod product_event;
pub mod reaction;
pub mod seq;
pub mod store;
pub mod stream_event;
pub mod stream_record;
pub mod suspend;
pub mod time;
pub mod write_token;

pub use bucket::{bucket_of, PostBucket, BUCKETS};
pub use ids::{IdError, PostId, UserId};
pub use reaction::{Kind, Kinds, Mode, Reactions};
pub use seq::{Seq, SeqNo};
pub use store::{
    ApplyOutcome, BucketCount, BucketWrite, CountsAdmin, CountsLedger, CountsRead, Ended,
    FenceRecord, FenceWrite, HeldItem, LeaseState, LikerPos, LikesAdmin, LikesStore, Page,
    PostCounts, Reacted, ReactionsStore, RepairNote, StoreError, UserLikePos, Window, WindowEntry,
};
pub use write_token::WriteToken;
