//! The Likes table in memory: likes, named requests' markers, recount fences, and (shared
//! with [`super::MemoryCounts`]) recount windows.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::sync::Mutex;

use super::{poisoned, SharedWindows};
use crate::bucket::PostBucket;
use crate::control;
use crate::ids::{PostId, UserId};
use crate::reaction::Kind;
use crate::store::page::{self, Page};
use crate::store::{LikerPos, LikesStore, StoreError, UserLikePos};
use crate::write_token::WriteToken;

/// The Likes table: one entry per (post bucket, user), holding `liked_at`; the markers of named
/// requests, by (post bucket, sort key), holding whether the request was a like; recount fences;
/// and (shared with the Counts store) recount windows.
#[derive(Debug, Default)]
pub struct MemoryLikes {
    pub(super) items: Mutex<BTreeMap<(PostBucket, UserId), String>>,
    /// Named requests' markers, by bucket and sort key: whether the request was a like, and
    /// whether it changed the like.
    pub(super) markers: Mutex<HashMap<(PostBucket, String), (bool, bool)>>,
    /// Reactions other than the like, by bucket, user and kind, holding `reacted_at`
    /// (`super::reactions`).
    pub(super) reactions: Mutex<BTreeMap<(PostBucket, UserId, Kind), String>>,
    /// What a named `single`-mode reaction replaced, by its marker's key.
    pub(super) replaced: Mutex<HashMap<(PostBucket, String), Kind>>,
    /// Recount fences, by bucket and sort key.
    pub(super) fences: Mutex<BTreeSet<(PostBucket, String)>>,
    pub(super) windows: SharedWindows,
    /// Suspended users' likes and reactions out of sight (`crate::suspend`), by bucket, user
    /// and kind (the like's included), holding their own time.
    pub(super) hidden: Mutex<BTreeMap<(PostBucket, UserId, Kind), String>>,
}

impl MemoryLikes {
    /// Applies `liked` (a like at that time, or an unlike) for `token`, as the DynamoDB store's
    /// transactions do: a named request is remembered, whether it changed the like or found it
    /// already so, and a retry is answered as the first attempt was and never applied again.
    fn write(
        &self,
        post: &PostId,
        user: &UserId,
        liked: Option<&str>,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let key = (PostBucket::for_like(post, user), user.clone());
        let mut markers = self.markers.lock().map_err(|_| poisoned())?;
        let marker = (key.0.clone(), control::marker_key(user.as_str(), token));
        let like = liked.is_some();
        if token.is_keyed() {
            if let Some(&(was_like, changed)) = markers.get(&marker) {
                return if was_like == like {
                    Ok(changed)
                } else {
                    Err(StoreError::KeyReused)
                };
            }
        }
        // Locks in one order everywhere: markers, hidden, items (`hidden`).
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let changed = match liked {
            Some(at) if !items.contains_key(&key) => items.insert(key, at.to_owned()).is_none(),
            Some(_) => false,
            None => {
                // An unlike also drops a hidden copy (a suspension's), which a restore would
                // otherwise bring back.
                hidden.remove(&(key.0.clone(), user.clone(), Kind::like()));
                items.remove(&key).is_some()
            }
        };
        if token.is_keyed() {
            markers.insert(marker, (like, changed));
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
        let entries = items.iter().map(|((b, u), t)| (b, u, t));
        Ok(super::listing(entries, post, limit, after))
    }

    async fn likers_among(
        &self,
        post: &PostId,
        users: &[UserId],
    ) -> Result<Vec<LikerPos>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let mut likers: Vec<LikerPos> = users
            .iter()
            .filter_map(|u| {
                let liked_at = items.get(&(PostBucket::for_like(post, u), u.clone()))?;
                Some(LikerPos {
                    liked_at: liked_at.clone(),
                    user_id: u.clone(),
                })
            })
            .collect();
        likers.sort_by(|a, b| b.cmp(a));
        Ok(likers)
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
