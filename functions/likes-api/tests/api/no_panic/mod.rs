//! Property: whatever request arrives — any method, path, query, headers and body, with or
//! without claims, whatever the stores answer — the handler answers with a status it documents,
//! in the form that status promises (a JSON body, or none for 204 and 304; `Allow`,
//! `Retry-After` and `ETag` where they belong), and never panics.
//!
//! The generator is weighted toward what clients really send: most paths are the API's routes
//! with valid or broken ids, most callers have a valid identity, and requests carry the
//! headers the API reads (`Idempotency-Key`, `If-None-Match`). A coverage test checks that the
//! cases reach every status, so that the property cannot silently test less.

mod fakes;

use std::collections::BTreeMap;

use fakes::Fail;
use lambda_http::request::LambdaRequest;
use likes_sim::apigw::ApiEvent;
use proptest::prelude::*;
use proptest::strategy::ValueTree;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use serde_json::Value;

const P: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";
const USER: &str = "7c9e6679-7425-40de-944b-e07fc1f90ae7";

/// Every status the API documents (docs/api.md).
const STATUSES: [i64; 13] = [
    200, 202, 204, 304, 400, 401, 404, 405, 422, 500, 501, 503, 507,
];

#[derive(Debug, Clone)]
struct Case {
    method: String,
    path: String,
    query: String,
    headers: Vec<(String, String)>,
    sub: Option<String>,
    body: Option<String>,
    fail: Option<Fail>,
    queue: bool,
    /// The deployment's reaction mode is `single`.
    single: bool,
}

fn method() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just("GET".to_owned()),
        3 => Just("PUT".to_owned()),
        3 => Just("DELETE".to_owned()),
        1 => Just("POST".to_owned()),
        1 => Just("HEAD".to_owned()),
        1 => Just("OPTIONS".to_owned()),
        1 => "[A-Z]{1,10}",
    ]
}

fn id() -> impl Strategy<Value = String> {
    prop_oneof![
        4 => Just(P.to_owned()),
        4 => "[a-z0-9]{1,12}(-[a-z0-9]{1,12}){0,3}",
        1 => Just(P.to_uppercase()),
        1 => "[a-zA-Z0-9%._~|@-]{0,140}",
        1 => "\\PC{0,20}",
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
        Just("reactions".to_owned()),
        Just("love".to_owned()),
        "[a-zA-Z0-9%._~-]{0,40}",
        "\\PC{0,20}",
    ]
}

/// A kind in a path: the deployment's (`fakes::KINDS`), encoded or not, or anything.
fn kind() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => Just("love".to_owned()),
        1 => Just("like".to_owned()),
        1 => Just("%2B1".to_owned()),
        1 => Just("angry".to_owned()),
        1 => "[a-zA-Z0-9%+_-]{0,40}",
    ]
}

fn path() -> impl Strategy<Value = String> {
    let routes = id().prop_flat_map(|p| {
        prop_oneof![
            Just(format!("/posts/{p}/like")),
            Just(format!("/posts/{p}/likes")),
            Just(format!("/posts/{p}/likes/count")),
            Just(format!("/posts/{p}/reactions")),
            reaction("GET", &p, "").prop_map(|(_, path)| path),
            Just("/users/me/likes".to_owned()),
            Just("/likes/summary".to_owned()),
        ]
    });
    let anything = prop::collection::vec(segment(), 0..6).prop_map(|s| format!("/{}", s.join("/")));
    prop_oneof![4 => routes, 1 => anything]
}

/// `method` on a reaction's path of post `p` (a kind from [`kind`]), with `tail` after it.
fn reaction(method: &str, p: &str, tail: &str) -> BoxedStrategy<(String, String)> {
    let (method, p, tail) = (method.to_owned(), p.to_owned(), tail.to_owned());
    kind()
        .prop_map(move |k| (method.clone(), format!("/posts/{p}/reactions/{k}{tail}")))
        .boxed()
}

/// A method and a path: mostly a route with one of its own methods, as clients send them;
/// otherwise any method on any path.
fn request_line() -> impl Strategy<Value = (String, String)> {
    let real = id().prop_flat_map(|p| {
        let like = format!("/posts/{p}/like");
        prop_oneof![
            3 => Just(("PUT".to_owned(), like.clone())),
            2 => Just(("DELETE".to_owned(), like.clone())),
            1 => Just(("GET".to_owned(), like)),
            1 => Just(("GET".to_owned(), format!("/posts/{p}/likes"))),
            1 => Just(("GET".to_owned(), format!("/posts/{p}/likes/count"))),
            1 => Just(("GET".to_owned(), "/users/me/likes".to_owned())),
            1 => Just(("DELETE".to_owned(), "/users/me/likes".to_owned())),
            1 => Just(("GET".to_owned(), "/likes/summary".to_owned())),
            2 => reaction("PUT", &p, ""),
            1 => reaction("DELETE", &p, ""),
            1 => Just(("GET".to_owned(), format!("/posts/{p}/reactions"))),
            1 => reaction("GET", &p, "/users"),
        ]
    });
    prop_oneof![3 => real, 2 => (method(), path())]
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

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    let header = prop_oneof![
        3 => "[A-Za-z0-9_-]{1,64}".prop_map(|k| ("Idempotency-Key".to_owned(), k)),
        1 => "[ -~]{0,90}".prop_map(|k| ("Idempotency-Key".to_owned(), k)),
        3 => Just(("If-None-Match".to_owned(), "*".to_owned())),
        1 => "[ -~]{0,40}".prop_map(|t| ("If-None-Match".to_owned(), t)),
        1 => Just(("Content-Type".to_owned(), "application/json".to_owned())),
        1 => ("[a-z-]{1,20}", "[ -~]{0,40}").prop_map(|(n, v)| (format!("x-{n}"), v)),
    ];
    prop::collection::vec(header, 0..3)
}

fn claims() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        1 => Just(None),
        6 => Just(Some(USER.to_owned())),
        2 => "[a-z0-9]{1,10}\\|[A-Za-z0-9._@-]{1,40}".prop_map(Some),
        1 => "\\PC{0,40}".prop_map(Some),
    ]
}

fn body() -> impl Strategy<Value = Option<String>> {
    prop_oneof![
        6 => Just(None),
        1 => Just(Some("{}".to_owned())),
        1 => Just(Some(r#"{"user_id":"someone-else"}"#.to_owned())),
        1 => "\\PC{0,200}".prop_map(Some),
    ]
}

fn fail() -> impl Strategy<Value = Option<Fail>> {
    prop_oneof![
        12 => Just(None),
        1 => Just(Some(Fail::Unavailable)),
        1 => Just(Some(Fail::OutcomeUnknown)),
        1 => Just(Some(Fail::Full)),
        1 => Just(Some(Fail::KeyReused)),
        1 => Just(Some(Fail::Internal)),
    ]
}

fn case() -> impl Strategy<Value = Case> {
    (
        (request_line(), query(), headers()),
        (claims(), body(), fail(), prop::bool::weighted(0.75)),
        prop::bool::ANY,
    )
        .prop_map(
            |(((method, path), query, headers), (sub, body, fail, queue), single)| Case {
                single,
                method,
                path,
                query,
                headers,
                sub,
                body,
                fail,
                queue,
            },
        )
}

impl Case {
    fn plain(method: &str, path: &str, query: &str, sub: Option<&str>) -> Self {
        Case {
            method: method.to_owned(),
            path: path.to_owned(),
            query: query.to_owned(),
            headers: Vec::new(),
            sub: sub.map(str::to_owned),
            body: None,
            fail: None,
            queue: true,
            single: false,
        }
    }
}

fn event(c: &Case) -> String {
    let mut e = ApiEvent::new(&c.method, &c.path).query(&c.query);
    for (name, value) in &c.headers {
        e = e.header(name, value);
    }
    if let Some(sub) = &c.sub {
        let mut claims = serde_json::Map::new();
        claims.insert("sub".into(), sub.as_str().into());
        e = e.claims(claims);
    }
    if let Some(body) = &c.body {
        e = e.body(body.as_str());
    }
    e.to_json().to_string()
}

/// Runs one case and checks its answer; the status, or what is wrong with the answer.
fn check(c: &Case) -> Result<i64, String> {
    let raw = event(c);
    let req = serde_json::from_str::<LambdaRequest>(&raw)
        .map_err(|e| format!("the generator made an event API Gateway could not send: {e}"))?;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    let app = fakes::app(c.fail, c.queue, c.single);
    let resp = rt.block_on(likes_api::lambda::invoke(
        &app,
        req,
        lambda_http::Context::default(),
    ));
    let status = resp.status_code;
    let has = |h: &str| resp.headers.contains_key(h);
    let bytes: &[u8] = resp.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
    let fail = |why: &str| Err(format!("{status} for {c:?}: {why}"));
    if !STATUSES.contains(&status) {
        return fail("not a documented status");
    }
    // Only a count and a summary may be cached, and say how; everything else is `no-store`.
    let cache_control = resp
        .headers
        .get("cache-control")
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default();
    let cacheable = c.path.ends_with("/likes/count") || c.path == "/likes/summary";
    if cache_control.is_empty() || (!cacheable && cache_control != "no-store") {
        return fail(&format!("Cache-Control {cache_control:?}"));
    }
    match status {
        204 if c.method != "OPTIONS" || !bytes.is_empty() || !has("allow") => {
            return fail("a 204 answers OPTIONS only, with Allow and no body")
        }
        304 if c.method != "GET" || !bytes.is_empty() || !has("etag") => {
            return fail("a 304 answers a GET with If-None-Match, with its ETag and no body")
        }
        204 | 304 => return Ok(status),
        _ => {}
    }
    let v: Value = serde_json::from_slice(bytes).map_err(|_| format!("{status}: not JSON"))?;
    match status {
        200 | 202 => {
            // The fakes' negative counts are never shown, of any kind.
            let negative = v.to_string().contains("\":-");
            if negative {
                return fail("a negative count was shown");
            }
        }
        _ if !(v["error"]["code"].is_string() && v["error"]["message"].is_string()) => {
            return fail("an error without its code and message")
        }
        405 if !has("allow") => return fail("a 405 without Allow"),
        503 if !has("retry-after") => return fail("a 503 without Retry-After"),
        500 if c.fail != Some(Fail::Internal) => return fail("a 500 without a store bug"),
        507 if c.fail != Some(Fail::Full) => return fail("a 507 without a full bucket"),
        422 if c.fail != Some(Fail::KeyReused) => return fail("a 422 without a reused key"),
        501 if c.queue => return fail("a 501 with an erase queue"),
        _ => {}
    }
    Ok(status)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]
    #[test]
    fn every_request_gets_a_documented_answer(c in case()) {
        if let Err(why) = check(&c) {
            prop_assert!(false, "{}", why);
        }
    }
}

/// The generator reaches every status, and most cases are real requests (a valid like among
/// them), so that the property above is not vacuous. Fixed seed: the same cases every run.
#[test]
fn the_cases_reach_every_status_the_api_answers() {
    let config = Config::default();
    let rng = TestRng::from_seed(RngAlgorithm::ChaCha, &[7; 32]);
    let mut runner = TestRunner::new_with_rng(config, rng);
    let strategy = case();
    let mut seen: BTreeMap<i64, usize> = BTreeMap::new();
    let n = 2000;
    let mut valid_likes = 0;
    for _ in 0..n {
        let c = strategy.new_tree(&mut runner).expect("a case").current();
        let status = check(&c).expect("a documented answer");
        *seen.entry(status).or_default() += 1;
        if status == 200 && c.method == "PUT" {
            valid_likes += 1;
        }
    }
    println!("{n} cases by status: {seen:?}; accepted likes: {valid_likes}");
    for s in STATUSES {
        assert!(seen.contains_key(&s), "no case answered {s}: {seen:?}");
    }
    assert!(
        valid_likes * 50 >= n,
        "only {valid_likes} of {n} cases were accepted likes: {seen:?}"
    );
}

#[tokio::test]
async fn options_needs_no_token_and_names_the_paths_methods() {
    let app = fakes::app(None, true, false);
    for (path, status, allow) in [
        (format!("/posts/{P}/like"), 204, Some("GET, PUT, DELETE")),
        ("/users/me/likes".to_owned(), 204, Some("GET, DELETE")),
        ("/likes/summary".to_owned(), 204, Some("GET")),
        ("/nowhere".to_owned(), 404, None),
    ] {
        let raw = event(&Case::plain("OPTIONS", &path, "", None));
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
    let raw = event(&Case::plain(
        "GET",
        &format!("/posts/{P}/likes"),
        "limit=5&cursor={ü |}",
        Some(USER),
    ));
    let req: LambdaRequest = serde_json::from_str(&raw).expect("an API Gateway v2 event");
    let app = fakes::app(None, true, false);
    let resp = likes_api::lambda::invoke(&app, req, lambda_http::Context::default()).await;
    assert_eq!(resp.status_code, 400);
    let bytes: &[u8] = resp.body.as_ref().map(|b| b.as_ref()).unwrap_or_default();
    let v: Value = serde_json::from_slice(bytes).unwrap();
    assert_eq!(v["error"]["code"], "invalid_request");
    assert_eq!(resp.headers["content-type"], "application/json");
}
