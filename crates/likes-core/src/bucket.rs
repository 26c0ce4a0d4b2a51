//! The bucket hash that spreads one post's likes over 16 partition keys.
//!
//! **This is a persistent format.** The bucket is part of every stored Likes key, so GetItem and
//! DeleteItem find a like only if they compute the same bucket that PutItem did, on every platform
//! and every release. Never change it in place: a new function must get a new version and a data
//! migration.
//!
//! Version 1: `bucket = FNV-1a-64(the user_id's bytes) mod 16`, with the standard FNV-1a 64-bit
//! offset basis `0xcbf29ce484222325` and prime `0x100000001b3`. An id is ASCII (see
//! [`crate::ids`]), so its bytes are its characters; for a UUID they are its canonical lowercase
//! hyphenated spelling, as they were when ids had to be UUIDs.
//! FNV-1a is fully specified, byte-oriented (no endianness or word-size dependence) and trivially
//! re-implemented in any language a client or a backfill job might use.

use std::fmt;

use crate::ids::{PostId, UserId};

/// Number of buckets per post. Part of the persistent format, like the hash.
pub const BUCKETS: u8 = 16;

/// Version of the bucket function, recorded in the README and in this module's tests.
pub const BUCKET_HASH_VERSION: u32 = 1;

const FNV_OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
const FNV_PRIME: u64 = 0x0000_0100_0000_01b3;

pub fn fnv1a64(bytes: &[u8]) -> u64 {
    bytes.iter().fold(FNV_OFFSET, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(FNV_PRIME)
    })
}

/// The bucket (0..16) of a user's like on any post.
pub fn bucket_of(user: &UserId) -> u8 {
    // The remainder is < 16, so the narrowing cannot truncate.
    (fnv1a64(user.as_str().as_bytes()) % u64::from(BUCKETS)) as u8
}

/// Splits a stored Likes partition key into its post id (checked against the id grammar) and
/// bucket, borrowing: the aggregator does this once per stream record. Strict: the bucket is a
/// decimal 0..=15 without leading zeros, so a key has exactly one spelling.
pub fn split_key(raw: &str) -> Result<(&str, u8), KeyError> {
    let (post, bucket) = raw.split_once('#').ok_or(KeyError)?;
    let canonical = bucket.len() == 1 || (bucket.len() == 2 && bucket.starts_with('1'));
    match bucket.parse::<u8>() {
        Ok(b) if canonical && b < BUCKETS && crate::ids::is_id(post) => Ok((post, b)),
        _ => Err(KeyError),
    }
}

/// A stored key that is not a Likes partition key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("post_bucket is not \"<post_id>#<0..15>\"")]
pub struct KeyError;

/// A Likes partition key: `"{post_id}#{bucket}"`.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PostBucket {
    pub post: PostId,
    pub bucket: u8,
}

impl PostBucket {
    pub fn for_like(post: &PostId, user: &UserId) -> Self {
        Self {
            post: post.clone(),
            bucket: bucket_of(user),
        }
    }

    /// All 16 partition keys of a post.
    pub fn all(post: &PostId) -> impl Iterator<Item = PostBucket> + '_ {
        (0..BUCKETS).map(move |bucket| PostBucket {
            post: post.clone(),
            bucket,
        })
    }

    /// Parses a stored key (see [`split_key`]).
    pub fn parse(raw: &str) -> Result<Self, KeyError> {
        let (post, bucket) = split_key(raw)?;
        let post = PostId::parse(post).map_err(|_| KeyError)?;
        Ok(Self { post, bucket })
    }
}

impl fmt::Display for PostBucket {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}#{}", self.post, self.bucket)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Golden vectors: computed once from the v1 definition (independently, outside Rust) and
    /// frozen. If this test fails, the stored format changed and existing likes would become
    /// unreachable. One vector per bucket, so every residue is pinned.
    #[test]
    fn golden_vectors_v1() {
        assert_eq!(BUCKET_HASH_VERSION, 1);
        // The FNV-1a reference test vectors.
        assert_eq!(fnv1a64(b""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(fnv1a64(b"a"), 0xaf63_dc4c_8601_ec8c);
        assert_eq!(fnv1a64(b"foobar"), 0x8594_4171_f739_67e8);
        let vectors: [(&str, u64, u8); 16] = [
            (
                "00000000-0000-4000-8000-000000000007",
                0xd9074cfc7c28cc70,
                0,
            ),
            (
                "00000000-0000-4000-8000-000000000026",
                0xd90e5dfc7c2f0801,
                1,
            ),
            (
                "00000000-0000-4000-8000-000000000001",
                0xd90752fc7c28d6a2,
                2,
            ),
            (
                "00000000-0000-4000-8000-000000000006",
                0xd9074dfc7c28ce23,
                3,
            ),
            (
                "00000000-0000-4000-8000-000000000018",
                0xd903d5fc7c25cc64,
                4,
            ),
            (
                "00000000-0000-4000-8000-000000000000",
                0xd90753fc7c28d855,
                5,
            ),
            (
                "00000000-0000-4000-8000-000000000005",
                0xd9074efc7c28cfd6,
                6,
            ),
            (
                "00000000-0000-4000-8000-000000000019",
                0xd903d6fc7c25ce17,
                7,
            ),
            (
                "00000000-0000-4000-8000-000000000025",
                0xd90e5afc7c2f02e8,
                8,
            ),
            (
                "00000000-0000-4000-8000-000000000004",
                0xd9074ffc7c28d189,
                9,
            ),
            (
                "00000000-0000-4000-8000-000000000009",
                0xd9075afc7c28e43a,
                10,
            ),
            (
                "00000000-0000-4000-8000-000000000024",
                0xd90e5bfc7c2f049b,
                11,
            ),
            (
                "00000000-0000-4000-8000-000000000003",
                0xd90750fc7c28d33c,
                12,
            ),
            (
                "00000000-0000-4000-8000-000000000008",
                0xd9075bfc7c28e5ed,
                13,
            ),
            (
                "00000000-0000-4000-8000-000000000027",
                0xd90e5cfc7c2f064e,
                14,
            ),
            (
                "00000000-0000-4000-8000-000000000002",
                0xd90751fc7c28d4ef,
                15,
            ),
        ];
        // Ids that are not UUIDs, from the identity providers and id schemes in use.
        let others: [(&str, u64, u8); 8] = [
            ("auth0|5f7c8ec7c33c6c004bbafe82", 0x0d7a_16d7_f6ae_9cdc, 12),
            (
                "google-oauth2|104763291827364512345",
                0x8396_5be0_8ab1_8b63,
                3,
            ),
            ("Xq3rZ9bT1mKpL0vW8sYc2dNf4GhJ", 0x130a_3a6d_4c04_4f92, 2),
            ("00u1abcd2EfGh3IjK4l5", 0xf0a5_170c_706c_431f, 15),
            ("user_2abcDEF123", 0x245e_429f_606c_e108, 8),
            ("1798765432109876543", 0x4390_2144_aa1f_3e52, 2),
            ("a@b.example", 0x1951_fcc2_7736_c1ca, 10),
            ("x", 0xaf63_f54c_8602_1707, 7),
        ];
        for (raw, hash, bucket) in vectors.into_iter().chain(others) {
            assert_eq!(fnv1a64(raw.as_bytes()), hash, "hash of {raw}");
            assert_eq!(
                bucket_of(&UserId::parse(raw).unwrap()),
                bucket,
                "bucket of {raw}"
            );
        }
    }

    #[test]
    fn buckets_spread_evenly() {
        let mut counts = [0u32; BUCKETS as usize];
        for _ in 0..16_000 {
            counts[bucket_of(&UserId::new_random()) as usize] += 1;
        }
        for c in counts {
            assert!((800..1200).contains(&c), "uneven spread: {counts:?}");
        }
    }

    #[test]
    fn post_bucket_round_trips_and_is_strict() {
        for raw in [
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "1798765432109876543",
            "a|b:c",
        ] {
            let post = PostId::parse(raw).unwrap();
            for pb in PostBucket::all(&post) {
                assert_eq!(PostBucket::parse(&pb.to_string()).unwrap(), pb);
            }
        }
        for bad in [
            "0f8fad5b-d9cb-469f-a165-70867728950e#16",
            "0f8fad5b-d9cb-469f-a165-70867728950e#01",
            "0f8fad5b-d9cb-469f-a165-70867728950e#-1",
            "0f8fad5b-d9cb-469f-a165-70867728950e#",
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "#1",
            "a b#1",
            "0f8fad5b-d9cb-469f-a165-70867728950e#1#2",
        ] {
            assert!(PostBucket::parse(bad).is_err(), "{bad}");
        }
    }
}
