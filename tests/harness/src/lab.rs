//! The hostile lab (`likes_lab`) in front of the tests' emulator: one per test process, started
//! on first use, enforcing each role's policy from `template.yaml`. Each test's tables are its
//! own (`likes-<id>`, …), so the template's resources are named here by patterns. The tests'
//! own scaffolding (creating tables, checking items) signs as the lab's admin; the code under
//! test signs as its role ([`crate::Tables::as_role`]).

use std::sync::OnceLock;

use likes_lab::{Config, Lab, Names, Policies};

pub use likes_lab::roles;

/// The template's resources as the tests name them.
pub fn names() -> Names {
    Names::one_region()
        .with("LikesTable", "likes-*")
        .with("CountsTable", "counts-*")
        .with("MarkersTable", "markers-*")
        .with("EraseRequestsTable", "erase-requests-*")
        .with("EventStateTable", "event-state-*")
        .with("EraseQueue", "erase-jobs-*")
        .with("EraseDeadLetterQueue", "erase-dead-*")
        .with("AggregatorFailureQueue", "aggregator-failures-*")
        .with("LikeEventsFailureQueue", "events-failures-*")
        .with("LikeEventBus", "likes-*")
}

/// The template, as the lab reads it.
pub fn template() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
}

/// The process's lab, in front of the emulator `make test` started.
pub fn lab() -> &'static Lab {
    static LAB: OnceLock<Lab> = OnceLock::new();
    LAB.get_or_init(|| {
        let policies = Policies::from_template(&template(), &names())
            .unwrap_or_else(|e| panic!("the lab cannot read the template's policies: {e}"));
        Lab::start_detached(Config {
            upstream: crate::emulator(),
            policies: Some(policies),
            read_lag: std::time::Duration::ZERO,
        })
        .unwrap_or_else(|e| panic!("the lab did not start: {e}"))
    })
}

/// The lag `Tables::lagging` gives its tables: `LIKES_LAB_READ_LAG_MS`, default 500 ms.
pub fn read_lag() -> std::time::Duration {
    let ms = std::env::var("LIKES_LAB_READ_LAG_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(500);
    std::time::Duration::from_millis(ms)
}
