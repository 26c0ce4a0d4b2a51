//! The demo page, on its own origin (`http://127.0.0.1:<LIKES_DEMO_PORT>`): plain HTML and
//! JavaScript in `demo/`, compiled in, calling the API on the other port as any web page would,
//! through CORS. Besides the files, one route that exists only here: `GET /_local/token?user=<id>`,
//! a dev token from the local authorizer, standing in for the page's identity provider.

use std::convert::Infallible;
use std::sync::Arc;

use http::{header, HeaderValue, Method, StatusCode};
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use likes_core::policy::{Audience, Policies, Policy};
use likes_core::{PostId, UserId};
use serde_json::{json, Value};
use tokio::net::TcpListener;

use crate::error::LocalError;
use crate::jwt;

const INDEX: &str = include_str!("../demo/index.html");
const APP: &str = include_str!("../demo/app.js");
const REACTIONS: &str = include_str!("../demo/reactions.js");
const STYLE: &str = include_str!("../demo/style.css");

/// The demo's authors' policies (`LIKES_DEMO_POLICIES`): carol keeps the count and the likers of
/// "Learning the cello at 40" to herself; dave turned likes off on "Fixing a bike in the rain".
/// Dated early in the year, so that any policy put on the bus since wins.
pub const DEMO_POLICIES: [(&str, &str, bool, Audience); 2] = [
    ("demo-post-12", "carol", true, Audience::Author),
    ("demo-post-14", "dave", false, Audience::Public),
];

pub async fn seed_policies(store: &dyn Policies) -> Result<(), LocalError> {
    for (post, author, likes_on, hidden) in DEMO_POLICIES {
        let (post, author) = match (PostId::parse(post), UserId::parse(author)) {
            (Ok(p), Ok(a)) => (p, a),
            _ => {
                return Err(LocalError::Setup(format!(
                    "a demo policy's ids: {post}, {author}"
                )))
            }
        };
        let policy = Policy {
            author,
            likes_on,
            counts: hidden,
            likers: hidden,
        };
        store
            .decide(&post, &policy, "2026-01-01T00:00:00.000Z")
            .await
            .map_err(|e| LocalError::Setup(format!("the demo's policies: {e}")))?;
    }
    Ok(())
}

/// How long a demo token lasts: a session at the page.
const TOKEN_TTL_SECS: i64 = 3600;

pub struct Demo {
    pub auth: jwt::Authorizer,
    /// The API's base URL, as the page calls it.
    pub api: String,
}

fn respond(status: StatusCode, content_type: &'static str, body: Bytes) -> Response<Full<Bytes>> {
    let mut resp = Response::new(Full::new(body));
    *resp.status_mut() = status;
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    // A rebuilt stack serves new files: never keep old ones.
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

fn json_answer(status: StatusCode, body: &Value) -> Response<Full<Bytes>> {
    respond(status, "application/json", Bytes::from(body.to_string()))
}

fn error(status: StatusCode, code: &str, message: &str) -> Response<Full<Bytes>> {
    json_answer(
        status,
        &json!({"error": {"code": code, "message": message}}),
    )
}

/// `user`'s value in a query string, percent-decoded once. A `+` stays a `+` (an id may hold
/// one; `encodeURIComponent` sends it as `%2B` anyway).
fn user_param(query: &str) -> Option<String> {
    query
        .split('&')
        .filter_map(|pair| pair.split_once('='))
        .find(|(k, _)| *k == "user")
        .map(|(_, v)| {
            percent_encoding::percent_decode_str(v)
                .decode_utf8_lossy()
                .into_owned()
        })
}

impl Demo {
    pub fn serve_one(&self, method: &Method, path: &str, query: &str) -> Response<Full<Bytes>> {
        if method != Method::GET {
            let mut resp = error(
                StatusCode::METHOD_NOT_ALLOWED,
                "method_not_allowed",
                "the demo's files and token endpoint answer GET only",
            );
            resp.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET"));
            return resp;
        }
        match path {
            "/" | "/index.html" => respond(
                StatusCode::OK,
                "text/html; charset=utf-8",
                Bytes::from_static(INDEX.as_bytes()),
            ),
            "/app.js" => respond(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                Bytes::from_static(APP.as_bytes()),
            ),
            "/reactions.js" => respond(
                StatusCode::OK,
                "text/javascript; charset=utf-8",
                Bytes::from_static(REACTIONS.as_bytes()),
            ),
            "/style.css" => respond(
                StatusCode::OK,
                "text/css; charset=utf-8",
                Bytes::from_static(STYLE.as_bytes()),
            ),
            "/config.json" => json_answer(StatusCode::OK, &json!({ "api": self.api })),
            "/_local/token" => self.token(query),
            _ => error(
                StatusCode::NOT_FOUND,
                "not_found",
                &format!("the demo has no {path}"),
            ),
        }
    }

    /// A dev token for a user id in the API's id grammar; anything else is a 400.
    fn token(&self, query: &str) -> Response<Full<Bytes>> {
        let Some(user) = user_param(query) else {
            return error(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                "send ?user=<id>: 1 to 128 of A-Z a-z 0-9 . _ : | @ + = -",
            );
        };
        if let Err(e) = UserId::parse_field("user", &user) {
            return error(StatusCode::BAD_REQUEST, "invalid_request", &e.to_string());
        }
        match self.auth.issue(&user, TOKEN_TTL_SECS) {
            Ok(token) => json_answer(
                StatusCode::OK,
                &json!({ "user_id": user, "token": token, "expires_in": TOKEN_TTL_SECS }),
            ),
            Err(e) => error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal",
                &e.to_string(),
            ),
        }
    }
}

/// Serves until the process ends.
pub async fn serve(listener: TcpListener, demo: Arc<Demo>) {
    loop {
        let stream = match listener.accept().await {
            Ok((s, _)) => s,
            Err(e) => {
                tracing::warn!(error = %e, "demo: accept failed");
                continue;
            }
        };
        let demo = Arc::clone(&demo);
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let resp = demo.serve_one(
                    req.method(),
                    req.uri().path(),
                    req.uri().query().unwrap_or(""),
                );
                async move { Ok::<_, Infallible>(resp) }
            });
            if let Err(e) = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await
            {
                tracing::debug!(error = %e, "demo: connection ended with an error");
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn demo() -> Demo {
        Demo {
            auth: jwt::Authorizer {
                secret: "s".into(),
                issuer: jwt::DEFAULT_ISSUER.into(),
                audience: jwt::DEFAULT_AUDIENCE.into(),
            },
            api: "http://127.0.0.1:3000".into(),
        }
    }

    async fn body(resp: Response<Full<Bytes>>) -> (StatusCode, Value) {
        use http_body_util::BodyExt;
        let status = resp.status();
        let bytes = resp
            .into_body()
            .collect()
            .await
            .map(|c| c.to_bytes())
            .unwrap_or_default();
        (
            status,
            serde_json::from_slice(&bytes).unwrap_or(Value::Null),
        )
    }

    #[tokio::test]
    async fn a_token_is_issued_for_an_id_and_verifies() {
        let d = demo();
        let (status, v) =
            body(d.serve_one(&Method::GET, "/_local/token", "user=auth0%7Cabc")).await;
        assert_eq!(status, StatusCode::OK);
        assert_eq!(v["user_id"], "auth0|abc");
        let token = v["token"].as_str().unwrap();
        let verified = d.auth.verify(Some(&format!("Bearer {token}"))).unwrap();
        assert_eq!(verified.sub, "auth0|abc");
    }

    #[tokio::test]
    async fn no_token_for_what_is_not_an_id() {
        let d = demo();
        for query in ["", "user=", "user=a%20b", "user=%C3%BC", "other=x"] {
            let (status, v) = body(d.serve_one(&Method::GET, "/_local/token", query)).await;
            assert_eq!(status, StatusCode::BAD_REQUEST, "{query}");
            assert!(v["error"]["message"].is_string(), "{query}");
        }
        let (status, _) = body(d.serve_one(&Method::POST, "/_local/token", "user=a")).await;
        assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
    }

    #[tokio::test]
    async fn serves_the_page_its_files_and_the_apis_address() {
        let d = demo();
        let page = d.serve_one(&Method::GET, "/", "");
        assert_eq!(page.status(), StatusCode::OK);
        assert!(INDEX.contains("app.js") && INDEX.contains("style.css"));
        assert!(INDEX.contains("reactions.js"));
        let script = d.serve_one(&Method::GET, "/reactions.js", "");
        assert_eq!(script.status(), StatusCode::OK);
        let (_, v) = body(d.serve_one(&Method::GET, "/config.json", "")).await;
        assert_eq!(v["api"], "http://127.0.0.1:3000");
        let (status, _) = body(d.serve_one(&Method::GET, "/secrets", "")).await;
        assert_eq!(status, StatusCode::NOT_FOUND);
    }
}
