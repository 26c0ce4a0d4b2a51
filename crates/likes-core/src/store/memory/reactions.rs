//! Reactions in memory, with the DynamoDB store's semantics: one lock over the like and the
//! reactions stands for the `single` mode's transaction.

use std::collections::HashMap;

use super::{poisoned, MemoryLikes};
use crate::bucket::PostBucket;
use crate::control;
use crate::ids::{PostId, UserId};
use crate::reaction::{sort_key, Kind, Kinds};
use crate::store::page::Page;
use crate::store::{LikerPos, LikesStore, Reacted, ReactionsStore, StoreError};
use crate::write_token::WriteToken;

impl MemoryLikes {
    /// Every (post, user, kind) reaction other than likes, in key order.
    pub fn reaction_triples(&self) -> Vec<(PostId, UserId, Kind)> {
        self.reactions
            .lock()
            .map(|m| {
                m.keys()
                    .map(|(pb, u, k)| (pb.post.clone(), u.clone(), k.clone()))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A reaction other than the like, as [`LikesStore::like`]/[`LikesStore::unlike`] do it.
    fn write_reaction(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: Option<&str>,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        let bucket = PostBucket::for_like(post, user);
        let mut markers = self.markers.lock().map_err(|_| poisoned())?;
        let marker = (
            bucket.clone(),
            control::marker_key(&sort_key(user, kind), token),
        );
        let put = at.is_some();
        if token.is_keyed() {
            if let Some(&(was_put, changed)) = markers.get(&marker) {
                return if was_put == put {
                    Ok(changed)
                } else {
                    Err(StoreError::KeyReused)
                };
            }
        }
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let key = (bucket, user.clone(), kind.clone());
        let changed = match at {
            Some(at) if !reactions.contains_key(&key) => {
                reactions.insert(key, at.to_owned()).is_none()
            }
            Some(_) => false,
            None => {
                // As an unlike: a suspension's hidden copy goes too.
                hidden.remove(&key);
                reactions.remove(&key).is_some()
            }
        };
        if token.is_keyed() {
            markers.insert(marker, (put, changed));
        }
        Ok(changed)
    }

    /// The user's kinds on the post, the like first (the store's locks held by the caller).
    fn held(
        items: &std::collections::BTreeMap<(PostBucket, UserId), String>,
        reactions: &std::collections::BTreeMap<(PostBucket, UserId, Kind), String>,
        bucket: &PostBucket,
        user: &UserId,
    ) -> Vec<Kind> {
        let mut kinds = Vec::new();
        if items.contains_key(&(bucket.clone(), user.clone())) {
            kinds.push(Kind::like());
        }
        kinds.extend(
            reactions
                .keys()
                .filter(|(b, u, _)| b == bucket && u == user)
                .map(|(_, _, k)| k.clone()),
        );
        kinds
    }
}

impl ReactionsStore for MemoryLikes {
    async fn react(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        if kind.is_like() {
            return self.like(post, user, at, token).await;
        }
        self.write_reaction(post, user, kind, Some(at), token)
    }

    async fn unreact(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        token: &WriteToken,
    ) -> Result<bool, StoreError> {
        if kind.is_like() {
            return self.unlike(post, user, token).await;
        }
        self.write_reaction(post, user, kind, None, token)
    }

    async fn react_only(
        &self,
        post: &PostId,
        user: &UserId,
        kind: &Kind,
        at: &str,
        token: &WriteToken,
    ) -> Result<Reacted, StoreError> {
        let bucket = PostBucket::for_like(post, user);
        let mut markers = self.markers.lock().map_err(|_| poisoned())?;
        let mut replaced = self.replaced.lock().map_err(|_| poisoned())?;
        let marker = (
            bucket.clone(),
            control::marker_key(&sort_key(user, kind), token),
        );
        if token.is_keyed() {
            if let Some(&(was_put, changed)) = markers.get(&marker) {
                return match was_put {
                    true => Ok(Reacted {
                        changed,
                        replaced: replaced.get(&marker).cloned(),
                    }),
                    false => Err(StoreError::KeyReused),
                };
            }
        }
        let mut items = self.items.lock().map_err(|_| poisoned())?;
        let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let held = Self::held(&items, &reactions, &bucket, user);
        let answer = if held.contains(kind) {
            Reacted {
                changed: false,
                replaced: None,
            }
        } else {
            for old in &held {
                if old.is_like() {
                    items.remove(&(bucket.clone(), user.clone()));
                } else {
                    reactions.remove(&(bucket.clone(), user.clone(), old.clone()));
                }
            }
            if kind.is_like() {
                items.insert((bucket.clone(), user.clone()), at.to_owned());
            } else {
                reactions.insert((bucket.clone(), user.clone(), kind.clone()), at.to_owned());
            }
            Reacted {
                changed: true,
                replaced: held.into_iter().next(),
            }
        };
        if token.is_keyed() {
            markers.insert(marker.clone(), (true, answer.changed));
            if let Some(old) = &answer.replaced {
                replaced.insert(marker, old.clone());
            }
        }
        Ok(answer)
    }

    async fn reactions_of(&self, post: &PostId, user: &UserId) -> Result<Vec<Kind>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let mut kinds = Self::held(&items, &reactions, &PostBucket::for_like(post, user), user);
        kinds.sort();
        Ok(kinds)
    }

    async fn reacted_among(
        &self,
        user: &UserId,
        posts: &[PostId],
        kinds: &Kinds,
    ) -> Result<HashMap<PostId, Vec<Kind>>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let mut out = HashMap::new();
        for post in posts {
            let bucket = PostBucket::for_like(post, user);
            let mut mine: Vec<Kind> = Self::held(&items, &reactions, &bucket, user)
                .into_iter()
                .filter(|k| kinds.get(k.as_str()).is_some())
                .collect();
            mine.sort();
            if !mine.is_empty() {
                out.insert(post.clone(), mine);
            }
        }
        Ok(out)
    }

    async fn held_since(
        &self,
        user: &UserId,
        since: &str,
        kinds: &Kinds,
        cap: usize,
    ) -> Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError> {
        let items = self.items.lock().map_err(|_| poisoned())?;
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let likes = items
            .iter()
            .filter(|((_, u), t)| u == user && t.as_str() >= since)
            .map(|((b, _), _)| (b.post.clone(), Kind::like()));
        let others = reactions
            .iter()
            .filter(|((_, u, k), t)| {
                u == user && t.as_str() >= since && kinds.get(k.as_str()).is_some()
            })
            .map(|((b, _, k), _)| (b.post.clone(), k.clone()));
        let held: Vec<(PostId, Kind)> = likes.chain(others).collect();
        if held.len() > cap {
            return Ok(None);
        }
        let mut out: HashMap<PostId, Vec<Kind>> = HashMap::new();
        for (post, kind) in held {
            out.entry(post).or_default().push(kind);
        }
        out.values_mut().for_each(|k| k.sort());
        Ok(Some(out))
    }

    async fn reactors_of_post(
        &self,
        post: &PostId,
        kind: &Kind,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        if kind.is_like() {
            return self.likers_of_post(post, limit, after).await;
        }
        let reactions = self.reactions.lock().map_err(|_| poisoned())?;
        let entries = reactions
            .iter()
            .filter(|((_, _, k), _)| k == kind)
            .map(|((b, u, _), t)| (b, u, t));
        Ok(super::listing(entries, post, limit, after))
    }
}
