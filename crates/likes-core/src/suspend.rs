//! A suspension (the product's `UserSuspended`, docs/product-events.md): every like and
//! reaction of the user out of sight, and back, exactly, on `UserRestored`.
//!
//! Hiding moves an item to its hidden key in the same partition (`crate::control::hidden_key`),
//! keeping its time: a change of the Likes table like any other, so the stream carries it and
//! nothing else is needed to keep counts exact. The move's `REMOVE` of the item is counted as an
//! unlike; its hidden copy is a control item, which every reader skips (the aggregator,
//! recount and audit, listings, events). Restoring moves it back: an `INSERT` counted as a like,
//! at its original time. Each move is one step (a transaction): never both copies, never none.
//!
//! Like an erase, a sweep goes through the user's indexes, which lag the table, until they stay
//! empty. Both are idempotent: run again, they move what is left.

use futures::{StreamExt, TryStreamExt};

use crate::erase::{EraseStore, Sweep};
use crate::ids::UserId;
use crate::reaction::Kind;
use crate::store::StoreError;
use crate::PostBucket;

/// Where a listing of a user's hidden items resumes: in the likes' index, or the reactions'.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Hidden<R> {
    Likes(R),
    /// The reactions, from their start when `None`.
    Reactions(Option<R>),
}

/// How many moves run at once.
pub const MOVE_CONCURRENCY: usize = 16;

/// How many moves a run starts per second at most. A move writes two items transactionally
/// (~12 write units with their index entries, counted by `make bench`), so ~2,400 units a
/// second, spread over the user's posts' partitions: a suspension of a heavy user must not
/// take the table's headroom from everyone else's likes (16 moves at once, unpaced, would take
/// ~10,000 a second on AWS).
pub const MOVES_PER_SECOND: u32 = 200;

/// Starts moves no faster than `MOVES_PER_SECOND`: each move takes the next free slot, never
/// one in the past, so time a run lost (index queries, the pause between sweeps, throttled
/// retries) is not made up afterwards in a burst.
struct Pace {
    /// The next free slot; `None`: unpaced.
    next: Option<std::sync::Mutex<tokio::time::Instant>>,
}

impl Pace {
    fn new() -> Self {
        Self {
            next: Some(std::sync::Mutex::new(tokio::time::Instant::now())),
        }
    }

    fn unpaced() -> Self {
        Self { next: None }
    }

    async fn wait(&self) {
        let Some(next) = &self.next else { return };
        let gap = std::time::Duration::from_secs(1) / MOVES_PER_SECOND;
        let slot = {
            // Held only to take a slot, never across an await.
            let mut next = next
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            let slot = (*next).max(tokio::time::Instant::now());
            *next = slot + gap;
            slot
        };
        tokio::time::sleep_until(slot).await;
    }
}

/// Moves every like and reaction the user's indexes show out of sight, sweeping until both
/// stay empty (`sweep.empty_sweeps` sweeps running, `sweep.pause` apart). How many it moved.
pub async fn hide_user<S: EraseStore>(
    store: &S,
    user: &UserId,
    sweep: &Sweep<'_>,
) -> Result<usize, StoreError> {
    let mut moved = 0;
    let mut empty = 0;
    let pace = Pace::new();
    while empty < sweep.empty_sweeps {
        let mut found = 0;
        let mut from = None;
        loop {
            let (buckets, next) = store.user_likes(user, None, from).await?;
            found += buckets.len();
            let page = buckets.into_iter().map(|b| (b, Kind::like())).collect();
            moved += hide_page(store, user, page, &pace).await?;
            (sweep.progress)(moved);
            match next {
                Some(n) => from = Some(n),
                None => break,
            }
        }
        let mut from = None;
        loop {
            let (page, next) = store.user_reactions(user, None, from).await?;
            found += page.len();
            moved += hide_page(store, user, page, &pace).await?;
            (sweep.progress)(moved);
            match next {
                Some(n) => from = Some(n),
                None => break,
            }
        }
        empty = if found == 0 { empty + 1 } else { 0 };
        if empty < sweep.empty_sweeps {
            tokio::time::sleep(sweep.pause).await;
        }
    }
    Ok(moved)
}

async fn hide_page<S: EraseStore>(
    store: &S,
    user: &UserId,
    page: Vec<(PostBucket, Kind)>,
    pace: &Pace,
) -> Result<usize, StoreError> {
    futures::stream::iter(page)
        .map(|(bucket, kind)| async move {
            pace.wait().await;
            store.hide(&bucket, user, &kind).await
        })
        .buffer_unordered(MOVE_CONCURRENCY)
        .try_fold(0, |n, moved| async move { Ok(n + usize::from(moved)) })
        .await
}

/// Brings every hidden like and reaction of the user back at its own time, sweeping until the
/// hidden listing stays empty. How many came back (one made again meanwhile stays as made, and
/// its hidden copy goes).
pub async fn unhide_user<S: EraseStore>(
    store: &S,
    user: &UserId,
    sweep: &Sweep<'_>,
) -> Result<usize, StoreError> {
    let mut back = 0;
    let mut empty = 0;
    let pace = Pace::new();
    while empty < sweep.empty_sweeps {
        let found = for_each_hidden(store, user, &pace, |bucket, kind| async move {
            store.unhide(&bucket, user, &kind).await
        })
        .await?;
        back += found.1;
        (sweep.progress)(back);
        empty = if found.0 == 0 { empty + 1 } else { 0 };
        if empty < sweep.empty_sweeps {
            tokio::time::sleep(sweep.pause).await;
        }
    }
    Ok(back)
}

/// Deletes what of the user's is hidden (a person's own erase while suspended), made at or
/// before `up_to` when given; how many the listing showed (a stale entry's delete does
/// nothing, as an erase's).
pub async fn delete_hidden<S: EraseStore>(
    store: &S,
    user: &UserId,
    up_to: Option<&str>,
) -> Result<usize, StoreError> {
    // Deletes, as an erase's: unpaced, as an erase's are.
    let (found, _) = for_each_hidden(store, user, &Pace::unpaced(), |bucket, kind| async move {
        store
            .delete_hidden(&bucket, user, &kind, up_to)
            .await
            .map(|()| true)
    })
    .await?;
    Ok(found)
}

/// Runs `act` on every hidden item one pass of the listing shows; (shown, acted).
async fn for_each_hidden<'a, S, F, Fut>(
    store: &'a S,
    user: &'a UserId,
    pace: &Pace,
    act: F,
) -> Result<(usize, usize), StoreError>
where
    S: EraseStore,
    F: Fn(PostBucket, Kind) -> Fut + Copy,
    Fut: std::future::Future<Output = Result<bool, StoreError>>,
{
    let (mut shown, mut acted) = (0, 0);
    let mut from: Option<Hidden<S::Resume>> = None;
    loop {
        let (page, next) = store.hidden(user, from).await?;
        shown += page.len();
        acted += futures::stream::iter(page)
            .map(|(bucket, kind)| async move {
                pace.wait().await;
                act(bucket, kind).await
            })
            .buffer_unordered(MOVE_CONCURRENCY)
            .try_fold(0, |n, did| async move { Ok(n + usize::from(did)) })
            .await?;
        match next {
            Some(n) => from = Some(n),
            None => return Ok((shown, acted)),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::erase::erase_user;
    use crate::ids::PostId;
    use crate::reaction::Kind;
    use crate::store::memory::MemoryLikes;
    use crate::store::{LikesAdmin, LikesStore, ReactionsStore};
    use crate::write_token::WriteToken;

    fn sweep() -> Sweep<'static> {
        Sweep {
            progress: &|_| {},
            empty_sweeps: 1,
            pause: Duration::ZERO,
            before: None,
        }
    }

    async fn counted(store: &MemoryLikes, post: &PostId) -> i64 {
        let mut n = 0;
        for bucket in PostBucket::all(post) {
            n += store.count_bucket(&bucket).await.expect("counted");
        }
        n
    }

    /// A heavy user's moves start no faster than `MOVES_PER_SECOND`, each way (paused time:
    /// the clock moves only as the sweeps wait).
    #[tokio::test(start_paused = true)]
    async fn a_heavy_users_moves_are_paced() {
        let store = MemoryLikes::default();
        let user = UserId::new_random();
        let n = 3 * MOVES_PER_SECOND as usize / 2;
        for _ in 0..n {
            let post = PostId::new_random();
            let at = crate::time::now_ts();
            store
                .like(&post, &user, &at, &WriteToken::random())
                .await
                .expect("liked");
        }
        let paced = Duration::from_secs_f64((n - 1) as f64 / f64::from(MOVES_PER_SECOND));
        let started = tokio::time::Instant::now();
        assert_eq!(hide_user(&store, &user, &sweep()).await.expect("hidden"), n);
        assert!(
            started.elapsed() >= paced,
            "hidden in {:?}",
            started.elapsed()
        );
        let started = tokio::time::Instant::now();
        assert_eq!(unhide_user(&store, &user, &sweep()).await.expect("back"), n);
        assert!(
            started.elapsed() >= paced,
            "restored in {:?}",
            started.elapsed()
        );
    }

    /// Hidden: gone from every count and listing, and nobody else's likes touched; restored:
    /// each back at its own time; a like the user made again meanwhile stays as made.
    #[tokio::test]
    async fn a_users_likes_and_reactions_go_out_of_sight_and_come_back_at_their_time() {
        let store = MemoryLikes::default();
        let (user, other) = (UserId::new_random(), UserId::new_random());
        let posts: Vec<PostId> = (0..3).map(|_| PostId::new_random()).collect();
        let love = Kind::parse("love").expect("a kind");
        let token = WriteToken::random;
        for (i, post) in posts.iter().enumerate() {
            let at = format!("2026-12-07T10:00:0{i}.000Z");
            store.like(post, &user, &at, &token()).await.expect("liked");
            store
                .like(post, &other, &at, &token())
                .await
                .expect("liked");
        }
        let loved_at = "2026-12-07T10:00:09.000Z";
        store
            .react(&posts[0], &user, &love, loved_at, &token())
            .await
            .expect("reacted");

        assert_eq!(hide_user(&store, &user, &sweep()).await.expect("hidden"), 4);
        for post in &posts {
            assert_eq!(
                counted(&store, post).await,
                1,
                "only the other's like counts"
            );
            assert_eq!(store.liked_at(post, &user).await.expect("read"), None);
        }
        let mine = store.likes_of_user(&user, 10, None).await.expect("listed");
        assert!(mine.items.is_empty());
        let likers = store
            .likers_of_post(&posts[0], 10, None)
            .await
            .expect("listed");
        assert_eq!(likers.items.len(), 1);
        assert_eq!(store.hidden(&user, None).await.expect("listed").0.len(), 4);

        // The user likes posts[1] again somehow (a write that raced the suspension).
        let again = "2026-12-07T11:00:00.000Z";
        store
            .like(&posts[1], &user, again, &token())
            .await
            .expect("liked");
        assert_eq!(
            unhide_user(&store, &user, &sweep())
                .await
                .expect("restored"),
            3
        );
        for (i, post) in posts.iter().enumerate() {
            assert_eq!(counted(&store, post).await, 2);
            let want = match i {
                1 => again.to_owned(),
                _ => format!("2026-12-07T10:00:0{i}.000Z"),
            };
            assert_eq!(store.liked_at(post, &user).await.expect("read"), Some(want));
        }
        assert!(store
            .hidden(&user, None)
            .await
            .expect("listed")
            .0
            .is_empty());
        let (reactions, _) = store
            .user_reactions(&user, None, None)
            .await
            .expect("listed");
        assert_eq!(
            reactions,
            vec![(PostBucket::for_like(&posts[0], &user), love)]
        );
    }

    /// An unlike that finds its like out of sight (it raced the suspension, or came while the
    /// restore ran) drops the hidden copy: the restore does not bring back what was removed.
    #[tokio::test]
    async fn an_unlike_of_a_hidden_like_is_not_undone_by_the_restore() {
        let store = MemoryLikes::default();
        let user = UserId::new_random();
        let (kept, removed) = (PostId::new_random(), PostId::new_random());
        for post in [&kept, &removed] {
            store
                .like(
                    post,
                    &user,
                    "2026-12-07T10:00:00.000Z",
                    &WriteToken::random(),
                )
                .await
                .expect("liked");
        }
        hide_user(&store, &user, &sweep()).await.expect("hidden");
        let changed = store
            .unlike(&removed, &user, &WriteToken::random())
            .await
            .expect("unliked");
        assert!(!changed, "nothing visible to remove");
        assert_eq!(
            unhide_user(&store, &user, &sweep())
                .await
                .expect("restored"),
            1
        );
        assert_eq!(store.liked_at(&removed, &user).await.expect("read"), None);
        assert!(store.liked_at(&kept, &user).await.expect("read").is_some());
    }

    /// A person's own erase while suspended takes their hidden likes too.
    #[tokio::test]
    async fn an_erase_takes_what_is_hidden() {
        let store = MemoryLikes::default();
        let user = UserId::new_random();
        let post = PostId::new_random();
        let at = "2026-12-07T10:00:00.000Z";
        store
            .like(&post, &user, at, &WriteToken::random())
            .await
            .expect("liked");
        hide_user(&store, &user, &sweep()).await.expect("hidden");
        erase_user(&store, &user, &sweep()).await.expect("erased");
        assert!(store
            .hidden(&user, None)
            .await
            .expect("listed")
            .0
            .is_empty());
        assert_eq!(unhide_user(&store, &user, &sweep()).await.expect("none"), 0);
        assert_eq!(counted(&store, &post).await, 0);
    }
}
