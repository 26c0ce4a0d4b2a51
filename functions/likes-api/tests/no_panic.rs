//! Property: whatever request arrives — any method, path, query and body, with or without
//! claims — the handler answers with a documented status and a JSON body, and never panics.
//! The stores are trait fakes: this is about the request path's own logic.

use std::collections::{HashMap, HashSet};

use lambda_http::request::LambdaRequest;
use likes_api::App;
use likes_core::{
    CountsRead, LikerPos, LikesStore, Page, PostBucket, PostId, StoreError, UserId, UserLikePos,
    WriteToken,
};
use likes_sim::apigw::ApiEvent;
use proptest::prelude::*;
use serde_json::{json, Value};

struct FakeLikes;

impl LikesStore for FakeLikes {
    async fn like(
        &self,
        _: &PostId,
        _: &UserId,
        _: &str,
        _: &WriteToken,
    ) -> Result<bool, StoreError> {
        Ok(true)
    }
    async fn unlike(&self, _: &PostId, _: &UserId, _: &WriteToken) -> Result<bool, StoreError> {
        Ok(false)
    }
    async fn liked_at(&self, _: &PostId, _: &UserId) -> Result<Option<String>, StoreError> {
        Ok(Some("2026-11-30T20:53:11.123Z".into()))
    }
    async fn likes_of_user(
        &self,
        user: &UserId,
        limit: usize,
        _: Option<UserLikePos>,
    ) -> Result<Page<UserLikePos>, StoreError> {
        let post = PostId::new_random();
        Ok(Page {
            items: vec![
                UserLikePos {
                    liked_at: "2026-11-30T20:53:11.123Z".into(),
                    post_bucket: PostBucket::for_like(&post, user),
                };
                limit.min(3)
            ],
            more: true,
        })
    }
    async fn likers_of_post(
        &self,
        _: &PostId,
        limit: usize,
        _: Option<LikerPos>,
    ) -> Result<Page<LikerPos>, StoreError> {
        Ok(Page {
            items: vec![
                LikerPos {
                    liked_at: "2026-11-30T20:53:11.123Z".into(),
                    user_id: UserId::new_random(),
                };
                limit.min(3)
            ],
            more: false,
        })
    }
    async fn liked_among(
        &self,
        _: &UserId,
        posts: &[PostId],
    ) -> Result<HashSet<PostId>, StoreError> {
        Ok(posts.iter().step_by(2).cloned().collect())
    }
}

struct FakeCounts;

impl CountsRead for FakeCounts {
    async fn post_count(&self, _: &PostId) -> Result<i64, StoreError> {
        Ok(-2)
    }
    async fn post_counts(&self, posts: &[PostId]) -> Result<HashMap<PostId, i64>, StoreError> {
        Ok(posts.iter().map(|p| (p.clone(), -2)).collect())
    }
}

const P: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("GET".to_owned()),
        Just("PUT".to_owned()),
        Just("DELETE".to_owned()),
        Just("POST".to_owned()),
        Just("HEAD".to_owned()),
        Just("OPTIONS".to_owned()),
        "[A-Z]{1,10}",
    ]
}

fn segment() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("posts".to_owned()),
        Just("like".to_owned()),
        Just("likes".to_owned()),
        Just("count".to_owned()),
        Just("users".to_owned()),
        Just("me".to_owned()),
        Just("summary".to_owned()),
        Just(P.to_owned()),
        Just(P.to_uppercase()),
        "[a-zA-Z0-9%._~-]{0,40}",
        "\\PC{0,20}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    prop::collection::vec(segment(), 0..6).prop_map(|s| format!("/{}", s.join("/")))
}

fn query() -> impl Strategy<Value = String> {
    let pair = prop_oneof![
        (0u32..200).prop_map(|n| format!("limit={n}")),
        "[a-zA-Z0-9_-]{0,60}".prop_map(|c| format!("cursor={c}")),
        Just(format!("post_ids={P},{P}")),
        "[a-f0-9,-]{0,120}".prop_map(|ids| format!("post_ids={ids}")),
        "[a-z]{1,8}=[^&#]{0,20}",
    ];
    prop::collection::vec(pair, 0..4).prop_map(|p| p.join("&"))
}

fn claims() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("7c9e6679-7425-40de-944b-e07fc1f90ae7".to_owned())),
        "\\PC{0,40}".prop_map(Some),
    ]
}

fn body() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        Just(None),
        Just(Some("{}".to_owned())),
        "\\PC{0,200}".prop_map(Some)
    ]
}

fn event(method: &str, path: &str, query: &str, sub: Option<&str>, body: Option<&str>) -> String {
    let mut e = ApiEvent::new(method, path).query(query);
    if let Some(sub) = sub {
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), sub.into());
        e = e.claims(claims);
    }
    if let Some(body) = body {
        e = e.body(body);
    }
    e.to_json().to_string()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn every_request_gets_a_documented_json_answer(
        m in method(), p in path(), q in query(), sub in claims(), b in body()
    ) {
        let raw = event(&m, &p, &q, sub.as_deref(), b.as_deref());
        let Ok(req) = serde_json::from_str::<LambdaRequest>(&raw) else {
            // Not an event API Gateway could send (e.g. an invalid method token).
            return Ok(());
        };
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let app = App::new(FakeLikes, FakeCounts);
        let resp = rt.block_on(likes_api::lambda::invoke(&app, req, lambda_http::Context::default()));
        let status = resp.status_code;
        prop_assert!([200, 204, 400, 401, 404, 405].contains(&status), "{status} for {m} {p}?{q}");
        let bytes: &[u8] = resp.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
        if status == 204 {
            // OPTIONS on a known path, and only that: no body, the path's methods in `Allow`.
            prop_assert_eq!(m.as_str(), "OPTIONS");
            prop_assert!(bytes.is_empty() && resp.headers.contains_key("allow"));
            return Ok(());
        }
        let v: Value = serde_json::from_slice(bytes).expect("JSON body");
        if status == 200 {
            // The fakes' negative count is never shown.
            if let Some(n) = v.get("like_count") {
                prop_assert_eq!(n, &json!(0));
            }
        } else {
            prop_assert!(v["error"]["code"].is_string(), "{v}");
            prop_assert!(v["error"]["message"].is_string(), "{v}");
        }
        if status == 405 {
            prop_assert!(resp.headers.contains_key("allow"));
        }
    }
}

#[tokio::test]
async fn options_needs_no_token_and_names_the_paths_methods() {
    let app = App::new(FakeLikes, FakeCounts);
    for (path, status, allow) in [
        (format!("/posts/{P}/like"), 204, Some("GET, PUT, DELETE")),
        ("/users/me/likes".to_owned(), 204, Some("GET, DELETE")),
        ("/likes/summary".to_owned(), 204, Some("GET")),
        ("/nowhere".to_owned(), 404, None),
    ] {
        let raw = event("OPTIONS", &path, "", None, None);
        let req: LambdaRequest = serde_json::from_str(&raw).expect("an API Gateway v2 event");
        let resp = likes_api::lambda::invoke(&app, req, lambda_http::Context::default()).await;
        assert_eq!(resp.status_code, status, "{path}");
        let got = resp.headers.get("allow").and_then(|v| v.to_str().ok());
        assert_eq!(got, allow, "{path}");
        if status == 204 {
            assert!(resp.body.is_none(), "{path}");
        }
    }
}

#[tokio::test]
async fn a_query_that_is_not_a_valid_uri_is_a_json_400_not_a_panic() {
    let raw = event(
        "GET",
        &format!("/posts/{P}/likes"),
        "limit=5&cursor={ü |}",
        Some("7c9e6679-7425-40de-944b-e07fc1f90ae7"),
        None,
    );
    let req: LambdaRequest = serde_json::from_str(&raw).expect("an API Gateway v2 event");
    let app = App::new(FakeLikes, FakeCounts);
    let resp = likes_api::lambda::invoke(&app, req, lambda_http::Context::default()).await;
    assert_eq!(resp.status_code, 400);
    let bytes: &[u8] = resp.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
    let v: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(v["error"]["code"], "invalid_request");
    assert_eq!(resp.headers["content-type"], "application/json");
}
