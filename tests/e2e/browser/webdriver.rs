//! A real browser for the tests: Debian's `chromium`, headless, driven over W3C WebDriver by
//! `chromedriver` (Debian's `chromium-driver`, built from the same source package, so the two
//! always match). WebDriver is plain HTTP and JSON, so the client is the tests' own HTTP helper
//! and no new crate; its Element Click is a person's click (scrolled into view, at the element's
//! centre, refused if something covers it). docs/browsers.md says more.
//!
//! Also here: a tiny page server, so that a test can put a page on an origin of its choosing.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::free_port;

/// One request to chromedriver. Its own client: chromedriver says `Connection: close` but may
/// keep the socket open, so the answer is read by its `Content-Length`, not to the end.
fn request(port: u16, method: &str, path: &str, body: &[u8]) -> std::io::Result<(u16, Value)> {
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(60)))?;
    write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\
         Content-Type: application/json; charset=utf-8\r\nContent-Length: {}\r\n\r\n",
        body.len()
    )?;
    s.write_all(body)?;
    let mut reader = BufReader::new(s);
    let mut status_line = String::new();
    reader.read_line(&mut status_line)?;
    let status = status_line
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .unwrap_or(0);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.trim().eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            }
        }
    }
    let mut bytes = vec![0u8; length];
    reader.read_exact(&mut bytes)?;
    Ok((
        status,
        serde_json::from_slice(&bytes).unwrap_or(Value::Null),
    ))
}

/// W3C WebDriver's key for an element reference.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

fn on_path(name: &str) -> Option<PathBuf> {
    std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join(name))
            .find(|p| p.is_file())
    })
}

/// Fails the test, not skips it, when the browser is missing.
fn required(name: &str) -> PathBuf {
    on_path(name).unwrap_or_else(|| {
        panic!(
            "the browser tests need `{name}` on PATH: install Debian's chromium and \
             chromium-driver (apt-get install -y chromium chromium-driver; .ci/run does)"
        )
    })
}

/// One headless Chromium session, ended (with its driver) on drop.
pub struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: TempDir,
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

impl Browser {
    pub fn start() -> Self {
        let chromium = required("chromium");
        let chromedriver = required("chromedriver");
        let port = free_port();
        let driver = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("chromedriver starts");
        let profile = TempDir(
            std::env::temp_dir().join(format!("likes-chromium-{}", uuid::Uuid::new_v4().simple())),
        );
        let mut browser = Self {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Ok((200, v)) = request(port, "GET", "/status", b"") {
                if v["value"]["ready"] == true {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver did not get ready");
            std::thread::sleep(Duration::from_millis(50));
        }
        let args = [
            "--headless=new".to_owned(),
            "--no-sandbox".to_owned(),
            "--disable-gpu".to_owned(),
            "--disable-dev-shm-usage".to_owned(),
            "--disable-background-networking".to_owned(),
            "--disable-component-update".to_owned(),
            "--disable-sync".to_owned(),
            "--no-first-run".to_owned(),
            "--window-size=1200,1000".to_owned(),
            format!("--user-data-dir={}", browser._profile.0.display()),
        ];
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {"binary": chromium, "args": args},
        }}});
        let v = browser.call("POST", "/session", &caps);
        browser.session = v["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no WebDriver session: {v}"))
            .to_owned();
        browser.command("POST", "/timeouts", &json!({"script": 30_000}));
        browser
    }

    fn call(&self, method: &str, path: &str, body: &Value) -> Value {
        let bytes = if body.is_null() {
            Vec::new()
        } else {
            body.to_string().into_bytes()
        };
        let (status, v) = request(self.port, method, path, &bytes)
            .unwrap_or_else(|e| panic!("WebDriver {method} {path}: {e}"));
        assert_eq!(status, 200, "WebDriver {method} {path}: {v}");
        v["value"].clone()
    }

    fn command(&self, method: &str, path: &str, body: &Value) -> Value {
        self.call(method, &format!("/session/{}{path}", self.session), body)
    }

    pub fn goto(&self, url: &str) {
        self.command("POST", "/url", &json!({ "url": url }));
    }

    /// Runs `script` in the page as an async function body (`arguments`, the last one the
    /// callback) and returns what it passed to the callback.
    pub fn run_async(&self, script: &str, args: &[Value]) -> Value {
        self.command(
            "POST",
            "/execute/async",
            &json!({ "script": script, "args": args }),
        )
    }

    pub fn run(&self, script: &str, args: &[Value]) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            &json!({ "script": script, "args": args }),
        )
    }

    /// The first element `css` selects, if any.
    pub fn find(&self, css: &str) -> Option<String> {
        let body = json!({"using": "css selector", "value": css});
        let path = format!("/session/{}/elements", self.session);
        let found = self.call("POST", &path, &body);
        found
            .as_array()
            .and_then(|a| a.first())
            .and_then(|e| e[ELEMENT].as_str())
            .map(str::to_owned)
    }

    /// Waits (up to `secs`) for an element `css` selects.
    pub fn wait_for(&self, css: &str, secs: u64) -> String {
        poll(secs, &format!("an element matching {css}"), || {
            self.find(css)
        })
    }

    pub fn click(&self, css: &str) {
        let el = self.wait_for(css, 10);
        self.command("POST", &format!("/element/{el}/click"), &json!({}));
    }

    /// Replaces an input's text, as typing would.
    pub fn type_into(&self, css: &str, text: &str) {
        let el = self.wait_for(css, 10);
        self.command("POST", &format!("/element/{el}/clear"), &json!({}));
        self.command(
            "POST",
            &format!("/element/{el}/value"),
            &json!({ "text": text }),
        );
    }

    /// The rendered text of the first element `css` selects ("" if none).
    pub fn text(&self, css: &str) -> String {
        self.find(css)
            .map(|el| {
                let v = self.command("GET", &format!("/element/{el}/text"), &Value::Null);
                v.as_str().unwrap_or_default().to_owned()
            })
            .unwrap_or_default()
    }

    pub fn screenshot_png(&self) -> Vec<u8> {
        use base64::Engine;
        let v = self.command("GET", "/screenshot", &Value::Null);
        base64::engine::general_purpose::STANDARD
            .decode(v.as_str().unwrap_or_default())
            .expect("a base64 PNG")
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let path = format!("/session/{}", self.session);
            let _ = request(self.port, "DELETE", &path, b"");
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// Polls `probe` until it gives `Some`, failing the test with `what` after `secs` seconds.
pub fn poll<T>(secs: u64, what: &str, mut probe: impl FnMut() -> Option<T>) -> T {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(v) = probe() {
            return v;
        }
        assert!(Instant::now() < deadline, "waited {secs} s for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Serves one blank HTML page at every path on a free port: an origin for a test page.
pub struct PageServer {
    pub origin: String,
}

impl PageServer {
    pub fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a page port");
        let port = listener.local_addr().map(|a| a.port()).expect("its port");
        std::thread::spawn(move || {
            for stream in listener.incoming().map_while(Result::ok) {
                std::thread::spawn(move || serve_page(stream));
            }
        });
        Self {
            origin: format!("http://127.0.0.1:{port}"),
        }
    }
}

fn serve_page(mut stream: TcpStream) {
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut line = String::new();
    // The request head; the page ignores what it asks for.
    while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
        line.clear();
    }
    let page = "<!doctype html><html><head><title>a page</title></head><body>a page</body></html>";
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
        page.len()
    );
}
