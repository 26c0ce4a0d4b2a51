//! Trait fakes of the stores and the erase queue: this property is about the request path's own
//! logic. Each fails, when told, the way the real adapters fail, so that every status the API
//! can answer is reachable.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::Arc;

use likes_api::App;
use likes_core::erase_job::{EraseJob, EraseQueue, Submitted};
use likes_core::{
    CountsRead, Kind, Kinds, LikerPos, LikesStore, Mode, Page, PostBucket, PostId, Reacted,
    Reactions, ReactionsStore, StoreError, UserId, UserLikePos, WriteToken,
};

/// How the stores fail in one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fail {
    Unavailable,
    OutcomeUnknown,
    Full,
    KeyReused,
    Internal,
}

impl Fail {
    fn error(self) -> StoreError {
        match self {
            Fail::Unavailable => StoreError::Unavailable("throttled".into()),
            Fail::OutcomeUnknown => StoreError::OutcomeUnknown("cut".into()),
            Fail::Full => StoreError::CollectionFull("10 GB".into()),
            Fail::KeyReused => StoreError::KeyReused,
            Fail::Internal => StoreError::Internal("denied".into()),
        }
    }

    /// What a read sees of the same failure (a read has no effect to be unsure about, and
    /// only writes can fill a bucket or reuse a key).
    fn read_error(self) -> StoreError {
        match self {
            Fail::Internal => self.error(),
            _ => StoreError::Unavailable("throttled".into()),
        }
    }
}

const AT: &str = "2026-11-30T20:53:11.123Z";

pub struct FakeLikes(pub Option<Fail>);

impl FakeLikes {
    fn write(&self, changed: bool) -> Result<bool, StoreError> {
        self.0.map_or(Ok(changed), |f| Err(f.error()))
    }

    fn read<T>(&self, ok: T) -> Result<T, StoreError> {
        self.0.map_or(Ok(ok), |f| Err(f.read_error()))
    }
}

impl LikesStore for FakeLikes {
    async fn like(
        &self,
        _: &PostId,
        _: &UserId,
        _: &str,
        _: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write(true)
    }
    async fn unlike(&self, _: &PostId, _: &UserId, _: &WriteToken) -> Result<bool, StoreError> {
        self.write(false)
    }
    async fn liked_at(&self, _: &PostId, _: &UserId) -> Result<Option<String>, StoreError> {
        self.read(Some(AT.into()))
    }
    async fn likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        _: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        let post = PostId::new_random();
        let item = UserLikePos {
            liked_at: AT.into(),
            post_bucket: PostBucket::for_like(&post, user),
        };
        self.read(Page {
            items: vec![item; limit.min(3)],
            more: true,
        })
    }
    async fn likers_of_post(
        &self,
        _: &PostId,
        limit: usize,
        _: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        let item = LikerPos {
            liked_at: AT.into(),
            user_id: UserId::new_random(),
        };
        self.read(Page {
            items: vec![item; limit.min(3)],
            more: false,
        })
    }
    async fn likers_among(
        &self,
        _: &PostId,
        users: &[UserId],
    ) -> Result<Vec<LikerPos>, StoreError> {
        let liker = |u: &UserId| LikerPos {
            liked_at: AT.into(),
            user_id: u.clone(),
        };
        self.read(users.iter().step_by(2).map(liker).collect())
    }
    async fn liked_among(
        &self,
        _: &UserId,
        posts: &[PostId],
    ) -> Result<HashSet<PostId>, StoreError> {
        self.read(posts.iter().step_by(2).cloned().collect())
    }
}

impl ReactionsStore for FakeLikes {
    async fn react(
        &self,
        _: &PostId,
        _: &UserId,
        _: &Kind,
        _: &str,
        _: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write(true)
    }
    async fn unreact(
        &self,
        _: &PostId,
        _: &UserId,
        _: &Kind,
        _: &WriteToken,
    ) -> Result<bool, StoreError> {
        self.write(false)
    }
    async fn react_only(
        &self,
        _: &PostId,
        _: &UserId,
        _: &Kind,
        _: &str,
        _: &WriteToken,
    ) -> Result<Reacted, StoreError> {
        let changed = self.write(true)?;
        Ok(Reacted {
            changed,
            replaced: Some(Kind::like()),
        })
    }
    async fn reactions_of(&self, _: &PostId, _: &UserId) -> Result<Vec<Kind>, StoreError> {
        self.read(vec![Kind::like()])
    }
    async fn reacted_among(
        &self,
        _: &UserId,
        posts: &[PostId],
        kinds: &Kinds,
    ) -> Result<HashMap<PostId, Vec<Kind>>, StoreError> {
        let all: Vec<Kind> = kinds.iter().cloned().collect();
        self.read(
            posts
                .iter()
                .step_by(2)
                .map(|p| (p.clone(), all.clone()))
                .collect(),
        )
    }
    async fn held_since(
        &self,
        _: &UserId,
        _: &str,
        _: &Kinds,
        _: usize,
    ) -> Result<Option<HashMap<PostId, Vec<Kind>>>, StoreError> {
        self.read(None)
    }
    async fn reactors_of_post(
        &self,
        post: &PostId,
        _: &Kind,
        limit: usize,
        after: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        self.likers_of_post(post, limit, after).await
    }
}

/// Counts that drifted below zero: the API must never show one.
pub struct FakeCounts(pub Option<Fail>);

impl CountsRead for FakeCounts {
    async fn post_count(&self, _: &PostId) -> Result<i64, StoreError> {
        self.0.map_or(Ok(-2), |f| Err(f.read_error()))
    }
    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        let counts = posts.iter().map(|p| (p.clone(), -2)).collect();
        self.0.map_or(Ok(counts), |f| Err(f.read_error()))
    }
    async fn kind_counts(&self, _: &PostId) -> Result<BTreeMap<String, i64>, StoreError> {
        let counts = BTreeMap::from([("like".to_owned(), -2), ("love".to_owned(), -1)]);
        self.0.map_or(Ok(counts), |f| Err(f.read_error()))
    }
    async fn kind_counts_among(
        &self,
        posts: &[PostId],
    ) -> Result<HashMap<PostId, BTreeMap<String, i64>>, StoreError> {
        let one = BTreeMap::from([("like".to_owned(), -2), ("love".to_owned(), -1)]);
        let counts = posts.iter().map(|p| (p.clone(), one.clone())).collect();
        self.0.map_or(Ok(counts), |f| Err(f.read_error()))
    }
}

struct FakeQueue(Option<Fail>);

impl EraseQueue for FakeQueue {
    fn submit<'a>(&'a self, _: &'a EraseJob) -> Submitted<'a> {
        let answer = self.0.map_or(Ok(()), |f| Err(f.error()));
        Box::pin(async move { answer })
    }

    fn submit_after<'a>(&'a self, job: &'a EraseJob, _: std::time::Duration) -> Submitted<'a> {
        self.submit(job)
    }

    fn forward<'a>(&'a self, _: &'a str, _: std::time::Duration) -> Submitted<'a> {
        let answer = self.0.map_or(Ok(()), |f| Err(f.error()));
        Box::pin(async move { answer })
    }
}

/// The reaction kinds of the fakes' deployment.
pub const KINDS: &str = "like,love,+1";

/// The API over the fakes, all failing as `fail` says; an erase queue only if `queue`; in
/// `single` reaction mode if `single`.
pub fn app(fail: Option<Fail>, queue: bool, single: bool) -> App<FakeLikes, FakeCounts> {
    let reactions = Reactions {
        kinds: Kinds::parse(KINDS).expect("kinds"),
        mode: if single { Mode::Single } else { Mode::Multi },
    };
    let app = App::new(FakeLikes(fail), FakeCounts(fail)).with_reactions(reactions);
    if queue {
        app.with_erase_queue(Arc::new(FakeQueue(fail)))
    } else {
        app
    }
}
