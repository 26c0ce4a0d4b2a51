//! `make smoke` (tests/scripts/smoke.sh) against the local stack, started as `e2e.rs` starts it: the
//! `likes-local` binary on a free port with its own emulator, and a token from `likes-local
//! token <user>`. It must pass against a healthy stack and leave nothing behind, and fail, naming
//! the step, with a wrong token, when the counts never converge, and against a stopped stack.
//! Needs what the script needs: make, bash, curl and python3.

use crate::common;

use std::process::{Command, Output};
use std::time::Instant;

use common::{http, repo_root, token, Options, Stack};
use likes_local::jwt;
use serde_json::Value;

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

fn start(fail_first_writes: usize) -> Stack {
    Stack::start(&Options {
        fail_first_writes,
        ..Options::default()
    })
}

fn api(stack: &Stack) -> String {
    format!("http://127.0.0.1:{}", stack.port)
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

/// The smoke run's post is not liked (the run unliked it on its way out).
fn assert_not_liked(stack: &Stack, tok: &str, post: &str) {
    let (s, b) = http(stack.port, "GET", &format!("/posts/{post}/like"), Some(tok)).unwrap();
    assert_eq!((s, &b["liked"]), (200, &Value::Bool(false)), "{b}");
}

#[test]
fn smoke_passes_against_the_local_stack_and_leaves_it_as_it_found_it() {
    let stack = start(0);
    let user = "auth0|5f7c8ec7c33c6c004bbafe82";
    let tok = token(user);
    let run = make_smoke(&api(&stack), &tok, None);
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
    assert_not_liked(&stack, &tok, &post);
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
    let again = make_smoke(&api(&stack), &tok, None);
    assert_eq!(again.code, Some(0), "{}", again.shown());
    assert_ne!(again.post(), post);
}

#[test]
fn smoke_fails_naming_the_step_with_a_wrong_token_and_against_a_stopped_stack() {
    let stack = start(0);
    let api = api(&stack);

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
    drop(stack);
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
    let run = make_smoke(&api(&stack), &tok, Some(3));
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
    assert_not_liked(&stack, &tok, &post);
}
