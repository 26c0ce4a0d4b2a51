//! `make smoke` (infra/smoke.sh) against the local stack, started as `e2e.rs` starts it: the
//! `likes-local` binary on a free port with its own emulator, and a token from `likes-local
//! token <user>`. It must pass against a healthy stack and leave nothing behind, and fail, naming
//! the step, with a wrong token, when the counts never converge, and against a stopped stack.
//! Needs what the script needs: make, bash, curl and python3.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use likes_local::jwt;
use serde_json::Value;

const SECRET: &str = "smoke-secret";

/// The ten steps the script prints, in order.
const STEPS: [&str; 10] = [
    "count (start)",
    "like",
    "did I like it",
    "count after like",
    "my likes",
    "likers",
    "summary",
    "unlike",
    "did I like it (after)",
    "count back to start",
];

struct Stack {
    child: Child,
    port: u16,
    log: Arc<Mutex<String>>,
}

impl Stack {
    fn api(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        // SIGTERM, so the stack stops its emulator on the way out.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Stack {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            self.terminate();
        }
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn start(fail_first_writes: usize) -> Stack {
    let port = free_port();
    let mut child = Command::new(env!("CARGO_BIN_EXE_likes-local"))
        .env("LIKES_PORT", port.to_string())
        .env_remove("LIKES_MOTO_SERVER")
        .env("LIKES_DEV_JWT_SECRET", SECRET)
        .env(
            "LIKES_LOCAL_FAIL_FIRST_WRITES",
            fail_first_writes.to_string(),
        )
        .env("NO_COLOR", "1")
        .env_remove("LIKES_DYNAMODB_ENDPOINT")
        .env_remove("LIKES_JWT_ISSUER")
        .env_remove("LIKES_JWT_AUDIENCE")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("likes-local starts");
    let log = Arc::new(Mutex::new(String::new()));
    for pipe in [
        Box::new(child.stdout.take().unwrap()) as Box<dyn Read + Send>,
        Box::new(child.stderr.take().unwrap()),
    ] {
        let log = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                log.lock().unwrap().push_str(&(line + "\n"));
            }
        });
    }
    let stack = Stack { child, port, log };
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

/// One HTTP/1.1 request over a fresh connection: (status, JSON body or Null).
fn http(port: u16, method: &str, path: &str, token: Option<&str>) -> std::io::Result<(u16, Value)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(20)))?;
    let auth = token
        .map(|t| format!("Authorization: Bearer {t}\r\n"))
        .unwrap_or_default();
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n{auth}Content-Length: 0\r\nConnection: close\r\n\r\n"
    )?;
    let mut raw = String::new();
    s.read_to_string(&mut raw)?;
    let status: u16 = raw
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let body = raw.split_once("\r\n\r\n").map(|(_, b)| b).unwrap_or("");
    Ok((status, serde_json::from_str(body).unwrap_or(Value::Null)))
}

/// A dev token for `user`, from `likes-local token`, as `make token` makes it.
fn token(user: &str) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_likes-local"))
        .args(["token", user])
        .env("LIKES_DEV_JWT_SECRET", SECRET)
        .env_remove("LIKES_JWT_ISSUER")
        .env_remove("LIKES_JWT_AUDIENCE")
        .output()
        .expect("token command runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

fn repo_root() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

struct Smoke {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Smoke {
    /// make's status is 2 whenever the recipe fails; its message carries the script's status.
    fn failed_with(&self, script_status: u8) -> bool {
        self.code == Some(2)
            && self
                .stderr
                .contains(&format!("smoke] Error {script_status}"))
    }

    fn shown(&self) -> String {
        format!(
            "exit {:?}\n--- stdout\n{}--- stderr\n{}",
            self.code, self.stdout, self.stderr
        )
    }

    /// The post id the run used, from its first line (`smoke: URL, post ID, …`).
    fn post(&self) -> String {
        self.stdout
            .lines()
            .next()
            .and_then(|l| l.split(", post ").nth(1))
            .and_then(|l| l.split(',').next())
            .unwrap_or_else(|| panic!("no post id in the output:\n{}", self.shown()))
            .to_owned()
    }
}

/// `make smoke API=… TOKEN=…`, as a user runs it, with SMOKE_DEADLINE set if given.
fn make_smoke(api: &str, token: &str, deadline: Option<u64>) -> Smoke {
    let mut cmd = Command::new("make");
    cmd.arg("-s")
        .arg("-C")
        .arg(repo_root())
        .arg("smoke")
        .arg(format!("API={api}"))
        .arg(format!("TOKEN={token}"))
        // Not the jobserver of a `make test` this may run under.
        .env_remove("MAKEFLAGS")
        .env_remove("MFLAGS")
        .env_remove("MAKELEVEL")
        .env_remove("SMOKE_DEADLINE");
    if let Some(d) = deadline {
        cmd.env("SMOKE_DEADLINE", d.to_string());
    }
    let started = Instant::now();
    let Output {
        status,
        stdout,
        stderr,
    } = cmd.output().expect("make runs");
    let run = Smoke {
        code: status.code(),
        stdout: String::from_utf8_lossy(&stdout).into_owned(),
        stderr: String::from_utf8_lossy(&stderr).into_owned(),
    };
    println!("make smoke took {:?}:\n{}", started.elapsed(), run.shown());
    run
}

#[test]
fn smoke_passes_against_the_local_stack_and_leaves_it_as_it_found_it() {
    let stack = start(0);
    let user = "auth0|5f7c8ec7c33c6c004bbafe82";
    let tok = token(user);
    let run = make_smoke(&stack.api(), &tok, None);
    assert_eq!(run.code, Some(0), "{}", run.shown());
    let mut rest = run.stdout.as_str();
    for step in STEPS {
        let at = rest.find(&format!("  ok   {step} ")).unwrap_or_else(|| {
            panic!(
                "step {step:?} is not reported ok, in order:\n{}",
                run.shown()
            )
        });
        let line = rest[at..].lines().next().unwrap();
        assert!(line.contains(" ms "), "{step}: no latency in {line:?}");
        rest = &rest[at + line.len()..];
    }
    assert!(
        run.stdout.contains("smoke: passed, 10 steps"),
        "{}",
        run.shown()
    );
    assert!(!run.stdout.contains("FAIL"), "{}", run.shown());

    // Nothing is left behind: the post is not liked, its count is 0, and it is not in my likes.
    let post = run.post();
    assert!(post.starts_with("smoke-"), "{post}");
    let (s, b) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/like"),
        Some(&tok),
    )
    .unwrap();
    assert_eq!((s, &b["liked"]), (200, &Value::Bool(false)), "{b}");
    let (s, b) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/likes/count"),
        Some(&tok),
    )
    .unwrap();
    assert_eq!((s, &b["like_count"]), (200, &Value::from(0)), "{b}");
    let (s, b) = http(stack.port, "GET", "/users/me/likes?limit=100", Some(&tok)).unwrap();
    assert_eq!(s, 200, "{b}");
    assert_eq!(b["items"], Value::Array(vec![]), "{b}");

    // A second run uses another post and passes as well.
    let again = make_smoke(&stack.api(), &tok, None);
    assert_eq!(again.code, Some(0), "{}", again.shown());
    assert_ne!(again.post(), post);
}

#[test]
fn smoke_fails_naming_the_step_with_a_wrong_token_and_against_a_stopped_stack() {
    let stack = start(0);
    let api = stack.api();

    let forged = jwt::Authorizer {
        secret: "not-the-secret".into(),
        issuer: jwt::DEFAULT_ISSUER.into(),
        audience: jwt::DEFAULT_AUDIENCE.into(),
    }
    .issue("someone", 600)
    .unwrap();
    for (name, tok) in [("forged", forged.as_str()), ("garbage", "abc.def.ghi")] {
        let run = make_smoke(&api, tok, None);
        assert!(run.failed_with(1), "{name}: {}", run.shown());
        assert!(
            run.stderr
                .contains("smoke: FAILED at step 'count (start)': HTTP 401: the token was refused"),
            "{name}: {}",
            run.shown()
        );
        assert!(
            run.stdout.contains("  FAIL count (start)"),
            "{name}: {}",
            run.shown()
        );
        // It failed before liking anything, so it had nothing to remove.
        assert!(!run.stderr.contains("removed"), "{name}: {}", run.shown());
    }

    let tok = token("7c9e6679-7425-40de-944b-e07fc1f90ae7");
    stack.stop();
    let run = make_smoke(&api, &tok, None);
    assert!(run.failed_with(1), "{}", run.shown());
    assert!(
        run.stderr.contains(&format!(
            "smoke: FAILED at step 'count (start)': no answer from {api}"
        )),
        "{}",
        run.shown()
    );
    assert!(
        run.stderr.contains("is the stack up and the URL right?"),
        "{}",
        run.shown()
    );

    // Without API or TOKEN it says how to call it.
    let run = make_smoke("", "", None);
    assert!(run.failed_with(2), "{}", run.shown());
    assert!(
        run.stderr.contains("usage: make smoke API="),
        "{}",
        run.shown()
    );
}

#[test]
fn smoke_fails_when_the_count_does_not_converge_and_removes_its_like() {
    // Every write of the aggregator fails: the like is recorded but never counted.
    let stack = start(usize::MAX / 2);
    let tok = token("google-oauth2|104763291827364512345");
    let run = make_smoke(&stack.api(), &tok, Some(3));
    assert!(run.failed_with(1), "{}", run.shown());
    assert!(
        run.stderr
            .contains("smoke: FAILED at step 'count after like': did not converge within 3 s"),
        "{}",
        run.shown()
    );
    for step in ["count (start)", "like", "did I like it"] {
        assert!(
            run.stdout.contains(&format!("  ok   {step} ")),
            "{step}: {}",
            run.shown()
        );
    }
    let post = run.post();
    assert!(
        run.stderr
            .contains(&format!("smoke: removed this run's like of {post}")),
        "{}",
        run.shown()
    );
    let (s, b) = http(
        stack.port,
        "GET",
        &format!("/posts/{post}/like"),
        Some(&tok),
    )
    .unwrap();
    assert_eq!((s, &b["liked"]), (200, &Value::Bool(false)), "{b}");
}
