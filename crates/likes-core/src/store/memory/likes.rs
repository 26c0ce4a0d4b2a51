//! The Likes table in memory: likes, named requests' markers, recount fences, and (shared
//! with [`super::MemoryCounts`]) recount windows.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use super::{poisoned, SharedWindows};
use crate::bucket::{fnv1a64, PostBucket};
use crate::control::{self, fence_key, is_control, Phase};
use crate::erase::EraseStore;
use crate::ids::{PostId, UserId};
use crate::store::page::{self, BucketScan, Page};
use crate::store::{LikerPos, LikesAdmin, LikesStore, StoreError, UserLikePos};
use crate::write_token::WriteToken;

/// The Likes table: one entry per (post bucket, user), holding `liked_at`; and the markers of
/// named requests, by (post bucket, user, token), holding the operation.
#[derive(Debug, Default)]
pub struct MemoryLikes {
    items: Mutex<BTreeMap<(PostBucket, UserId), String>>,
    /// Named requests' markers, by bucket and sort key: whether the request was a like.
    markers: Mutex<HashMap<(PostBucket, String), bool>>,
    /// Recount fences, by bucket and sort key.
    fences: Mutex<BTreeSet<(PostBucket, String)>>,
    pub(super) windows: SharedWindows,
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
        let marker = (key.0.clone(), control::marker_key(user, token));
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

impl MemoryLikes {
    /// Removes `bucket`'s item under `sort_key`, whatever it is; whether there was one.
    fn remove_item(&self, bucket: &PostBucket, sort_key: &str) -> Result<bool, StoreError> {
        let key = (bucket.clone(), sort_key.to_owned());
        if self
            .markers
            .lock()
            .map_err(|_| poisoned())?
            .remove(&key)
            .is_some()
        {
            return Ok(true);
        }
        if control::all_windows().contains(sort_key) {
            let mut windows = self.windows.lock().map_err(|_| poisoned())?;
            let before = windows.len();
            windows.retain(|(b, job, user), _| {
                !(b == bucket && control::window_key(job, user) == sort_key)
            });
            return Ok(windows.len() < before);
        }
        if is_control(sort_key) {
            let mut fences = self.fences.lock().map_err(|_| poisoned())?;
            return Ok(fences.remove(&key));
        }
        let Ok(user) = UserId::parse(sort_key) else {
            return Ok(false);
        };
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.remove(&(bucket.clone(), user)).is_some())
    }

    /// Every sort key of the bucket's fences and window entries.
    fn recount_keys(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let fences = self.fences.lock().map_err(|_| poisoned())?;
        let windows = self.windows.lock().map_err(|_| poisoned())?;
        let mut keys: Vec<String> = fences
            .iter()
            .filter(|(b, _)| b == bucket)
            .map(|(_, k)| k.clone())
            .collect();
        keys.extend(
            windows
                .keys()
                .filter(|(b, _, _)| b == bucket)
                .map(|(_, job, user)| control::window_key(job, user)),
        );
        Ok(keys)
    }
}

impl LikesAdmin for MemoryLikes {
    async fn count_bucket(&self, bucket: &PostBucket) -> Result<i64, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.keys().filter(|(b, _)| b == bucket).count() as i64)
    }

    async fn bucket_users(&self, bucket: &PostBucket) -> Result<HashSet<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items
            .keys()
            .filter(|(b, _)| b == bucket)
            .map(|(_, u)| u.to_string())
            .collect())
    }

    async fn put_fence(
        &self,
        bucket: &PostBucket,
        job: &str,
        phase: Phase,
    ) -> Result<(), StoreError> {
        let mut fences = self.fences.lock().map_err(|_| poisoned())?;
        fences.insert((bucket.clone(), fence_key(job, phase)));
        Ok(())
    }

    async fn window(
        &self,
        bucket: &PostBucket,
        job: &str,
    ) -> Result<HashMap<String, bool>, StoreError> {
        let windows = self.windows.lock().map_err(|_| poisoned())?;
        Ok(windows
            .iter()
            .filter(|((b, j, _), _)| b == bucket && j == job)
            .map(|((_, _, u), (_, liked))| (u.clone(), *liked))
            .collect())
    }

    async fn recount_items(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        self.recount_keys(bucket)
    }

    async fn delete_controls(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> Result<(), StoreError> {
        if let Some(like) = sort_keys.iter().find(|k| !is_control(k)) {
            return Err(StoreError::Internal(format!(
                "{like:?} is a like, not a control item"
            )));
        }
        for key in sort_keys {
            self.remove_item(bucket, &key)?;
        }
        Ok(())
    }

    async fn scan_posts(
        &self,
        segment: u32,
        total: u32,
        likes: &AtomicU64,
    ) -> Result<BTreeSet<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let mut posts = BTreeSet::new();
        for (i, (bucket, _)) in items.keys().enumerate() {
            if i as u64 % u64::from(total.max(1)) == u64::from(segment) {
                likes.fetch_add(1, Ordering::Relaxed);
                posts.insert(bucket.post.to_string());
            }
        }
        Ok(posts)
    }
}

/// Items one page of a listing or a bucket read holds, as DynamoDB's 1 MB pages would.
const PAGE: usize = 100;

impl EraseStore for MemoryLikes {
    /// The last (liked_at, bucket) listed.
    type Resume = (String, PostBucket);

    async fn user_likes(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<PostBucket>, Option<Self::Resume>), StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let mut mine: Vec<(String, PostBucket)> = items
            .iter()
            .filter(|((_, u), t)| u == user && up_to.is_none_or(|up| t.as_str() <= up))
            .map(|((b, _), t)| (t.clone(), b.clone()))
            .collect();
        mine.sort_by(|a, b| b.cmp(a));
        let page: Vec<(String, PostBucket)> = mine
            .into_iter()
            .filter(|pos| from.as_ref().is_none_or(|f| pos < f))
            .take(PAGE + 1)
            .collect();
        let more = page.len() > PAGE;
        let page: Vec<_> = page.into_iter().take(PAGE).collect();
        let next = if more { page.last().cloned() } else { None };
        Ok((page.into_iter().map(|(_, b)| b).collect(), next))
    }

    async fn delete_like_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        t: &str,
    ) -> Result<bool, StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let key = (bucket.clone(), user.clone());
        if items.get(&key).is_some_and(|at| at.as_str() <= t) {
            items.remove(&key);
            return Ok(true);
        }
        Ok(false)
    }

    async fn delete_likes(
        &self,
        user: &UserId,
        buckets: Vec<PostBucket>,
    ) -> Result<(), StoreError> {
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        for b in buckets {
            items.remove(&(b, user.clone()));
        }
        Ok(())
    }

    async fn bucket_page(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let mut keys: Vec<String> = {
            let items = self.items.lock().map_err(|_| poisoned())?;
            items
                .keys()
                .filter(|(b, _)| b == bucket)
                .map(|(_, u)| u.to_string())
                .collect()
        };
        let markers = self.markers.lock().map_err(|_| poisoned())?;
        keys.extend(
            markers
                .keys()
                .filter(|(b, _)| b == bucket)
                .map(|(_, k)| k.clone()),
        );
        drop(markers);
        keys.extend(self.recount_keys(bucket)?);
        keys.sort();
        keys.truncate(PAGE);
        Ok(keys)
    }

    async fn delete_items(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> Result<(), StoreError> {
        for key in sort_keys {
            self.remove_item(bucket, &key)?;
        }
        Ok(())
    }
}
