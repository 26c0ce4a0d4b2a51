//! How many Counts writes a like costs, when batches form as the template's event source
//! mapping forms them (per shard: up to 1,000 records or 1 s, whichever first): one write per
//! post per batch (this design), one per (post, bucket) per batch (the previous Counts format),
//! against a naive per-record ADD.

use std::collections::HashSet;

use likes_core::bucket::fnv1a64;

use crate::gen::{Rng, Zipf};

/// One shard's open batch: its posts, its (post, bucket)s, its records.
#[derive(Default, Clone)]
struct OpenBatch {
    posts: HashSet<u64>,
    keys: HashSet<(u64, u8)>,
    records: usize,
}

pub struct Coalescing {
    pub likes: u64,
    pub per_post: u64,
    pub per_bucket: u64,
    pub batches: u64,
}

/// `rate` likes/s for `seconds` over `shards` shards; post popularity Zipf over `posts`, with
/// rank 0 a hot post taking `hot_share` of all likes.
pub fn simulate(
    rate: u64,
    seconds: u64,
    shards: usize,
    posts: usize,
    hot_share: f64,
) -> Coalescing {
    let mut rng = Rng(7);
    let zipf = Zipf::new(posts, 1.0);
    let mut open: Vec<OpenBatch> = vec![OpenBatch::default(); shards];
    let mut out = Coalescing {
        likes: 0,
        per_post: 0,
        per_bucket: 0,
        batches: 0,
    };
    let close = |b: &mut OpenBatch, out: &mut Coalescing| {
        if b.records > 0 {
            out.per_post += b.posts.len() as u64;
            out.per_bucket += b.keys.len() as u64;
            out.batches += 1;
        }
        *b = OpenBatch::default();
    };
    for _second in 0..seconds {
        for _ in 0..rate {
            let post = if rng.unit() < hot_share {
                0
            } else {
                1 + zipf.sample(&mut rng) as u64
            };
            let bucket = (rng.next_u64() % 16) as u8;
            // A partition key's shard: its hash, as DynamoDB places keys on partitions.
            let key = format!("post-{post}#{bucket}");
            let shard = (fnv1a64(key.as_bytes()) % shards as u64) as usize;
            let b = &mut open[shard];
            b.posts.insert(post);
            b.keys.insert((post, bucket));
            b.records += 1;
            out.likes += 1;
            if b.records == 1_000 {
                close(b, &mut out);
            }
        }
        // The batching window (1 s) closes every open batch.
        for b in &mut open {
            close(b, &mut out);
        }
    }
    out
}
