//! Suspended users' likes and reactions, out of sight (`crate::suspend`): each move between an
//! item and its hidden copy is done under the locks of both, so it is one step, as the
//! DynamoDB store's transaction.

use super::{poisoned, MemoryLikes};
use crate::bucket::PostBucket;
use crate::control::hidden_key;
use crate::ids::UserId;
use crate::reaction::{sort_key, Held, Kind};
use crate::store::StoreError;

impl MemoryLikes {
    /// The user's hidden items, newest first: bucket and kind.
    pub(super) fn hidden_of(&self, user: &UserId) -> Result<Vec<(PostBucket, Kind)>, StoreError> {
        let hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let mut mine: Vec<(&String, &PostBucket, &Kind)> = hidden
            .iter()
            .filter(|((_, u, _), _)| u == user)
            .map(|((b, _, k), t)| (t, b, k))
            .collect();
        mine.sort_by(|a, b| b.cmp(a));
        Ok(mine
            .into_iter()
            .map(|(_, b, k)| (b.clone(), k.clone()))
            .collect())
    }

    pub(super) fn hide_item(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let at = match kind.is_like() {
            true => {
                let mut items = self.items.lock().map_err(|_| poisoned())?;
                items.remove(&(bucket.clone(), user.clone()))
            }
            false => {
                let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
                reactions.remove(&(bucket.clone(), user.clone(), kind.clone()))
            }
        };
        let Some(at) = at else {
            return Ok(false);
        };
        hidden.insert((bucket.clone(), user.clone(), kind.clone()), at);
        Ok(true)
    }

    pub(super) fn unhide_item(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> Result<bool, StoreError> {
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let Some(at) = hidden.remove(&(bucket.clone(), user.clone(), kind.clone())) else {
            return Ok(false);
        };
        // Made again meanwhile: the newer one stays, the hidden copy is gone.
        let back = match kind.is_like() {
            true => {
                let mut items = self.items.lock().map_err(|_| poisoned())?;
                let key = (bucket.clone(), user.clone());
                !items.contains_key(&key) && items.insert(key, at).is_none()
            }
            false => {
                let mut reactions = self.reactions.lock().map_err(|_| poisoned())?;
                let key = (bucket.clone(), user.clone(), kind.clone());
                !reactions.contains_key(&key) && reactions.insert(key, at).is_none()
            }
        };
        Ok(back)
    }

    /// Removes the hidden copy of `item` (its own sort key) in the bucket; whether there was one.
    pub(super) fn remove_hidden(
        &self,
        bucket: &PostBucket,
        item: &str,
    ) -> Result<bool, StoreError> {
        let (user, kind) = match Held::of(item) {
            Held::Like(u) => (u, Kind::like()),
            Held::Reaction(u, k) => match Kind::parse(k) {
                Ok(kind) => (u, kind),
                Err(_) => return Ok(false),
            },
            Held::Control | Held::Foreign => return Ok(false),
        };
        let Ok(user) = UserId::parse(user) else {
            return Ok(false);
        };
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        Ok(hidden.remove(&(bucket.clone(), user, kind)).is_some())
    }

    /// Removes the user's hidden item of `kind`, if made at or before `up_to` when given.
    pub(super) fn remove_hidden_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> Result<(), StoreError> {
        let mut hidden = self.hidden.lock().map_err(|_| poisoned())?;
        let key = (bucket.clone(), user.clone(), kind.clone());
        if hidden
            .get(&key)
            .is_some_and(|t| up_to.is_none_or(|up| t.as_str() <= up))
        {
            hidden.remove(&key);
        }
        Ok(())
    }

    /// The bucket's hidden keys.
    pub(super) fn hidden_keys(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        let hidden = self.hidden.lock().map_err(|_| poisoned())?;
        Ok(hidden
            .keys()
            .filter(|(b, _, _)| b == bucket)
            .map(|(_, u, k)| hidden_key(&sort_key(u, k)))
            .collect())
    }
}
