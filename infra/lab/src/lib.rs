//! The hostile lab: a loopback proxy in front of the emulator (moto's server) that does what
//! AWS does and moto does not, so that what the code's correctness rests on is what the tests
//! see.
//!
//! - [`policy`]: each identity's policy read from `template.yaml`; a call its role does not
//!   allow is refused as IAM refuses it (`AccessDeniedException`), and every decision is
//!   recorded ([`Usage`]), so a test can check that a role allows exactly what its code uses.
//! - [`replica`]: reads that do not ask for strong consistency, and every global index query,
//!   served from a copy of the table that trails it by a configurable lag: a missing
//!   `ConsistentRead` reads the past, and an index omits what was written a moment ago.
//! - [`faults`]: answers lost after the write was applied (a reset connection, a timeout, a
//!   5xx), and writes held and applied after the client gave up.
//! - [`call`]: what a request is (who signed it, which operation, which resources).
//!
//! Identities are the access key ids: a function's logical id in the template (its execution
//! role), [`policy::OPERATOR`] for `likes-admin`, [`policy::ADMIN`] for the person and the tests'
//! scaffolding. What the lab still cannot show is listed in `docs/local.md`.

pub mod call;
pub mod faults;
pub mod policy;
mod proxy;
pub mod replica;
mod upstream;

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

pub use faults::{Fault, FaultRule};
pub use policy::{Names, Policies};

/// What the lab is told at start.
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// The emulator, `http://127.0.0.1:<port>`.
    pub upstream: String,
    /// The identities' policies; `None` leaves every call allowed.
    pub policies: Option<Policies>,
    /// How far eventually consistent reads trail (0: they read the latest).
    pub read_lag: Duration,
}

/// One IAM decision the lab made.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Decided {
    pub identity: String,
    pub action: String,
    /// The resource asked for.
    pub resource: String,
    /// Allowed: the statement and the resource pattern that allowed it. Denied: why not.
    pub by: Result<(String, String), String>,
}

/// Every decision so far (deduplicated).
#[derive(Debug, Clone, Default)]
pub struct Usage {
    pub decided: BTreeSet<Decided>,
}

impl Usage {
    pub fn denied(&self) -> Vec<&Decided> {
        self.decided.iter().filter(|d| d.by.is_err()).collect()
    }
}

/// A running lab. Dropping it does not stop it: it lives as long as its runtime.
#[derive(Clone)]
pub struct Lab {
    shared: Arc<proxy::Shared>,
    endpoint: String,
}

#[derive(Debug, thiserror::Error)]
pub enum LabError {
    #[error("the lab could not listen on loopback: {0}")]
    Listen(std::io::Error),
    #[error("the lab's runtime: {0}")]
    Runtime(std::io::Error),
}

impl Lab {
    /// Starts the lab on a free loopback port, on the current tokio runtime.
    pub async fn start(config: Config) -> Result<Lab, LabError> {
        let (shared, endpoint) = proxy::serve(config).await?;
        Ok(Lab { shared, endpoint })
    }

    /// Starts the lab on a runtime of its own, on a thread of its own: for tests, whose
    /// runtimes come and go with each test while the lab serves them all.
    pub fn start_detached(config: Config) -> Result<Lab, LabError> {
        // Its own thread builds and runs the runtime: the caller may be inside another one,
        // where blocking on a runtime is not allowed.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("likes-lab".into())
            .spawn(move || {
                let runtime = match tokio::runtime::Builder::new_multi_thread()
                    .worker_threads(2)
                    .thread_name("likes-lab")
                    .enable_all()
                    .build()
                {
                    Ok(r) => r,
                    Err(e) => {
                        let _ = tx.send(Err(LabError::Runtime(e)));
                        return;
                    }
                };
                runtime.block_on(async move {
                    let started = Lab::start(config).await;
                    let ok = started.is_ok();
                    let _ = tx.send(started);
                    if ok {
                        std::future::pending::<()>().await;
                    }
                });
            })
            .map_err(LabError::Runtime)?;
        rx.recv().map_err(|_| {
            LabError::Runtime(std::io::Error::other(
                "the lab's thread ended before it started",
            ))
        })?
    }

    /// Where clients send their calls.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// The identities' policies it enforces (`None`: it enforces none).
    pub fn policies(&self) -> Option<&Policies> {
        self.shared.policies.as_ref()
    }

    /// The decisions made so far.
    pub fn usage(&self) -> Usage {
        self.shared
            .usage
            .lock()
            .map(|u| u.clone())
            .unwrap_or_default()
    }

    /// Eventually consistent reads of tables named `table` (a pattern with `*`) trail by `lag`
    /// from now on (the global lag otherwise).
    pub fn set_lag(&self, table: &str, lag: Duration) {
        self.shared.replicas.set_lag(table, lag);
    }

    /// Adds a fault; the returned counter says how many calls it struck.
    pub fn add_fault(&self, rule: FaultRule) -> Arc<std::sync::atomic::AtomicUsize> {
        self.shared.faults.add(rule)
    }

    /// Disarms every fault rule (an outage that ends).
    pub fn clear_faults(&self) {
        self.shared.faults.clear();
    }
}

/// The identities the lab knows, as the template names them (each function's execution role is
/// its logical id).
pub mod roles {
    pub use crate::policy::{ADMIN, OPERATOR};
    pub const API: &str = "LikesApiFunction";
    pub const AGGREGATOR: &str = "CountAggregatorFunction";
    pub const EVENTS: &str = "LikeEventsFunction";
    pub const WORKER: &str = "EraseWorkerFunction";
}
