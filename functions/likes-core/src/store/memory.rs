//! In-memory stores with DynamoDB's semantics, for tests of the logic above the stores (the
//! handlers, the aggregator, the paging rules) that need no emulator. Behind the `testing`
//! feature: never in a deployed binary.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Mutex;

use super::page::{self, BucketScan, Page};
use super::{
    ApplyOutcome, BucketWrite, CountsStore, FenceWrite, LikerPos, LikesStore, PostCounts,
    StoreError, UserLikePos, WindowEntry,
};
use crate::bucket::{fnv1a64, PostBucket};
use crate::ids::{PostId, UserId};
use crate::seq::{Seq, SeqNo};
use crate::token::WriteToken;

fn poisoned() -> StoreError {
    StoreError::Internal("a test store's lock was poisoned".into())
}

/// The Likes table: one entry per (post bucket, user), holding `liked_at`; and the markers of
/// named requests, by (post bucket, user, token), holding the operation.
#[derive(Debug, Default)]
pub struct MemoryLikes {
    items: Mutex<BTreeMap<(PostBucket, UserId), String>>,
    markers: Mutex<HashMap<(PostBucket, UserId, String), bool>>,
}

impl MemoryLikes {
    /// Applies `liked` (true: like) for `token`, as the DynamoDB store's transaction does: a
    /// named request that took effect before is answered `true` again, and never re-applied.
    fn write(
        &self,
        post: &PostId,
        user: &UserId,
        liked: Option<&str>,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let key = (PostBucket::for_like(post, user), user.clone());
        let mut markers = self.markers.lock().map_err(|_| poisoned())?;
        let marker = (key.0.clone(), key.1.clone(), token.as_str().to_owned());
        if token.is_keyed() {
            if let Some(&was_like) = markers.get(&marker) {
                return if was_like == liked.is_some() {
                    Ok(true)
                } else {
                    Err(StoreError::KeyReused)
                };
            }
        }
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let changed = match liked {
            Some(at) if !items.contains_key(&key) => items.insert(key, at.to_owned()).is_none(),
            Some(_) => false,
            None => items.remove(&key).is_some(),
        };
        if changed && token.is_keyed() {
            markers.insert(marker, liked.is_some());
        }
        Ok(changed)
    }
}

impl MemoryLikes {
    /// Every (post, user) that likes, in key order.
    pub fn pairs(&self) -> Vec<(PostId, UserId)> {
        self.items
            .lock()
            .map(|m| {
                m.keys()
                    .map(|(pb, u)| (pb.post.clone(), u.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }
}

impl LikesStore for MemoryLikes {
    async fn like(
        &self,
        post: &PostId,
        user: &UserId,
        liked_at: &str,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write(post, user, Some(liked_at), token)
    }

    async fn unlike(
        &self,
        post: &PostId,
        user: &UserId,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write(post, user, None, token)
    }

    async fn liked_at(&self, post: &PostId, user: &UserId) -> Result<Option<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items
            .get(&(PostBucket::for_like(post, user), user.clone()))
            .cloned())
    }

    async fn likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        after: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        // The `by_user` index: newest first; ties in a fixed order of its own (here the key's).
        let order = |p: &UserLikePos| (p.liked_at.clone(), p.post_bucket.clone());
        let mut mine: Vec<UserLikePos> = items
            .iter()
            .filter(|((_, u), _)| u == user)
            .map(|((pb, _), t)| UserLikePos {
                liked_at: t.clone(),
                post_bucket: pb.clone(),
            })
            .collect();
        mine.sort_by_key(|p| std::cmp::Reverse(order(p)));
        let read: Vec<UserLikePos> = mine
            .into_iter()
            .filter(|p| after.as_ref().is_none_or(|a| order(p) < order(a)))
            .take(page::fetch_size(limit))
            .collect();
        Ok(page::cut(read, limit))
    }

    async fn likers_of_post(
        &self,
        post: &PostId,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let pages = PostBucket::all(post).map(|pb| {
            let mut scan = BucketScan::new(limit, after.clone());
            let mut bucket: Vec<LikerPos> = items
                .iter()
                .filter(|((p, _), t)| *p == pb && scan.start_at().is_none_or(|s| t.as_str() <= s))
                .map(|((_, u), t)| LikerPos {
                    liked_at: t.clone(),
                    user_id: u.clone(),
                })
                .collect();
            // The `by_time` index promises no order among ties: scramble them.
            let scramble = |p: &LikerPos| fnv1a64(p.user_id.to_string().as_bytes());
            bucket.sort_by(|a, b| {
                b.liked_at
                    .cmp(&a.liked_at)
                    .then(scramble(a).cmp(&scramble(b)))
            });
            for pos in bucket {
                if !scan.offer(pos) {
                    break;
                }
            }
            scan.finish()
        });
        Ok(page::merge(pages, limit))
    }

    async fn liked_among(
        &self,
        user: &UserId,
        posts: &[PostId],
    ) -> Result<HashSet<PostId>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(posts
            .iter()
            .filter(|p| items.contains_key(&(PostBucket::for_like(p, user), user.clone())))
            .cloned()
            .collect())
    }
}

/// Recount window entries by (bucket, job, user): the user's last change and whether it liked.
type Windows = HashMap<(PostBucket, String, String), (SeqNo, bool)>;

/// The Counts table, with the conditional update's semantics: one item per post; and the
/// recount window entries the aggregator records, by (bucket, job, user).
#[derive(Debug, Default)]
pub struct MemoryCounts {
    items: Mutex<HashMap<PostId, PostCounts>>,
    windows: Mutex<Windows>,
}

impl MemoryCounts {
    /// A post's item, without going through the trait's future.
    pub fn read_post_now(&self, post: &PostId) -> Option<PostCounts> {
        self.items.lock().ok()?.get(post).cloned()
    }

    /// `job`'s window entries on `bucket`: user → (sequence number, liked).
    pub fn window_entries(&self, bucket: &PostBucket, job: &str) -> HashMap<String, (SeqNo, bool)> {
        self.windows
            .lock()
            .map(|w| {
                w.iter()
                    .filter(|((b, j, _), _)| b == bucket && j == job)
                    .map(|((_, _, u), v)| (u.clone(), v.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Adds `diff` to a bucket if `job`'s end is the one noted there, and forgets it: a
    /// recount's correction.
    pub fn correct(&self, post: &PostId, bucket: u8, job: &str, diff: i64) -> bool {
        let Ok(mut items) = self.items.lock() else {
            return false;
        };
        let Some(b) = items
            .get_mut(post)
            .map(|i| &mut i.buckets[usize::from(bucket)])
        else {
            return false;
        };
        if b.ended.as_ref().map(|(j, _)| j.as_str()) != Some(job) {
            return false;
        }
        b.count += diff;
        b.ended = None;
        true
    }
}

impl CountsStore for MemoryCounts {
    async fn apply(
        &self,
        post: &PostId,
        writes: &[BucketWrite<'_>],
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let item = items.entry(post.clone()).or_default();
        let stale = writes.iter().any(|w| {
            let b = &item.buckets[usize::from(w.bucket)];
            b.hwm.as_ref().is_some_and(|h| h.as_seq() >= w.first) || b.window.as_deref() != w.window
        });
        if stale {
            return Ok(ApplyOutcome::AlreadyApplied);
        }
        let mut counts = Vec::with_capacity(writes.len());
        for w in writes {
            let b = &mut item.buckets[usize::from(w.bucket)];
            b.count += w.delta;
            b.hwm = Some(w.last.to_owned());
            b.hwm_created = Some(w.last_created);
            counts.push((w.bucket, b.count));
        }
        item.updated_at = Some(now.to_owned());
        Ok(ApplyOutcome::Applied { counts })
    }

    async fn read_post(&self, post: &PostId) -> Result<Option<PostCounts>, StoreError> {
        Ok(self
            .items
            .lock()
            .map_err(|_| poisoned())?
            .get(post)
            .cloned())
    }

    async fn post_count(&self, post: &PostId) -> Result<i64, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.get(post).map(PostCounts::total).unwrap_or(0))
    }

    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(posts
            .iter()
            .filter_map(|p| items.get(p).map(|i| (p.clone(), i.total())))
            .collect())
    }

    async fn fence(
        &self,
        post: &PostId,
        bucket: u8,
        fence: FenceWrite<'_>,
        seq: Seq<'_>,
        created: i64,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let item = items.entry(post.clone()).or_default();
        let b = &mut item.buckets[usize::from(bucket)];
        if b.hwm.as_ref().is_some_and(|h| h.as_seq() >= seq) {
            return Ok(ApplyOutcome::AlreadyApplied);
        }
        match fence {
            FenceWrite::Begin { job } => b.window = Some(job.to_owned()),
            FenceWrite::End { job, closes: true } => {
                if b.window.as_deref() != Some(job) {
                    return Ok(ApplyOutcome::AlreadyApplied);
                }
                b.window = None;
                b.ended = Some((job.to_owned(), b.count));
            }
            FenceWrite::End { closes: false, .. } => {}
        }
        b.hwm = Some(seq.to_owned());
        b.hwm_created = Some(created);
        item.updated_at = Some(now.to_owned());
        Ok(ApplyOutcome::Applied { counts: Vec::new() })
    }

    async fn record_window(
        &self,
        bucket: &PostBucket,
        job: &str,
        entries: &[WindowEntry<'_>],
    ) -> Result<(), StoreError> {
        let mut w = self.windows.lock().map_err(|_| poisoned())?;
        for e in entries {
            let key = (bucket.clone(), job.to_owned(), e.user.to_owned());
            w.insert(key, (e.seq.to_owned(), e.liked));
        }
        Ok(())
    }
}
