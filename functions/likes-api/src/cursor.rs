//! Opaque pagination cursors.
//!
//! A cursor is `base64url(json ‖ fnv1a64("likes-cursor-v1\0" ‖ json))`. The JSON names the
//! listing it belongs to (route plus post or user) and the position to resume after. On the way
//! in it is checked three ways, and any failure is a 400:
//! - the checksum catches truncation, flipped bytes and random strings;
//! - the binding must equal the request's route and post (or the caller): a cursor from another
//!   listing can never steer this one;
//! - the position must be well formed (timestamp in the stored format, UUIDs, a `post_bucket`
//!   that is the caller's own bucket).
//!
//! The checksum is not a secret MAC, and needs none: a forged cursor that passes the binding
//! check can only choose a position inside a listing the caller may read in full anyway.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use likes_core::bucket::fnv1a64;
use likes_core::time::{format_ts, parse_ts};
use likes_core::{bucket_of, LikerPos, PostBucket, PostId, UserId, UserLikePos};
use serde::{Deserialize, Serialize};

use crate::error::ApiError;

const DOMAIN: &[u8] = b"likes-cursor-v1\0";
/// Far above any cursor we issue (~200 characters); bounds the work on hostile input.
const MAX_LEN: usize = 1024;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "k", deny_unknown_fields)]
enum Payload {
    #[serde(rename = "post_likes")]
    PostLikes { post: String, t: String, u: String },
    #[serde(rename = "my_likes")]
    MyLikes { user: String, t: String, pb: String },
}

fn checksum(json: &[u8]) -> [u8; 8] {
    let mut buf = Vec::with_capacity(DOMAIN.len() + json.len());
    buf.extend_from_slice(DOMAIN);
    buf.extend_from_slice(json);
    fnv1a64(&buf).to_be_bytes()
}

fn encode(p: &Payload) -> String {
    // Serializing these plain string fields cannot fail.
    let mut bytes = serde_json::to_vec(p).unwrap_or_default();
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum);
    URL_SAFE_NO_PAD.encode(bytes)
}

fn invalid(why: &str) -> ApiError {
    ApiError::bad_request("invalid_cursor", format!("cursor is not valid here: {why}"))
}

fn decode(token: &str) -> Result<Payload, ApiError> {
    if token.is_empty() || token.len() > MAX_LEN {
        return Err(invalid("wrong length"));
    }
    let bytes = URL_SAFE_NO_PAD
        .decode(token)
        .map_err(|_| invalid("not base64url"))?;
    if bytes.len() <= 8 {
        return Err(invalid("too short"));
    }
    let (json, sum) = bytes.split_at(bytes.len() - 8);
    if checksum(json) != sum {
        return Err(invalid("damaged or altered"));
    }
    serde_json::from_slice(json).map_err(|_| invalid("unknown format"))
}

fn timestamp(t: &str) -> Result<String, ApiError> {
    match parse_ts(t) {
        Some(parsed) if format_ts(parsed) == t => Ok(t.to_owned()),
        _ => Err(invalid("bad position")),
    }
}

pub fn encode_likers(post: &PostId, pos: &LikerPos) -> String {
    encode(&Payload::PostLikes {
        post: post.to_string(),
        t: pos.liked_at.clone(),
        u: pos.user_id.to_string(),
    })
}

pub fn decode_likers(token: &str, post: &PostId) -> Result<LikerPos, ApiError> {
    match decode(token)? {
        Payload::PostLikes { post: p, t, u } if p == post.as_str() => Ok(LikerPos {
            liked_at: timestamp(&t)?,
            user_id: UserId::parse(&u).map_err(|_| invalid("bad position"))?,
        }),
        _ => Err(invalid("it belongs to another listing")),
    }
}

pub fn encode_mine(user: &UserId, pos: &UserLikePos) -> String {
    encode(&Payload::MyLikes {
        user: user.to_string(),
        t: pos.liked_at.clone(),
        pb: pos.post_bucket.to_string(),
    })
}

pub fn decode_mine(token: &str, user: &UserId) -> Result<UserLikePos, ApiError> {
    match decode(token)? {
        Payload::MyLikes { user: u, t, pb } if u == user.as_str() => {
            let post_bucket = PostBucket::parse(&pb).map_err(|_| invalid("bad position"))?;
            // All of a user's likes live in that user's bucket.
            if post_bucket.bucket != bucket_of(user) {
                return Err(invalid("bad position"));
            }
            Ok(UserLikePos {
                liked_at: timestamp(&t)?,
                post_bucket,
            })
        }
        _ => Err(invalid("it belongs to another listing")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pos() -> LikerPos {
        LikerPos {
            liked_at: "2026-11-30T20:53:11.123Z".into(),
            user_id: UserId::new_random(),
        }
    }

    #[test]
    fn round_trips() {
        let post = PostId::new_random();
        let p = pos();
        assert_eq!(decode_likers(&encode_likers(&post, &p), &post).unwrap(), p);
        let user = UserId::new_random();
        let mine = UserLikePos {
            liked_at: p.liked_at.clone(),
            post_bucket: PostBucket::for_like(&post, &user),
        };
        assert_eq!(
            decode_mine(&encode_mine(&user, &mine), &user).unwrap(),
            mine
        );
    }

    #[test]
    fn every_single_byte_flip_is_rejected() {
        let post = PostId::new_random();
        let token = encode_likers(&post, &pos());
        let raw = URL_SAFE_NO_PAD.decode(&token).unwrap();
        for i in 0..raw.len() {
            for bit in [0x01u8, 0x80] {
                let mut bad = raw.clone();
                bad[i] ^= bit;
                let err = decode_likers(&URL_SAFE_NO_PAD.encode(&bad), &post).unwrap_err();
                assert_eq!(err.status, 400);
                assert_eq!(err.code, "invalid_cursor");
            }
        }
    }

    #[test]
    fn cursors_do_not_cross_listings() {
        let (a, b) = (PostId::new_random(), PostId::new_random());
        let token = encode_likers(&a, &pos());
        assert!(decode_likers(&token, &b).is_err());
        assert!(decode_mine(&token, &UserId::new_random()).is_err());
        let user = UserId::new_random();
        let mine = encode_mine(
            &user,
            &UserLikePos {
                liked_at: "2026-11-30T20:53:11.123Z".into(),
                post_bucket: PostBucket::for_like(&a, &user),
            },
        );
        assert!(decode_mine(&mine, &UserId::new_random()).is_err());
        assert!(decode_likers(&mine, &a).is_err());
    }

    #[test]
    fn garbage_is_rejected() {
        let post = PostId::new_random();
        for t in [
            "",
            "!!!!",
            "abc",
            "eyJrIjoicG9zdF9saWtlcyJ9",
            &"A".repeat(2000),
        ] {
            assert_eq!(decode_likers(t, &post).unwrap_err().status, 400, "{t}");
        }
    }
}
