//! Which AWS operations a function binary really makes, read from the X-Ray subsegments it
//! reports (`LIKES_XRAY=1`, a loopback UDP socket as the daemon, invocations marked sampled),
//! and whether its role in `template.yaml` allows each one. A role that lacks an action the
//! code calls fails only on AWS, where nothing here runs: this is how the tests see it.
//!
//! A function sends a call's datagrams before it answers the invocation, and loopback delivers
//! them at once, so once the answer is in, draining the socket reads them all.

use std::collections::BTreeSet;
use std::net::UdpSocket;
use std::time::{Duration, Instant};

use serde_json::Value;

/// A trace header of an invocation X-Ray sampled.
pub const SAMPLED: &str =
    "Root=1-6750a1b2-0123456789abcdef01234567;Parent=53995c3f42cd8ad8;Sampled=1";

/// The X-Ray daemon's side: segment documents, each after the daemon protocol's header line.
pub struct Daemon(UdpSocket);

impl Daemon {
    pub fn start() -> Self {
        let socket = UdpSocket::bind("127.0.0.1:0").expect("a UDP socket");
        socket
            .set_read_timeout(Some(Duration::from_millis(200)))
            .expect("a read timeout");
        Daemon(socket)
    }

    pub fn address(&self) -> String {
        self.0.local_addr().expect("its address").to_string()
    }

    /// What a function needs to report its calls here.
    pub fn env(&self) -> Vec<(&'static str, String)> {
        vec![
            ("LIKES_XRAY", "1".to_owned()),
            ("AWS_XRAY_DAEMON_ADDRESS", self.address()),
        ]
    }

    fn parse(bytes: &[u8]) -> Value {
        let text = String::from_utf8_lossy(bytes);
        let (header, doc) = text.split_once('\n').expect("header line, then document");
        assert_eq!(header, r#"{"format": "json", "version": 1}"#);
        serde_json::from_str(doc).expect("a JSON segment document")
    }

    /// The next segment document, within `within`.
    pub fn next(&self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        let mut buf = vec![0u8; 65_536];
        while Instant::now() < deadline {
            if let Ok(n) = self.0.recv(&mut buf) {
                return Some(Self::parse(&buf[..n]));
            }
        }
        None
    }

    /// The next completed subsegment (the daemon also gets each one as it starts).
    pub fn next_completed(&self, within: Duration) -> Option<Value> {
        let deadline = Instant::now() + within;
        loop {
            let doc = self.next(deadline.saturating_duration_since(Instant::now()))?;
            if doc.get("end_time").is_some_and(|t| !t.is_null()) {
                return Some(doc);
            }
        }
    }

    /// Every operation reported so far, as IAM names it (`dynamodb:PutItem`).
    pub fn operations(&self) -> BTreeSet<String> {
        self.0.set_nonblocking(true).expect("non-blocking");
        let mut out = BTreeSet::new();
        let mut buf = vec![0u8; 65_536];
        while let Ok(n) = self.0.recv(&mut buf) {
            let doc = Self::parse(&buf[..n]);
            if let (Some(service), Some(op)) =
                (doc["name"].as_str(), doc["aws"]["operation"].as_str())
            {
                out.insert(format!("{}:{op}", service.to_lowercase()));
            }
        }
        self.0.set_nonblocking(false).expect("blocking again");
        out
    }
}

/// The actions `function`'s inline policies in `template.yaml` allow.
pub fn role_actions(function: &str) -> BTreeSet<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml");
    let template: serde_yaml::Value = serde_yaml::from_str(&text).expect("template.yaml parses");
    let policies = &template["Resources"][function]["Properties"]["Policies"];
    let mut out = BTreeSet::new();
    for policy in policies.as_sequence().into_iter().flatten() {
        for statement in policy["Statement"].as_sequence().into_iter().flatten() {
            assert_eq!(statement["Effect"].as_str(), Some("Allow"), "{function}");
            match &statement["Action"] {
                serde_yaml::Value::String(a) => {
                    out.insert(a.clone());
                }
                actions => {
                    out.extend(
                        actions
                            .as_sequence()
                            .into_iter()
                            .flatten()
                            .filter_map(|a| a.as_str().map(str::to_owned)),
                    );
                }
            }
        }
    }
    out
}

/// What IAM checks for a call: a transaction's parts are checked as the item actions it may
/// hold (IAM has no action for the transaction itself). The code's transactions put, delete and
/// check items (`likes_aws::dynamo::likes::write`).
fn iam_actions(operation: &str) -> Vec<String> {
    match operation {
        "dynamodb:TransactWriteItems" => ["PutItem", "DeleteItem", "ConditionCheckItem"]
            .iter()
            .map(|a| format!("dynamodb:{a}"))
            .collect(),
        // The SDK names EventBridge's service `eventbridge`; IAM's prefix is `events`.
        other => match other.strip_prefix("eventbridge:") {
            Some(op) => vec![format!("events:{op}")],
            None => vec![other.to_owned()],
        },
    }
}

/// Fails unless the function made at least the calls `expected` (so that the check cannot
/// silently cover less than it says) and its role allows every call it made.
pub fn assert_role_allows(function: &str, operations: &BTreeSet<String>, expected: &[&str]) {
    let unseen: Vec<&&str> = expected
        .iter()
        .filter(|op| !operations.contains(**op))
        .collect();
    assert!(
        unseen.is_empty(),
        "{function}: the sample events never made {unseen:?} (made {operations:?}): the role check would cover less than it says"
    );
    let allowed = role_actions(function);
    let missing: Vec<String> = operations
        .iter()
        .flat_map(|op| iam_actions(op))
        .filter(|action| !allowed.contains(action))
        .collect();
    assert!(
        missing.is_empty(),
        "{function} calls need {missing:?}, which its role in template.yaml does not allow (it allows {allowed:?})"
    );
}
