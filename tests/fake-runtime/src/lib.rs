//! The AWS Lambda Runtime API, played on loopback: a function binary built with
//! `lambda_runtime` polls `GET …/invocation/next`, gets the events pushed here, and posts its
//! responses back. Tests use it to run the real `bootstrap` binaries — their `main`, config from
//! the environment, runtime loop and serialisation — and to time a cold start (process spawn to
//! first poll for work).

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::Notify;

const PREFIX: &str = "/2018-06-01/runtime";

/// What a function answered for one invocation.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Response(Value),
    Error(Value),
}

/// The trace header of an invocation X-Ray did not sample (Lambda sends one with every
/// invocation when tracing is on).
pub const UNSAMPLED: &str =
    "Root=1-00000000-000000000000000000000000;Parent=0000000000000000;Sampled=0";

#[derive(Default)]
struct State {
    queue: VecDeque<(String, Value, String)>,
    outcomes: HashMap<String, Outcome>,
    first_poll: Option<Instant>,
    init_error: Option<String>,
}

#[derive(Clone)]
pub struct FakeRuntime {
    addr: std::net::SocketAddr,
    state: Arc<Mutex<State>>,
    work: Arc<Notify>,
}

fn reply(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut r = Response::new(Full::new(Bytes::from(body)));
    *r.status_mut() = status;
    r
}

impl FakeRuntime {
    pub async fn start() -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0").await?;
        let rt = FakeRuntime {
            addr: listener.local_addr()?,
            state: Arc::default(),
            work: Arc::default(),
        };
        let server = rt.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let server = server.clone();
                tokio::spawn(async move {
                    let svc = service_fn(move |req| {
                        let server = server.clone();
                        async move { Ok::<_, Infallible>(server.route(req).await) }
                    });
                    let _ = http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), svc)
                        .await;
                });
            }
        });
        Ok(rt)
    }

    /// The value for `AWS_LAMBDA_RUNTIME_API`.
    pub fn api(&self) -> String {
        self.addr.to_string()
    }

    /// Queues an invocation, not sampled for X-Ray; returns its request id.
    pub fn push(&self, event: Value) -> String {
        self.push_traced(event, UNSAMPLED)
    }

    /// Queues an invocation with this `Lambda-Runtime-Trace-Id` (an X-Ray tracing header).
    pub fn push_traced(&self, event: Value, trace: &str) -> String {
        let id = uuid::Uuid::new_v4().to_string();
        self.lock()
            .queue
            .push_back((id.clone(), event, trace.to_owned()));
        self.work.notify_waiters();
        self.work.notify_one();
        id
    }

    /// Waits for the function's answer to `id`.
    pub async fn outcome(&self, id: &str, within: Duration) -> Option<Outcome> {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if let Some(o) = self.lock().outcomes.get(id) {
                return Some(o.clone());
            }
            if let Some(e) = &self.lock().init_error {
                return Some(Outcome::Error(Value::String(e.clone())));
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        None
    }

    /// When the function first asked for work: the end of its init phase.
    pub fn first_poll(&self) -> Option<Instant> {
        self.lock().first_poll
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    async fn route(&self, req: Request<Incoming>) -> Response<Full<Bytes>> {
        let path = req.uri().path().to_owned();
        let method = req.method().clone();
        let body = req
            .into_body()
            .collect()
            .await
            .map(|b| b.to_bytes())
            .unwrap_or_default();
        let Some(rest) = path.strip_prefix(PREFIX) else {
            return reply(StatusCode::NOT_FOUND, String::new());
        };
        match (method, rest) {
            (Method::GET, "/invocation/next") => self.next().await,
            (Method::POST, "/init/error") => {
                self.lock().init_error = Some(String::from_utf8_lossy(&body).into_owned());
                reply(StatusCode::ACCEPTED, "{}".into())
            }
            (Method::POST, rest) => {
                let parts: Vec<&str> = rest.split('/').collect();
                let value: Value = serde_json::from_slice(&body)
                    .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&body).into_owned()));
                match parts.as_slice() {
                    ["", "invocation", id, "response"] => {
                        self.lock()
                            .outcomes
                            .insert((*id).to_owned(), Outcome::Response(value));
                    }
                    ["", "invocation", id, "error"] => {
                        self.lock()
                            .outcomes
                            .insert((*id).to_owned(), Outcome::Error(value));
                    }
                    _ => return reply(StatusCode::NOT_FOUND, String::new()),
                }
                reply(StatusCode::ACCEPTED, "{}".into())
            }
            _ => reply(StatusCode::NOT_FOUND, String::new()),
        }
    }

    /// Long-polls for the next queued event, as the real Runtime API does.
    async fn next(&self) -> Response<Full<Bytes>> {
        {
            let mut s = self.lock();
            s.first_poll.get_or_insert_with(Instant::now);
        }
        loop {
            let notified = self.work.notified();
            if let Some((id, event, trace)) = self.lock().queue.pop_front() {
                let deadline_ms = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map(|d| d.as_millis() + 30_000)
                    .unwrap_or(0);
                let mut r = reply(StatusCode::OK, event.to_string());
                let h = r.headers_mut();
                let mut set = |k: &'static str, v: String| {
                    if let Ok(v) = http::HeaderValue::from_str(&v) {
                        h.insert(k, v);
                    }
                };
                set("lambda-runtime-aws-request-id", id);
                set("lambda-runtime-deadline-ms", deadline_ms.to_string());
                set(
                    "lambda-runtime-invoked-function-arn",
                    "arn:aws:lambda:us-east-1:123456789012:function:local".into(),
                );
                set("lambda-runtime-trace-id", trace);
                set("content-type", "application/json".into());
                return r;
            }
            notified.await;
        }
    }
}

/// A function binary running against a [`FakeRuntime`]; killed on drop. Its stdout and stderr
/// lines are collected for assertions.
pub struct Function {
    child: Child,
    pub spawned_at: Instant,
    pub output: Arc<Mutex<Vec<String>>>,
}

impl Function {
    /// Starts `binary` with the Lambda environment variables pointing at `runtime`, plus `env`.
    pub fn spawn<I, K, V>(binary: &Path, runtime: &FakeRuntime, env: I) -> std::io::Result<Self>
    where
        I: IntoIterator<Item = (K, V)>,
        K: AsRef<std::ffi::OsStr>,
        V: AsRef<std::ffi::OsStr>,
    {
        let mut cmd = Command::new(binary);
        cmd.env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("AWS_LAMBDA_RUNTIME_API", runtime.api())
            .env("AWS_LAMBDA_FUNCTION_NAME", "local")
            .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
            .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
            .env("AWS_LAMBDA_LOG_STREAM_NAME", "local")
            .env("AWS_LAMBDA_LOG_GROUP_NAME", "local")
            .envs(env)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        let spawned_at = Instant::now();
        let mut child = cmd.spawn()?;
        let output = Arc::new(Mutex::new(Vec::new()));
        if let Some(out) = child.stdout.take() {
            collect(out, output.clone());
        }
        if let Some(err) = child.stderr.take() {
            collect(err, output.clone());
        }
        Ok(Self {
            child,
            spawned_at,
            output,
        })
    }

    pub fn lines(&self) -> Vec<String> {
        self.output.lock().map(|o| o.clone()).unwrap_or_default()
    }

    pub fn id(&self) -> Option<u32> {
        self.child.id()
    }

    /// Prints the figures a test of this function measures: the cold start (spawn to the first
    /// poll for work) and peak resident memory so far.
    pub fn report(&self, runtime: &FakeRuntime, binary: &Path) {
        if let Some(first) = runtime.first_poll() {
            let init = first.saturating_duration_since(self.spawned_at);
            println!(
                "cold start, spawn to first poll for work: {init:?} ({})",
                binary.display()
            );
        }
        if let Some(kib) = self.peak_rss_kib() {
            println!("peak resident memory so far: {} MiB", kib / 1024);
        }
    }

    /// Peak resident memory so far (Linux `VmHWM`), in KiB: what the function's memory setting
    /// must cover.
    pub fn peak_rss_kib(&self) -> Option<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.id()?)).ok()?;
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
    }
}

fn collect<R: tokio::io::AsyncRead + Unpin + Send + 'static>(r: R, into: Arc<Mutex<Vec<String>>>) {
    tokio::spawn(async move {
        let mut lines = BufReader::new(r).lines();
        while let Ok(Some(line)) = lines.next_line().await {
            if let Ok(mut v) = into.lock() {
                v.push(line);
            }
        }
    });
}

/// The function binary a test runs: the path in the environment variable `var` if set (a
/// relative path is taken from the workspace root, where `target/` usually is, not from the
/// package directory cargo runs tests in), else `built` (the `CARGO_BIN_EXE_…` cargo built for
/// the test).
pub fn binary_under_test(var: &str, built: &str) -> std::path::PathBuf {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    std::env::var_os(var)
        .filter(|v| !v.is_empty())
        .map(|v| root.join(v))
        .unwrap_or_else(|| std::path::PathBuf::from(built))
}
