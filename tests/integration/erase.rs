//! A person's erase deletes only likes made up to their request, even when the by-user index
//! lags the table: the index can still list a like that was unliked and made again after the
//! request, and the conditional delete, checked on the item itself, must keep it.
//!
//! The lag is staged by a wrapper that lists one extra, stale bucket (as a lagging index entry
//! would) in front of the real store: moto's index is never behind, so the real index cannot
//! show it. The deletes themselves are the store's own, on DynamoDB and in memory.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use likes_core::erase::{erase_user, EraseStore, Hidden, Reactions, Sweep};
use likes_core::store::memory::MemoryLikes;
use likes_core::{
    Kind, LikesStore, PostBucket, PostId, ReactionsStore, StoreError, UserId, WriteToken,
};
use likes_harness::Tables;

const BEFORE: &str = "2026-12-01T10:00:00.000Z";
const REQUEST: &str = "2026-12-01T10:30:00.000Z";
const AFTER: &str = "2026-12-01T11:00:00.000Z";

/// The real store, with an index that still shows `stale` once (the like's old entry) — or,
/// with `kind`, the by-reactor index that shows the reaction of that kind there once.
struct LaggingIndex<'a, S> {
    store: &'a S,
    stale: PostBucket,
    shown: AtomicBool,
    kind: Option<Kind>,
}

impl<S: EraseStore> EraseStore for LaggingIndex<'_, S> {
    type Resume = S::Resume;

    async fn user_likes(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<PostBucket>, Option<Self::Resume>), StoreError> {
        let (mut buckets, next) = self.store.user_likes(user, up_to, from).await?;
        if self.kind.is_none() && !self.shown.swap(true, Ordering::SeqCst) {
            buckets.push(self.stale.clone());
        }
        Ok((buckets, next))
    }

    async fn delete_like_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        t: &str,
    ) -> Result<bool, StoreError> {
        self.store.delete_like_made_by(bucket, user, t).await
    }

    async fn delete_likes(
        &self,
        user: &UserId,
        buckets: Vec<PostBucket>,
    ) -> Result<(), StoreError> {
        self.store.delete_likes(user, buckets).await
    }

    async fn user_reactions(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> Result<(Vec<(PostBucket, Kind)>, Option<Self::Resume>), StoreError> {
        let (mut found, next) = self.store.user_reactions(user, up_to, from).await?;
        if let Some(kind) = &self.kind {
            if !self.shown.swap(true, Ordering::SeqCst) {
                found.push((self.stale.clone(), kind.clone()));
            }
        }
        Ok((found, next))
    }

    async fn delete_reaction_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        t: &str,
    ) -> Result<bool, StoreError> {
        self.store
            .delete_reaction_made_by(bucket, user, kind, t)
            .await
    }

    async fn delete_reactions(
        &self,
        user: &UserId,
        found: Vec<(PostBucket, Kind)>,
    ) -> Result<(), StoreError> {
        self.store.delete_reactions(user, found).await
    }

    async fn bucket_page(&self, bucket: &PostBucket) -> Result<Vec<String>, StoreError> {
        self.store.bucket_page(bucket).await
    }

    async fn delete_items(&self, bucket: &PostBucket, keys: Vec<String>) -> Result<(), StoreError> {
        self.store.delete_items(bucket, keys).await
    }

    async fn hidden(
        &self,
        user: &UserId,
        from: Option<Hidden<Self::Resume>>,
    ) -> Result<Reactions<Hidden<Self::Resume>>, StoreError> {
        self.store.hidden(user, from).await
    }

    async fn hide(&self, b: &PostBucket, user: &UserId, kind: &Kind) -> Result<bool, StoreError> {
        self.store.hide(b, user, kind).await
    }

    async fn unhide(&self, b: &PostBucket, user: &UserId, kind: &Kind) -> Result<bool, StoreError> {
        self.store.unhide(b, user, kind).await
    }

    async fn delete_hidden(
        &self,
        b: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> Result<(), StoreError> {
        self.store.delete_hidden(b, user, kind, up_to).await
    }
}

fn ids() -> (UserId, PostId, PostId) {
    let user = UserId::parse("erase-lag-user").expect("id");
    (
        user,
        PostId::parse("made-before").expect("id"),
        PostId::parse("made-again-after").expect("id"),
    )
}

/// Erases `user`'s likes up to the request through a lagging index; how many it deleted.
async fn erase_through_lag<S: EraseStore>(store: &S, user: &UserId, again: &PostId) -> usize {
    let lagging = LaggingIndex {
        store,
        stale: PostBucket::for_like(again, user),
        shown: AtomicBool::new(false),
        kind: None,
    };
    let sweep = Sweep {
        progress: &|_| {},
        // The user's index trails the table (the lab's lag): the sweeps span it, as the
        // worker's and the admin tool's do.
        empty_sweeps: 2,
        pause: likes_harness::lab::read_lag() + Duration::from_millis(200),
        before: Some(REQUEST),
    };
    erase_user(&lagging, user, &sweep).await.expect("erased")
}

#[tokio::test]
async fn an_erase_keeps_a_like_made_again_after_its_request_on_dynamodb() {
    let t = Tables::lagging().await;
    let (user, before, again) = ids();
    t.put_like(&before, &user, BEFORE).await;
    t.put_like(&again, &user, AFTER).await;

    assert_eq!(erase_through_lag(&t.likes(), &user, &again).await, 1);
    let left = t.like_pairs().await;
    assert_eq!(
        left,
        vec![(again.to_string(), user.to_string())],
        "only the like made after the request may be left"
    );
}

#[tokio::test]
async fn an_erase_keeps_a_like_made_again_after_its_request_in_memory() {
    let store = MemoryLikes::default();
    let (user, before, again) = ids();
    let token = WriteToken::random();
    for (post, at) in [(&before, BEFORE), (&again, AFTER)] {
        assert!(store.like(post, &user, at, &token).await.expect("liked"));
    }

    assert_eq!(erase_through_lag(&store, &user, &again).await, 1);
    let left: Vec<(String, String)> = store
        .pairs()
        .into_iter()
        .map(|(p, u)| (p.to_string(), u.to_string()))
        .collect();
    assert_eq!(left, vec![(again.to_string(), user.to_string())]);
}

/// A person's erase takes their other reactions too (found through the by-reactor index), up
/// to the request, and nobody else's.
async fn an_erase_takes_reactions<S: ReactionsStore + EraseStore>(store: &S) {
    let (user, before, again) = ids();
    let other = UserId::new_random();
    let love = Kind::parse("love").expect("kind");
    let token = WriteToken::random();
    for (post, who, at) in [
        (&before, &user, BEFORE),
        (&again, &user, AFTER),
        (&before, &other, BEFORE),
    ] {
        assert!(store
            .react(post, who, &love, at, &token)
            .await
            .expect("reacted"));
    }
    store
        .like(&before, &user, BEFORE, &token)
        .await
        .expect("liked");
    let sweep = Sweep {
        progress: &|_| {},
        empty_sweeps: 2,
        pause: likes_harness::lab::read_lag() + Duration::from_millis(200),
        before: Some(REQUEST),
    };
    assert_eq!(erase_user(store, &user, &sweep).await.expect("erased"), 2);
    assert!(store
        .reactions_of(&before, &user)
        .await
        .expect("read")
        .is_empty());
    let kept = store.reactions_of(&again, &user).await.expect("read");
    assert_eq!(kept, std::slice::from_ref(&love), "made after the request");
    let others = store.reactions_of(&before, &other).await.expect("read");
    assert_eq!(others, std::slice::from_ref(&love), "somebody else's");
    // Without a time bound (the admin tool's erase), everything goes.
    let all = Sweep {
        before: None,
        ..sweep
    };
    erase_user(store, &user, &all).await.expect("erased");
    assert!(store
        .reactions_of(&again, &user)
        .await
        .expect("read")
        .is_empty());
}

#[tokio::test]
async fn an_erase_takes_reactions_on_dynamodb() {
    an_erase_takes_reactions(&Tables::lagging().await.likes()).await;
}

#[tokio::test]
async fn an_erase_takes_reactions_in_memory() {
    an_erase_takes_reactions(&MemoryLikes::default()).await;
}

/// As for likes: the by-reactor index still shows a reaction that was removed and made again
/// after the request; the delete's condition, checked on the item, keeps it.
async fn an_erase_keeps_a_reaction_made_again<S: ReactionsStore + EraseStore>(store: &S) {
    let (user, before, again) = ids();
    let love = Kind::parse("love").expect("kind");
    let token = WriteToken::random();
    for (post, at) in [(&before, BEFORE), (&again, AFTER)] {
        assert!(store
            .react(post, &user, &love, at, &token)
            .await
            .expect("reacted"));
    }
    let lagging = LaggingIndex {
        store,
        stale: PostBucket::for_like(&again, &user),
        shown: AtomicBool::new(false),
        kind: Some(love.clone()),
    };
    let sweep = Sweep {
        progress: &|_| {},
        // The user's index trails the table (the lab's lag): the sweeps span it, as the
        // worker's and the admin tool's do.
        empty_sweeps: 2,
        pause: likes_harness::lab::read_lag() + Duration::from_millis(200),
        before: Some(REQUEST),
    };
    assert_eq!(
        erase_user(&lagging, &user, &sweep).await.expect("erased"),
        1
    );
    assert!(store
        .reactions_of(&before, &user)
        .await
        .expect("read")
        .is_empty());
    let kept = store.reactions_of(&again, &user).await.expect("read");
    assert_eq!(kept, std::slice::from_ref(&love), "made after the request");
}

#[tokio::test]
async fn an_erase_keeps_a_reaction_made_again_after_its_request_on_dynamodb() {
    an_erase_keeps_a_reaction_made_again(&Tables::lagging().await.likes()).await;
}

#[tokio::test]
async fn an_erase_keeps_a_reaction_made_again_after_its_request_in_memory() {
    an_erase_keeps_a_reaction_made_again(&MemoryLikes::default()).await;
}
