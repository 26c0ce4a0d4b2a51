//! What the tests of the local stack share: starting `likes-local` (and, when a test needs to
//! stop it, its emulator) on free ports, plain HTTP/1.1 requests, dev tokens.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

mod emulator;
pub use emulator::{Emulator, Proxy};

pub const SECRET: &str = "e2e-secret";

pub fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

fn collect(child: &mut Child) -> Arc<Mutex<String>> {
    let log = Arc::new(Mutex::new(String::new()));
    let pipes: Vec<Box<dyn Read + Send>> = vec![
        Box::new(child.stdout.take().expect("stdout")),
        Box::new(child.stderr.take().expect("stderr")),
    ];
    for pipe in pipes {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
    }
    log
}

pub(crate) fn terminate(child: &mut Child) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    let deadline = Instant::now() + Duration::from_secs(10);
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
}

#[derive(Debug, Default, Clone)]
pub struct Options {
    pub fail_first_writes: usize,
    /// Use this emulator instead of the stack's own.
    pub endpoint: Option<String>,
    pub chaos_seed: Option<u64>,
    pub state_dir: Option<PathBuf>,
    /// `LIKES_ALLOWED_ORIGINS` (the demo page's origin is allowed whatever this says).
    pub allowed_origins: Option<String>,
    /// `LIKES_PUBLISHED_EVENTS` (unset: `none`, and the events mapping does not run).
    pub published_events: Option<String>,
    /// `LIKES_LIMIT_*` settings; unset: `LIKES_CALLER_LIMITS=off`, for tests that make many
    /// requests as one user.
    pub limits: Vec<(&'static str, String)>,
    /// Other settings, as `make dev` reads them (`LIKES_REACTION_KINDS`, …).
    pub env: Vec<(&'static str, String)>,
}

pub struct Stack {
    child: Child,
    pub port: u16,
    /// The demo page's port: a free one, so that stacks in parallel never share one.
    pub demo_port: u16,
    pub log: Arc<Mutex<String>>,
}

impl Stack {
    pub fn start(opts: &Options) -> Self {
        Self::start_on(free_port(), opts)
    }

    pub fn start_on(port: u16, opts: &Options) -> Self {
        let demo_port = free_port();
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_likes-local"));
        cmd.env("LIKES_PORT", port.to_string())
            .env("LIKES_DEMO_PORT", demo_port.to_string())
            .env(
                "LIKES_ALLOWED_ORIGINS",
                opts.allowed_origins.clone().unwrap_or_default(),
            )
            .env_remove("LIKES_MOTO_SERVER")
            .env("LIKES_DEV_JWT_SECRET", SECRET)
            .env(
                "LIKES_LOCAL_FAIL_FIRST_WRITES",
                opts.fail_first_writes.to_string(),
            )
            .env("NO_COLOR", "1")
            .env_remove("LIKES_DYNAMODB_ENDPOINT")
            .env_remove("LIKES_LOCAL_CHAOS")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(e) = &opts.endpoint {
            cmd.env("LIKES_DYNAMODB_ENDPOINT", e);
        }
        if let Some(seed) = opts.chaos_seed {
            cmd.env("LIKES_LOCAL_CHAOS", seed.to_string());
        }
        // Tests of other things publish no events: the emulator answers one request at a time.
        cmd.env(
            "LIKES_PUBLISHED_EVENTS",
            opts.published_events.as_deref().unwrap_or("none"),
        );
        cmd.env_remove("LIKES_CALLER_LIMITS");
        // No demo policies unless a test asks: the others' posts follow the defaults.
        cmd.env("LIKES_DEMO_POLICIES", "off");
        if opts.limits.is_empty() {
            cmd.env("LIKES_CALLER_LIMITS", "off");
        }
        for (name, value) in opts.limits.iter().chain(&opts.env) {
            cmd.env(name, value);
        }
        let state = opts.state_dir.clone().unwrap_or_else(|| {
            std::env::temp_dir().join(format!("likes-local-{}", uuid::Uuid::new_v4().simple()))
        });
        cmd.env("LIKES_LOCAL_STATE_DIR", state);
        let mut child = cmd.spawn().expect("likes-local starts");
        let log = collect(&mut child);
        let stack = Stack {
            child,
            port,
            demo_port,
            log,
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            if let Ok((200, _)) = http(port, "GET", "/healthz", None) {
                return stack;
            }
            assert!(
                Instant::now() < deadline,
                "the stack did not become healthy:\n{}",
                stack.log.lock().unwrap()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// SIGKILL: the stack dies mid-work, as a crashed host would (its emulator, if the test
    /// owns it, keeps everything).
    pub fn crash(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// The like events the local bus delivered, oldest first (`GET /_local/events`).
    pub fn events(&self) -> Vec<Value> {
        http(self.port, "GET", "/_local/events", None)
            .ok()
            .and_then(|(_, v)| v["events"].as_array().cloned())
            .unwrap_or_default()
    }

    /// The stack's lab (`GET /_local/lab`): its endpoint, and every IAM decision it made.
    pub fn lab(&self) -> Value {
        http(self.port, "GET", "/_local/lab", None)
            .map(|(_, v)| v)
            .unwrap_or(Value::Null)
    }

    /// Arms a fault in the stack's lab (`POST /_local/lab/faults`; `likes_local::lab`'s rules).
    pub fn arm_fault(&self, rule: &Value) {
        let (s, b) = request(
            self.port,
            "POST",
            "/_local/lab/faults",
            None,
            &[],
            rule.to_string().as_bytes(),
        )
        .expect("the lab");
        assert_eq!(s, 200, "{b}");
    }

    /// Disarms every fault of the lab (`DELETE /_local/lab/faults`): an outage that ends.
    pub fn clear_faults(&self) {
        let (s, b) =
            request(self.port, "DELETE", "/_local/lab/faults", None, &[], b"").expect("the lab");
        assert_eq!(s, 200, "{b}");
    }

    /// Whether the lab has seen `identity` call `action` on a resource ending in `suffix` (it
    /// records each distinct decision; a transaction's by the actions of its items, as IAM).
    pub fn lab_saw(&self, identity: &str, action: &str, suffix: &str) -> bool {
        self.lab()["decided"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|d| {
                d["identity"] == identity
                    && d["action"] == action
                    && d["resource"].as_str().is_some_and(|r| r.ends_with(suffix))
            })
    }

    /// The calls the lab refused: a role of the template that does not allow what its code
    /// does.
    pub fn denied(&self) -> Vec<Value> {
        self.lab()["decided"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|d| !d["denied"].is_null())
            .cloned()
            .collect()
    }

    /// What the local mapping did and the faults it injected.
    pub fn stats(&self) -> Value {
        http(self.port, "GET", "/_local/stats", None)
            .map(|(_, v)| v)
            .unwrap_or(Value::Null)
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        // SIGTERM, so that the stack stops its emulator on the way out.
        terminate(&mut self.child);
    }
}

/// One HTTP/1.1 request over a fresh connection.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
) -> std::io::Result<(u16, Value)> {
    request(port, method, path, token, &[], b"")
}

/// One HTTP/1.1 request with extra headers and a body over a fresh connection.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<(u16, Value)> {
    exchange(port, method, path, token, headers, body).map(|(status, _, body)| (status, body))
}

/// An answer: its status, its headers (names in lower case), its JSON body.
pub type Exchange = (u16, Vec<(String, String)>, Value);

/// [`request`], with the answer's headers (names in lower case).
pub fn exchange(
    port: u16,
    method: &str,
    path: &str,
    token: Option<&str>,
    headers: &[(&str, &str)],
    body: &[u8],
) -> std::io::Result<Exchange> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut head = format!("{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    if let Some(t) = token {
        head += &format!("Authorization: Bearer {t}\r\n");
    }
    for (k, v) in headers {
        head += &format!("{k}: {v}\r\n");
    }
    head += &format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    s.write_all(head.as_bytes())?;
    s.write_all(body)?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status: u16 = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let (head, body) = raw.split_once("\r\n\r\n").unwrap_or((&raw, ""));
    let answer_headers = head
        .lines()
        .skip(1)
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_owned()))
        .collect();
    Ok((
        status,
        answer_headers,
        serde_json::from_str(body).unwrap_or(Value::Null),
    ))
}

/// A dev token for `user`, from `likes-local token`.
pub fn token(user: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_likes-local"))
        .args(["token", user])
        .env("LIKES_DEV_JWT_SECRET", SECRET)
        .output()
        .expect("token command runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Polls the count until it reads `want`; returns how long that took.
pub fn wait_for_count(stack: &Stack, post: &str, tok: &str, want: i64) -> Duration {
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    loop {
        let (s, b) = http(
            stack.port,
            "GET",
            &format!("/posts/{post}/likes/count"),
            Some(tok),
        )
        .unwrap();
        assert_eq!(s, 200, "{b}");
        if b["like_count"] == want {
            return started.elapsed();
        }
        assert!(
            Instant::now() < deadline,
            "count stuck at {} (want {want}):\n{}",
            b["like_count"],
            stack.log.lock().unwrap()
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Puts one of the product's events on its bus (`likes-product`), as the product would:
/// `PutEvents`, source `product`, straight to the emulator (not through a stack's lab).
pub async fn put_product_event(endpoint: &str, detail_type: &str, detail: &Value) {
    let conf = likes_aws::sdk::emulator_as(endpoint, "admin").await;
    let entry = aws_sdk_eventbridge::types::PutEventsRequestEntry::builder()
        .event_bus_name(likes_local::product_bus::PRODUCT_BUS)
        .source(likes_local::product_bus::PRODUCT_SOURCE)
        .detail_type(detail_type)
        .detail(detail.to_string())
        .build();
    let out = aws_sdk_eventbridge::Client::new(&conf)
        .put_events()
        .entries(entry)
        .send()
        .await
        .expect("PutEvents");
    assert_eq!(out.failed_entry_count(), 0, "{out:?}");
}
