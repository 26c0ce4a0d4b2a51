//! A real `redis-server` (Debian's; Valkey speaks the same protocol) on a loopback port of its
//! own, one per test, stopped when dropped: the shared count tier's store, as ElastiCache
//! Serverless is on AWS. Nothing is saved to disk.

use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

pub struct ValkeyServer {
    url: String,
    child: Option<Child>,
}

impl ValkeyServer {
    /// Starts one and waits until it answers. Panics, saying what to install, when
    /// `redis-server` is missing: a test that needs it must not pass without it. A server that
    /// exits at once (its port taken meanwhile) is started again on another port.
    pub async fn start() -> Self {
        for _ in 0..5 {
            if let Some(server) = Self::try_start().await {
                return server;
            }
        }
        panic!("redis-server exited at start five times (see its output above)");
    }

    async fn try_start() -> Option<Self> {
        let port = crate::free_port();
        let child = Command::new("redis-server")
            .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
            .args(["--save", "", "--appendonly", "no", "--daemonize", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .expect("redis-server starts (Debian's redis-server package: .ci/run installs it)");
        let mut server = Self {
            url: format!("redis://127.0.0.1:{port}"),
            child: Some(child),
        };
        let store = server.store();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(child) = server.child.as_mut() {
                if child.try_wait().ok().flatten().is_some() {
                    return None;
                }
            }
            if store.connect().await.is_ok() {
                return Some(server);
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "redis-server did not answer on {} within 10 s",
                server.url
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// A client of it, as one execution environment's, connected.
    pub async fn connected(&self) -> likes_api::shared_counts::valkey::Valkey {
        let store = self.store();
        store.connect().await.expect("redis-server answers");
        store
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// A client of it, as one execution environment's.
    pub fn store(&self) -> likes_api::shared_counts::valkey::Valkey {
        likes_api::shared_counts::valkey::Valkey::open(&self.url).expect("a redis URL")
    }

    /// Stops it now (the tier going away under a running API).
    pub async fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
    }
}
