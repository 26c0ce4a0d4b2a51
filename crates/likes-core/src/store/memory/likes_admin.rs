//! The in-memory Likes table as the admin tool and the erase procedures see it: fences,
//! windows, control items, scans and deletes.

use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{poisoned, MemoryLikes};
use crate::bucket::PostBucket;
use crate::control::{self, fence_key, is_control, Phase};
use crate::erase::{EraseStore, Hidden, Reactions};
use crate::ids::UserId;
use crate::reaction::{sort_key, Held, Kind};
use crate::store::{HeldItem, LikesAdmin, StoreError, Window};

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
        if let Some(item) = control::unhidden(sort_key) {
            return self.remove_hidden(bucket, item);
        }
        if control::all_windows().contains(sort_key) {
            let mut windows = self.windows.lock().map_err(|_| poisoned())?;
            return Ok(windows.remove(&key).is_some());
        }
        if is_control(sort_key) {
            let mut fences = self.fences.lock().map_err(|_| poisoned())?;
            return Ok(fences.remove(&key));
        }
        if let Held::Reaction(user, kind) = Held::of(sort_key) {
            let (Ok(user), Ok(kind)) = (UserId::parse(user), Kind::parse(kind)) else {
                return Ok(false);
            };
            let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
            return Ok(reactions.remove(&(bucket.clone(), user, kind)).is_some());
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
                .filter(|(b, _)| b == bucket)
                .map(|(_, key)| key.clone()),
        );
        Ok(keys)
    }
}

impl LikesAdmin for MemoryLikes {
    async fn count_bucket(&self, bucket: &PostBucket) -> Result<i64, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        Ok(items.keys().filter(|(b, _)| b == bucket).count() as i64)
    }

    async fn count_kinds(&self, bucket: &PostBucket) -> Result<BTreeMap<String, i64>, StoreError> {
        let mut counts = BTreeMap::new();
        for key in self.bucket_users(bucket).await? {
            // As the aggregator counts (`Held`): a foreign key is no like and no reaction.
            if let Some(kind) = Held::of(&key).kind() {
                *counts.entry(kind.to_owned()).or_insert(0) += 1;
            }
        }
        Ok(counts)
    }

    async fn bucket_users(&self, bucket: &PostBucket) -> Result<HashSet<String>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        Ok(items
            .keys()
            .filter(|(b, _)| b == bucket)
            .map(|(_, u)| u.to_string())
            .chain(
                reactions
                    .keys()
                    .filter(|(b, _, _)| b == bucket)
                    .map(|(_, u, k)| sort_key(u, k)),
            )
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

    async fn window(&self, bucket: &PostBucket, job: &str) -> Result<Window, StoreError> {
        let windows = self.windows.lock().map_err(|_| poisoned())?;
        Ok(super::read_window(&windows, bucket, job))
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

    async fn scan_several(
        &self,
        segment: u32,
        total: u32,
        held: &AtomicU64,
    ) -> Result<Vec<Vec<HeldItem>>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let likes = items.iter().map(|((b, u), at)| (b, u, Kind::like(), at));
        let others = reactions
            .iter()
            .map(|((b, u, k), at)| (b, u, k.clone(), at));
        let mut pairs: BTreeMap<(&PostBucket, &UserId), Vec<HeldItem>> = BTreeMap::new();
        for (bucket, user, kind, at) in likes.chain(others) {
            // By partition, as DynamoDB segments a scan: a pair is never split.
            let hash = crate::bucket::fnv1a64(bucket.to_string().as_bytes());
            if hash % u64::from(total.max(1)) != u64::from(segment) {
                continue;
            }
            held.fetch_add(1, Ordering::Relaxed);
            pairs.entry((bucket, user)).or_default().push(HeldItem {
                bucket: bucket.clone(),
                user: user.clone(),
                kind,
                at: at.clone(),
            });
        }
        Ok(pairs
            .into_values()
            .filter(|kinds| kinds.len() > 1)
            .collect())
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

    async fn user_reactions(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<(PostBucket, Kind)>, Option<Self::Resume>), StoreError> {
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let mut mine: Vec<(String, PostBucket, Kind)> = reactions
            .iter()
            .filter(|((_, u, _), t)| u == user && up_to.is_none_or(|up| t.as_str() <= up))
            .map(|((b, _, k), t)| (t.clone(), b.clone(), k.clone()))
            .collect();
        mine.sort_by(|a, b| b.cmp(a));
        let page: Vec<_> = mine
            .into_iter()
            .filter(|(t, b, _)| from.as_ref().is_none_or(|f| (t, b) < (&f.0, &f.1)))
            .take(PAGE + 1)
            .collect();
        let more = page.len() > PAGE;
        let page: Vec<_> = page.into_iter().take(PAGE).collect();
        let next = match (more, page.last()) {
            (true, Some((t, b, _))) => Some((t.clone(), b.clone())),
            _ => None,
        };
        Ok((page.into_iter().map(|(_, b, k)| (b, k)).collect(), next))
    }

    async fn delete_reaction_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        t: &str,
    ) -> Result<bool, StoreError> {
        let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let key = (bucket.clone(), user.clone(), kind.clone());
        if reactions.get(&key).is_some_and(|at| at.as_str() <= t) {
            reactions.remove(&key);
            return Ok(true);
        }
        Ok(false)
    }

    async fn delete_reactions(
        &self,
        user: &UserId,
        found: Vec<(PostBucket, Kind)>,
    ) -> Result<(), StoreError> {
        let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
        for (b, k) in found {
            reactions.remove(&(b, user.clone(), k));
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
        keys.extend(
            self.reactions
                .lock()
                .map_err(|_| poisoned())?
                .keys()
                .filter(|(b, _, _)| b == bucket)
                .map(|(_, u, k)| sort_key(u, k)),
        );
        let markers = self.markers.lock().map_err(|_| poisoned())?;
        keys.extend(
            markers
                .keys()
                .filter(|(b, _)| b == bucket)
                .map(|(_, k)| k.clone()),
        );
        drop(markers);
        keys.extend(self.recount_keys(bucket)?);
        keys.extend(self.hidden_keys(bucket)?);
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

    async fn hidden(
        &self,
        user: &UserId,
        _: Option<Hidden<Self::Resume>>,
    ) -> Result<Reactions<Hidden<Self::Resume>>, StoreError> {
        // One page: a test's user has few.
        Ok((self.hidden_of(user)?, None))
    }

    async fn hide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        self.hide_item(bucket, user, kind)
    }

    async fn unhide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        self.unhide_item(bucket, user, kind)
    }

    async fn delete_hidden(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> Result<(), StoreError> {
        self.remove_hidden_made_by(bucket, user, kind, up_to)
    }
}
