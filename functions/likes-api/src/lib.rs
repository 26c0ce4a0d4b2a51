//! The likes HTTP API: API Gateway HTTP API (payload v2) events in, JSON responses out.
//!
//! [`App::handle`] is the whole request path, written against the store traits so that it can be
//! driven by a constructed event in tests and by the local API Gateway stand-in. Each route is one
//! method below; `routes` maps requests to them and `request` reads what they need.

pub mod blocks;
mod builder;
pub mod count_cache;
mod count_reads;
pub mod cursor;
mod erase;
pub mod error;
mod etag;
pub mod homes;
pub mod identity;
pub mod lambda;
pub mod liker_ids;
pub mod limits;
mod listings;
pub mod metrics;
pub mod policies;
pub mod policy_tier;
mod reactions;
mod refusals;
pub mod request;
pub mod routes;
pub mod shared_counts;
mod summary;
pub mod suspended;
mod ttl;

use std::sync::Arc;

use http::{header, HeaderValue, StatusCode};
use lambda_http::{Body, Request, RequestExt, Response};
use likes_core::erase_job::{EraseQueue, ErasureRequests};
use likes_core::time::now_ts;
use likes_core::{
    CountsRead, Kind, Mode, Page, PostId, Reactions, ReactionsStore, StoreError, UserId,
};
use serde_json::{json, Value};

pub use crate::count_cache::{CountCache, Counts};
pub use crate::error::ApiError;
pub use crate::identity::Auth;
use crate::liker_ids::LikerIds;
use crate::limits::{Class, Limiter};
use crate::request::{expect_no_body, request_id, write_token};
use crate::routes::{route, Route};
use likes_aws::env::SummaryMine;

pub use crate::request::{DEFAULT_LIMIT, MAX_LIMIT, MAX_SUMMARY_IDS};

pub struct App<L, C> {
    pub likes: L,
    pub counts: C,
    /// Off by default; the Lambda entry and the local stack turn it on (`LIKES_COUNT_CACHE_MS`).
    pub cache: CountCache,
    /// Where `DELETE /users/me/likes` sends its job; without one that route answers 501.
    pub erase: Option<Arc<dyn EraseQueue>>,
    /// Each user's pending erase job: a request while one is pending joins it. Without it,
    /// every request queues a job.
    pub erasures: Option<Arc<dyn ErasureRequests>>,
    /// The function's name, the dimension of its metrics.
    pub function_name: String,
    /// Who verified the caller's token: API Gateway's authorizer (the default) or this function.
    pub auth: Auth,
    /// What one caller may ask; no limits unless given (`with_limits`).
    pub limiter: Limiter,
    /// How "who liked" names the likers: their `sub`s unless given (`with_liker_ids`).
    pub liker_ids: LikerIds,
    /// The reaction kinds and mode: the like only unless given (`with_reactions`).
    pub reactions: Reactions,
    /// How a summary reads what the caller holds: strongly unless given (`with_summary_mine`).
    pub summary_mine: SummaryMine,
    /// Refuses a suspended user's writes; nobody is refused unless given (`with_suspensions`).
    pub suspended: Option<suspended::Gate>,
    /// The posts' policies; every post public and taking likes unless given (`with_policies`).
    pub policies: policies::PolicyGate,
    /// Who blocks whom; nobody unless given (`with_blocks`).
    pub blocks: blocks::BlockGate,
    /// The count tier every environment shares; none unless given (`with_shared_counts`).
    pub shared: Option<shared_counts::SharedCounts>,
    /// In two regions, the homes served here; every caller served unless given (`with_homes`).
    pub homes: Option<homes::HomeGate>,
}

/// A JSON answer no cache may keep (`no-store`): the caller's own data, a write's result, an
/// error. The two answers a cache may keep replace it with their own policy (`etag`).
pub fn json_response(status: u16, body: &Value) -> Response<Body> {
    let mut resp = Response::new(Body::Text(body.to_string()));
    *resp.status_mut() = StatusCode::from_u16(status).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    let headers = resp.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

pub fn error_response(err: &ApiError) -> Response<Body> {
    let mut resp = json_response(err.status, &err.body());
    if let Some(secs) = err.retry_after {
        resp.headers_mut()
            .insert(header::RETRY_AFTER, HeaderValue::from(secs));
    }
    if let Some(allow) = err.allow {
        resp.headers_mut()
            .insert(header::ALLOW, HeaderValue::from_static(allow));
    }
    resp
}

/// Counts are eventually consistent sums of per-bucket rows. A negative sum means the rows
/// drifted (the aggregator has already logged and alarmed it); clients see 0, not a negative.
pub(crate) fn public_count(sum: i64) -> i64 {
    sum.max(0)
}

/// `{"items": [...], "next_cursor": ...}`: the cursor resumes after the last item, and is null
/// when nothing follows.
pub(crate) fn page_json<T>(
    page: &Page<T>,
    cursor: impl Fn(&T) -> String,
    item: impl Fn(&T) -> Value,
) -> Value {
    page_json_kept(page, |_| true, cursor, item)
}

/// [`page_json`] of the items `keep` keeps; the cursor still resumes after the page's last
/// item, kept or not, so that a page of left-out items never ends the listing.
pub(crate) fn page_json_kept<T>(
    page: &Page<T>,
    keep: impl Fn(&T) -> bool,
    cursor: impl Fn(&T) -> String,
    item: impl Fn(&T) -> Value,
) -> Value {
    let next = match (page.more, page.items.last()) {
        (true, Some(last)) => Some(cursor(last)),
        _ => None,
    };
    let items: Vec<Value> = page.items.iter().filter(|i| keep(i)).map(item).collect();
    json!({ "items": items, "next_cursor": next })
}

pub(crate) enum Failure {
    Api(ApiError),
    Store(StoreError),
}

impl From<ApiError> for Failure {
    fn from(e: ApiError) -> Self {
        Failure::Api(e)
    }
}

impl From<StoreError> for Failure {
    fn from(e: StoreError) -> Self {
        Failure::Store(e)
    }
}

/// A route's success: a fresh 200, a 200 a cache may keep (with its `Cache-Control`), a 202
/// for work accepted to be done later, or a 204 to `OPTIONS` naming the path's methods.
enum Reply {
    Fresh(Value),
    Cacheable(Value, etag::Policy),
    Accepted(Value),
    NoContent(&'static str),
}

/// What every route answers on success: a 200 with a JSON body.
pub(crate) type Answer = Result<Value, Failure>;

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// Handles one request. Never panics and never fails: every outcome is a response.
    pub async fn handle(&self, req: Request) -> Response<Body> {
        let req = &req;
        match self.dispatch(req).await {
            Ok(Reply::Fresh(body)) => json_response(200, &body),
            Ok(Reply::Accepted(body)) => json_response(202, &body),
            Ok(Reply::Cacheable(body, cache_control)) => etag::answer(req, &body, cache_control),
            Ok(Reply::NoContent(allow)) => {
                let mut resp = Response::new(Body::Empty);
                *resp.status_mut() = StatusCode::NO_CONTENT;
                let headers = resp.headers_mut();
                headers.insert(header::ALLOW, HeaderValue::from_static(allow));
                headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
                resp
            }
            Err(Failure::Api(err)) => error_response(&err),
            Err(Failure::Store(StoreError::Unavailable(detail))) => {
                let request_id = request_id(req);
                tracing::warn!(%request_id, %detail, "DynamoDB unavailable; answering 503");
                error_response(&ApiError::unavailable())
            }
            Err(Failure::Store(StoreError::OutcomeUnknown(detail))) => {
                let request_id = request_id(req);
                tracing::warn!(%request_id, %detail, "a write's outcome is unknown; answering 503");
                error_response(&ApiError::outcome_unknown())
            }
            Err(Failure::Store(StoreError::CollectionFull(detail))) => {
                let request_id = request_id(req);
                tracing::error!(%request_id, %detail, "a bucket is full (10 GB); answering 507");
                println!("{}", metrics::collection_full_line(&self.function_name));
                error_response(&ApiError::post_full())
            }
            Err(Failure::Store(StoreError::KeyReused)) => error_response(&ApiError::key_reused()),
            Err(Failure::Store(StoreError::Internal(detail))) => {
                let request_id = request_id(req);
                tracing::error!(%request_id, %detail, "store error; answering 500");
                error_response(&ApiError::internal(&request_id))
            }
        }
    }

    async fn dispatch(&self, req: &Request) -> Result<Reply, Failure> {
        let routed = route(req.method(), req.raw_http_path());
        match &routed {
            // A preflight carries no token (the template's OPTIONS route has no authorizer).
            Ok(Route::Options(allow)) => return Ok(Reply::NoContent(allow)),
            // 404 and 405 say nothing about the caller's data; a bad id is only reported to a
            // caller who proved who they are.
            Err(e) if e.status != 400 => return Err(e.clone().into()),
            _ => {}
        }
        let claim = self.homes.as_ref().map(homes::HomeGate::claim);
        let caller = self.auth.caller(req, claim).await?;
        let me = caller.user;
        let routed = routed?;
        self.admit(&routed, &me)?;
        if let Some(gate) = &self.homes {
            gate.admit(caller.claim.as_deref()).await?;
        }
        let written = match &routed {
            Route::Like(post)
            | Route::Unlike(post)
            | Route::React(post, _)
            | Route::Unreact(post, _) => Some(post.clone()),
            _ => None,
        };
        self.refusal(&routed, &me).await?;
        // This environment's own feeds see the post's new count once counted: marked as the
        // write starts (a read meanwhile may miss it) and again as it ends (it may have taken
        // its retries, and the aggregator's lag starts only then).
        if let Some(post) = &written {
            self.cache.written(post);
        }
        let reply = self.serve(req, routed, &me).await;
        if let Some(post) = &written {
            self.cache.written(post);
        }
        reply
    }

    /// One admitted request of `me`, by its route.
    async fn serve(&self, req: &Request, routed: Route, me: &UserId) -> Result<Reply, Failure> {
        let fresh = Reply::Fresh;
        match routed {
            Route::Like(post) => self.like(req, &post, me).await.map(fresh),
            Route::Unlike(post) => self.unlike(req, &post, me).await.map(fresh),
            Route::GetLike(post) => self.get_like(&post, me).await.map(fresh),
            // Counts are eventually consistent: a second-old answer is as good as a new one. A
            // summary holds the caller's own likes, so only the caller's cache may keep it.
            Route::Count(post) => {
                let (answer, per_caller) = self.count_as_shown(&post, me).await?;
                let policy = if per_caller {
                    etag::SUMMARY
                } else {
                    etag::COUNT
                };
                Ok(Reply::Cacheable(answer, policy))
            }
            Route::MyLikes => self.my_likes(req, me).await.map(fresh),
            Route::Likers(post) => self.likers(req, &post, me).await.map(fresh),
            Route::Summary => Ok(Reply::Cacheable(
                self.summary(req, me).await?,
                etag::SUMMARY,
            )),
            Route::EraseMine => self.erase_mine(req, me).await.map(Reply::Accepted),
            Route::React(post, kind) => self.react(req, &post, me, &kind).await.map(fresh),
            Route::Unreact(post, kind) => self.unreact(req, &post, me, &kind).await.map(fresh),
            Route::Reactions(post) => self.reactions_as_shown(&post, me).await.map(fresh),
            Route::Reactors(post, kind) => self.reactors(req, &post, &kind, me).await.map(fresh),
            Route::Options(allow) => Ok(Reply::NoContent(allow)),
        }
    }

    /// Spends the request's tokens, before it costs a DynamoDB request: a like or unlike
    /// spends one of the caller's writes and one of its flips of that post.
    fn admit(&self, route: &Route, me: &UserId) -> Result<(), ApiError> {
        let asks: &[(Class, Option<&PostId>)] = match route {
            Route::Like(post)
            | Route::Unlike(post)
            | Route::React(post, _)
            | Route::Unreact(post, _) => &[(Class::Writes, None), (Class::Flips, Some(post))],
            Route::GetLike(_) | Route::Count(_) | Route::Reactions(_) => &[(Class::Reads, None)],
            Route::MyLikes | Route::Likers(_) | Route::Summary | Route::Reactors(..) => {
                &[(Class::Lists, None)]
            }
            Route::EraseMine => &[(Class::Erase, None)],
            Route::Options(_) => &[],
        };
        self.limiter
            .admit_all(me, asks)
            .map_err(|r| ApiError::rate_limited(&r))
    }

    async fn like(&self, req: &Request, post: &PostId, me: &UserId) -> Answer {
        // In `single` mode a like replaces the caller's other reaction, as any kind does.
        let (changed, _) = match self.reactions.mode {
            Mode::Multi => {
                expect_no_body(req)?;
                let token = write_token(req)?;
                (self.likes.like(post, me, &now_ts(), &token).await?, None)
            }
            Mode::Single => self.put_reaction(req, post, me, &Kind::like()).await?,
        };
        Ok(json!({ "post_id": post, "user_id": me, "liked": true, "changed": changed }))
    }

    async fn unlike(&self, req: &Request, post: &PostId, me: &UserId) -> Answer {
        expect_no_body(req)?;
        let token = write_token(req)?;
        let changed = self.likes.unlike(post, me, &token).await?;
        Ok(json!({ "post_id": post, "user_id": me, "liked": false, "changed": changed }))
    }

    async fn get_like(&self, post: &PostId, me: &UserId) -> Answer {
        let liked_at = self.likes.liked_at(post, me).await?;
        Ok(json!({
            "post_id": post,
            "user_id": me,
            "liked": liked_at.is_some(),
            "liked_at": liked_at,
        }))
    }

    async fn count(&self, post: &PostId) -> Answer {
        let n = match self.cache.likes(post, count_cache::Age::Route) {
            Some(n) => n,
            None if self.reactions.kinds.like_only() => {
                let n = self.counts.post_count(post).await?;
                self.cache.put(post, Counts::Likes(n));
                n
            }
            // The same item's every kind, at the same cost: what the summaries and reaction
            // reads of the post need next, so that together they read it once per TTL.
            None => {
                let kinds = std::sync::Arc::new(self.counts.kind_counts(post).await?);
                let counts = Counts::Kinds(kinds);
                self.cache.put(post, counts.clone());
                counts.likes()
            }
        };
        Ok(json!({ "post_id": post, "like_count": public_count(n) }))
    }
}
