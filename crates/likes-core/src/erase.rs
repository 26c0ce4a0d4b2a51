//! Erasing likes: a person's (when they ask, or leave) and a deleted post's. Deletes go
//! through the stream like any unlike, so the counts follow by themselves. Both are idempotent
//! and resumable: run again, they delete what is left.

use std::future::Future;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};

use crate::bucket::PostBucket;
use crate::control::is_control;
use crate::ids::{PostId, UserId};
use crate::reaction::Kind;
use crate::store::StoreError;
pub use crate::suspend::Hidden;

/// A page of a user's reactions from the by-reactor index (bucket and kind of each), and
/// where the next page starts.
pub type Reactions<R> = (Vec<(PostBucket, Kind)>, Option<R>);

/// What an erase needs of the Likes table.
pub trait EraseStore: Send + Sync {
    /// Where a listing of a user's likes resumes.
    type Resume: Send;

    /// One page of the user's likes, from the by-user index (eventually consistent): the
    /// buckets holding them, and where the next page starts. With `up_to`, only likes made at
    /// or before it.
    fn user_likes(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> impl Future<Output = Result<(Vec<PostBucket>, Option<Self::Resume>), StoreError>> + Send;

    /// Deletes the user's like in the bucket if it was made at or before `t` (checked on the
    /// item itself); whether it deleted one.
    fn delete_like_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        t: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the user's likes in these buckets, whenever they were made.
    fn delete_likes(
        &self,
        user: &UserId,
        buckets: Vec<PostBucket>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One page of the user's reactions other than likes, from the by-reactor index
    /// (eventually consistent): the bucket and kind of each. With `up_to`, only those made at or
    /// before it.
    fn user_reactions(
        &self,
        user: &UserId,
        up_to: Option<&str>,
        from: Option<Self::Resume>,
    ) -> impl Future<Output = Result<Reactions<Self::Resume>, StoreError>> + Send;

    /// Deletes the user's reaction of `kind` in the bucket if it was made at or before `t`.
    fn delete_reaction_made_by(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        t: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes these reactions of the user, whenever they were made.
    fn delete_reactions(
        &self,
        user: &UserId,
        found: Vec<(PostBucket, Kind)>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// The sort keys of one page of everything in the bucket, likes and control items, read
    /// consistently.
    fn bucket_page(
        &self,
        bucket: &PostBucket,
    ) -> impl Future<Output = Result<Vec<String>, StoreError>> + Send;

    /// Deletes these items of the bucket.
    fn delete_items(
        &self,
        bucket: &PostBucket,
        sort_keys: Vec<String>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;

    /// One page of the user's hidden likes and reactions (`crate::suspend`), from the user
    /// indexes under `crate::control::hidden_owner` (eventually consistent): the bucket and
    /// kind of each. Likes first, then reactions: `from` says where the listing is.
    fn hidden(
        &self,
        user: &UserId,
        from: Option<Hidden<Self::Resume>>,
    ) -> impl Future<Output = Result<Reactions<Hidden<Self::Resume>>, StoreError>> + Send;

    /// Moves the user's like or reaction of `kind` in the bucket out of sight, in one step:
    /// gone from its key (the stream's `REMOVE`, counted as an unlike), kept with its time
    /// under its hidden key. Whether it moved (false: there is none).
    fn hide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Brings a hidden like or reaction back under its key at its own time, in one step
    /// (counted as a like), unless the user made it again meanwhile: then the newer one stays
    /// and the hidden copy goes. Whether it came back.
    fn unhide(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;

    /// Deletes the user's hidden like or reaction of `kind` in the bucket (a person's own
    /// erase while suspended), if it was made at or before `up_to` when given.
    fn delete_hidden(
        &self,
        bucket: &PostBucket,
        user: &UserId,
        kind: &Kind,
        up_to: Option<&str>,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
}

/// How an erase proceeds: what it reports, and how long the index must stay empty.
#[derive(Clone, Copy)]
pub struct Sweep<'a> {
    /// Called with the number of items deleted so far.
    pub progress: &'a (dyn Fn(usize) + Sync),
    /// The user's index is eventually consistent: an erase ends only after this many
    /// consecutive sweeps found nothing, `pause` apart.
    pub empty_sweeps: u32,
    pub pause: Duration,
    /// Only likes made at or before this time (`liked_at`, the index's sort key); all if none.
    pub before: Option<&'a str>,
}

/// How many conditional deletes run at once.
const DELETE_CONCURRENCY: usize = 16;

/// Deletes the likes in `buckets` made at or before `t`; how many it deleted. The index can
/// still show a like that was since unliked and made again after `t` (its entry lags the
/// table): the condition, checked on the item itself, keeps such a like. `progress` hears the
/// running total (`base` + these) after every delete, so that a caller stopped mid-page knows
/// how far it got.
async fn delete_made_before<S: EraseStore>(
    store: &S,
    user: &UserId,
    found: Vec<(PostBucket, Kind)>,
    t: &str,
    base: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<usize, StoreError> {
    futures::stream::iter(found)
        .map(|(bucket, kind)| async move {
            match kind.is_like() {
                true => store.delete_like_made_by(&bucket, user, t).await,
                false => store.delete_reaction_made_by(&bucket, user, &kind, t).await,
            }
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_fold(0, |n, deleted| async move {
            let n = n + usize::from(deleted);
            if deleted {
                progress(base + n);
            }
            Ok(n)
        })
        .await
}

/// Which of a user's index an erase sweeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Swept {
    /// The likes, through the by-user index.
    Likes,
    /// The other reactions, through the by-reactor index.
    Reactions,
}

/// One page of what `swept`'s index shows of the user: bucket and kind.
async fn page_of<S: EraseStore>(
    store: &S,
    swept: Swept,
    user: &UserId,
    up_to: Option<&str>,
    from: Option<S::Resume>,
) -> Result<Reactions<S::Resume>, StoreError> {
    match swept {
        Swept::Likes => {
            let (buckets, next) = store.user_likes(user, up_to, from).await?;
            Ok((
                buckets.into_iter().map(|b| (b, Kind::like())).collect(),
                next,
            ))
        }
        Swept::Reactions => store.user_reactions(user, up_to, from).await,
    }
}

/// Deletes every like and every other reaction of `user`, found through the by-user and
/// by-reactor indexes. Returns how many it deleted (without `before`, how many the indexes
/// showed: a stale entry's delete is a no-op). The indexes lag the table, so it sweeps until
/// both stay empty.
pub async fn erase_user<S: EraseStore>(
    store: &S,
    user: &UserId,
    sweep: &Sweep<'_>,
) -> Result<usize, StoreError> {
    let mut deleted = 0;
    let mut empty = 0;
    while empty < sweep.empty_sweeps {
        let mut found = 0;
        for swept in [Swept::Likes, Swept::Reactions] {
            let mut from = None;
            loop {
                let (page, next) = page_of(store, swept, user, sweep.before, from).await?;
                found += page.len();
                deleted += match sweep.before {
                    Some(t) => {
                        delete_made_before(store, user, page, t, deleted, sweep.progress).await?
                    }
                    None => {
                        let n = page.len();
                        let (likes, others): (Vec<_>, Vec<_>) =
                            page.into_iter().partition(|(_, k)| k.is_like());
                        let buckets = likes.into_iter().map(|(b, _)| b).collect();
                        store.delete_likes(user, buckets).await?;
                        store.delete_reactions(user, others).await?;
                        n
                    }
                };
                (sweep.progress)(deleted);
                match next {
                    Some(n) => from = Some(n),
                    None => break,
                }
            }
        }
        // A suspended person's likes and reactions, out of sight, are theirs too.
        let hidden = crate::suspend::delete_hidden(store, user, sweep.before).await?;
        found += hidden;
        deleted += hidden;
        empty = if found == 0 { empty + 1 } else { 0 };
        if empty < sweep.empty_sweeps {
            tokio::time::sleep(sweep.pause).await;
        }
    }
    Ok(deleted)
}

/// How long until `settle` after `since` (an RFC 3339 time), if that is still ahead.
pub fn settling(since: &str, settle: Duration) -> Option<Duration> {
    let settled = crate::time::parse_ts(since)? + chrono::TimeDelta::from_std(settle).ok()?;
    (settled - chrono::Utc::now())
        .to_std()
        .ok()
        .filter(|w| !w.is_zero())
}

/// The one erase of a person, for the worker and the admin tool alike: [`erase_user`], then,
/// once `settle` has passed since `since` (the request, or the account's deletion), a last
/// [`erase_user`]. A like stamped before `since` may still be on its way (the API writes within
/// its bound, `crate::erase_job::SETTLE`, and the index follows): the last sweep finds it.
/// `sweep.progress` hears the running total across both.
pub async fn erase_user_settled<S: EraseStore>(
    store: &S,
    user: &UserId,
    sweep: &Sweep<'_>,
    since: &str,
    settle: Duration,
) -> Result<usize, StoreError> {
    let first = erase_user(store, user, sweep).await?;
    let Some(wait) = settling(since, settle) else {
        return Ok(first);
    };
    tokio::time::sleep(wait).await;
    let more = |n: usize| (sweep.progress)(first + n);
    let again = Sweep {
        progress: &more,
        ..*sweep
    };
    Ok(first + erase_user(store, user, &again).await?)
}

/// Deletes every item of `post`'s 16 buckets — its likes, and any control items (request
/// markers, recount fences and windows). Returns how many likes it deleted.
pub async fn erase_post<S: EraseStore>(
    store: &S,
    post: &PostId,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<usize, StoreError> {
    let mut deleted = 0;
    for bucket in PostBucket::all(post) {
        loop {
            let keys = store.bucket_page(&bucket).await?;
            if keys.is_empty() {
                break;
            }
            deleted += keys.iter().filter(|k| !is_control(k)).count();
            store.delete_items(&bucket, keys).await?;
            progress(deleted);
        }
    }
    Ok(deleted)
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::control::{fence_key, Phase};
    use crate::store::memory::MemoryLikes;
    use crate::store::{LikesAdmin, LikesStore};
    use crate::write_token::WriteToken;

    fn post(raw: &str) -> PostId {
        PostId::parse(raw).expect("a post id")
    }

    fn user(raw: &str) -> UserId {
        UserId::parse(raw).expect("a user id")
    }

    async fn like(store: &MemoryLikes, p: &str, u: &str, at: &str, token: &WriteToken) {
        assert!(store
            .like(&post(p), &user(u), at, token)
            .await
            .expect("liked"));
    }

    #[tokio::test]
    async fn a_users_erase_keeps_likes_made_after_the_request_and_reports_progress() {
        let store = MemoryLikes::default();
        let token = WriteToken::random();
        for i in 0..250 {
            let at = format!("2026-12-01T10:00:{:02}.000Z", i % 50);
            like(&store, &format!("p{i}"), "u1", &at, &token).await;
        }
        like(&store, "later", "u1", "2026-12-01T11:00:00.000Z", &token).await;
        like(&store, "p1", "u2", "2026-12-01T10:00:00.000Z", &token).await;
        let seen = Mutex::new(Vec::new());
        let progress = |n: usize| seen.lock().expect("lock").push(n);
        let sweep = Sweep {
            progress: &progress,
            empty_sweeps: 2,
            pause: Duration::ZERO,
            before: Some("2026-12-01T10:59:59.999Z"),
        };
        assert_eq!(
            erase_user(&store, &user("u1"), &sweep)
                .await
                .expect("erased"),
            250
        );
        let left: Vec<(String, String)> = store
            .pairs()
            .into_iter()
            .map(|(p, u)| (p.to_string(), u.to_string()))
            .collect();
        assert_eq!(
            left,
            vec![
                ("later".to_owned(), "u1".to_owned()),
                ("p1".to_owned(), "u2".to_owned())
            ]
        );
        let seen = seen.into_inner().expect("lock");
        assert_eq!(seen.last(), Some(&250));
        assert!(seen.windows(2).all(|w| w[0] <= w[1]), "{seen:?}");
    }

    #[tokio::test]
    async fn a_posts_erase_deletes_its_likes_and_control_items_and_counts_the_likes() {
        let store = MemoryLikes::default();
        let named = WriteToken::from_key("k1").expect("a key");
        for u in 0..40 {
            like(
                &store,
                "gone",
                &format!("u{u}"),
                "2026-12-01T10:00:00.000Z",
                &named,
            )
            .await;
        }
        like(&store, "kept", "u1", "2026-12-01T10:00:00.000Z", &named).await;
        let gone = post("gone");
        let bucket = PostBucket::all(&gone).next().expect("a bucket");
        store
            .put_fence(&bucket, "job1", Phase::Begin)
            .await
            .expect("a fence");
        assert_eq!(
            erase_post(&store, &gone, &|_| {}).await.expect("erased"),
            40
        );
        assert_eq!(store.pairs().len(), 1);
        for b in PostBucket::all(&gone) {
            assert!(store.bucket_page(&b).await.expect("read").is_empty());
        }
        assert!(!store
            .recount_items(&bucket)
            .await
            .expect("read")
            .contains(&fence_key("job1", Phase::Begin)));
    }
}
