//! A real OpenID provider for the lean profile's tests: `tests/oidc/provider.mjs`, which runs
//! node-oidc-provider (OpenID Certified; the exact version pinned in `tests/oidc/package-lock.json`)
//! on a loopback port of its own, one per test, stopped when dropped. Tokens come from its own
//! token endpoint; its keys rotate by its own controls. `npm ci --prefix tests/oidc` installs it
//! (`make test` and `.ci/run` do).

use std::process::Stdio;

use base64::Engine as _;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper_util::client::legacy::{connect::HttpConnector, Client};
use hyper_util::rt::TokioExecutor;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The audience of every token it issues: the app's client id, as Cognito's and Okta's tokens
/// carry theirs. ID tokens are for the same client id.
pub const AUDIENCE: &str = "likes-web";
/// The discovery document's path, and where this provider publishes its keys (`jwks_uri`).
pub const DISCOVERY_PATH: &str = "/.well-known/openid-configuration";
pub const JWKS_PATH: &str = "/jwks";

#[derive(Debug, Clone, Copy)]
pub enum Alg {
    Rs256,
    Es256,
}

pub struct OidcProvider {
    issuer: String,
    client: Client<HttpConnector, Full<Bytes>>,
    _child: Child,
}

fn dir() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/../oidc").to_owned()
}

impl OidcProvider {
    /// Starts the provider and waits until it listens. Panics, saying what to run, when node or
    /// the provider's packages are missing: a test that needs it must not pass without it.
    pub async fn start() -> Self {
        let dir = dir();
        assert!(
            std::path::Path::new(&format!("{dir}/node_modules/oidc-provider")).exists(),
            "tests/oidc has no node_modules: run `npm ci --prefix tests/oidc` (make test and .ci/run do)"
        );
        let mut child = Command::new("node")
            .arg("provider.mjs")
            .current_dir(&dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("node starts (Node 20 or later is needed)");
        let stdout = child.stdout.take().expect("piped stdout");
        let mut lines = BufReader::new(stdout).lines();
        let first = tokio::time::timeout(std::time::Duration::from_secs(30), lines.next_line())
            .await
            .expect("the provider listens within 30 s")
            .expect("its output")
            .expect("a first line");
        let started: Value = serde_json::from_str(&first).expect("a JSON first line");
        let issuer = started["issuer"].as_str().expect("issuer").to_owned();
        // Its later notices are drained, so a full pipe never stops it.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        Self {
            issuer,
            client: Client::builder(TokioExecutor::new()).build_http(),
            _child: child,
        }
    }

    pub fn issuer(&self) -> &str {
        &self.issuer
    }

    async fn call(&self, method: &str, path: &str, user: Option<&str>, form: &str) -> Value {
        let mut request = http::Request::builder()
            .method(method)
            .uri(format!("{}{path}", self.issuer))
            .header("content-type", "application/x-www-form-urlencoded");
        if let Some(user) = user {
            let basic = base64::engine::general_purpose::STANDARD.encode(format!("{user}:secret"));
            request = request.header("authorization", format!("Basic {basic}"));
        }
        let request = request
            .body(Full::new(Bytes::from(form.to_owned())))
            .expect("a request");
        let response = self
            .client
            .request(request)
            .await
            .expect("the provider answers");
        let status = response.status();
        let body = response
            .into_body()
            .collect()
            .await
            .expect("a body")
            .to_bytes();
        let value: Value = serde_json::from_slice(&body).expect("a JSON answer");
        assert!(status.is_success(), "{method} {path}: {status} {value}");
        value
    }

    /// An access token (a JWT, `typ: at+jwt`) for `user` from the token endpoint: the client
    /// credentials grant, the client id being the user.
    pub async fn access_token(&self, user: &str, alg: Alg) -> String {
        let resource = match alg {
            Alg::Rs256 => "urn:likes:rs256",
            Alg::Es256 => "urn:likes:es256",
        };
        let form = format!("grant_type=client_credentials&scope=likes&resource={resource}");
        let answer = self.call("POST", "/token", Some(user), &form).await;
        answer["access_token"]
            .as_str()
            .expect("access_token")
            .to_owned()
    }

    /// An ID token (`typ: JWT`, `aud` the app's client id) for `user`, through the CIBA grant:
    /// the app asks, the user approves at once, the app collects the tokens.
    pub async fn id_token(&self, user: &str) -> String {
        let form = format!("scope=openid&login_hint={user}");
        let asked = self
            .call("POST", "/backchannel", Some(AUDIENCE), &form)
            .await;
        let id = asked["auth_req_id"].as_str().expect("auth_req_id");
        let form = format!("grant_type=urn:openid:params:grant-type:ciba&auth_req_id={id}");
        let answer = self.call("POST", "/token", Some(AUDIENCE), &form).await;
        answer["id_token"].as_str().expect("id_token").to_owned()
    }

    /// Publishes a new RS256 and ES256 key and signs with them from now on; the old ones stay
    /// published. Returns the published kids, newest first.
    pub async fn rotate(&self) -> Vec<String> {
        kids(self.call("POST", "/_test/rotate", None, "").await)
    }

    /// Unpublishes every key but the newest pair.
    pub async fn withdraw(&self) -> Vec<String> {
        kids(self.call("POST", "/_test/withdraw", None, "").await)
    }

    /// Requests the provider has answered at `path`.
    pub async fn hits(&self, path: &str) -> u64 {
        let stats = self.call("GET", "/_test/stats", None, "").await;
        stats[path].as_u64().unwrap_or(0)
    }
}

fn kids(answer: Value) -> Vec<String> {
    answer["kids"]
        .as_array()
        .expect("kids")
        .iter()
        .filter_map(|k| k.as_str().map(str::to_owned))
        .collect()
}

/// The `kid` in a token's header.
pub fn kid(token: &str) -> String {
    let header = token.split('.').next().unwrap_or_default();
    let json = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(header)
        .expect("a base64url header");
    let header: Value = serde_json::from_slice(&json).expect("a JSON header");
    header["kid"].as_str().expect("a kid").to_owned()
}
