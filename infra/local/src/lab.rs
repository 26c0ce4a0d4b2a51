//! The stack's lab: the emulator behind `likes_lab`'s proxy, and each function's clients
//! signed as its role, so that a call the template does not allow its role fails here as on
//! AWS (`AccessDenied`), and eventually consistent reads may trail (`LIKES_LAB_READ_LAG_MS`).
//! Lambda's event source mappings call with the function's own role (its stream reads, its
//! queue's receives, its on-failure destination): so do the local ones.

use aws_config::SdkConfig;
use likes_aws::sdk::emulator_as;
use likes_lab::{roles, Config, Lab, Names, Policies};

use crate::dev::FAILURE_QUEUE;
use crate::error::LocalError;
use crate::settings::Settings;
use crate::{erase_poller, events};

/// The SDK configuration of each identity the stack runs as.
pub struct Roles {
    pub lab: Lab,
    /// Setting up and looking on: tables, queues, the bus (the person at the keyboard).
    pub admin: SdkConfig,
    pub api: SdkConfig,
    pub aggregator: SdkConfig,
    pub events: SdkConfig,
    pub worker: SdkConfig,
}

/// The template's resources by their local names.
pub fn names(settings: &Settings) -> Names {
    Names::default()
        .with("LikesTable", &settings.likes_table)
        .with("CountsTable", &settings.counts_table)
        .with("MarkersTable", &settings.markers_table)
        .with("EraseRequestsTable", &settings.erase_requests_table)
        .with("EventStateTable", &settings.event_state_table)
        .with("EraseQueue", erase_poller::ERASE_QUEUE)
        .with("EraseDeadLetterQueue", erase_poller::ERASE_DLQ)
        .with("AggregatorFailureQueue", FAILURE_QUEUE)
        .with("LikeEventsFailureQueue", events::EVENTS_FAILURE_QUEUE)
        .with("LikeEventBus", &settings.event_bus)
}

fn template() -> std::path::PathBuf {
    std::path::PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml"))
}

/// Starts the lab in front of the emulator at `upstream`.
pub async fn start(settings: &Settings, upstream: &str) -> Result<Roles, LocalError> {
    let policies = match settings.lab_iam {
        true => Some(
            Policies::from_template(&template(), &names(settings))
                .map_err(|e| LocalError::Setup(format!("the lab's policies: {e}")))?,
        ),
        false => None,
    };
    let lab = Lab::start(Config {
        upstream: upstream.to_owned(),
        policies,
        read_lag: settings.read_lag,
    })
    .await
    .map_err(|e| LocalError::Setup(e.to_string()))?;
    let at = lab.endpoint().to_owned();
    Ok(Roles {
        admin: emulator_as(&at, roles::ADMIN).await,
        api: emulator_as(&at, roles::API).await,
        aggregator: emulator_as(&at, roles::AGGREGATOR).await,
        events: emulator_as(&at, roles::EVENTS).await,
        worker: emulator_as(&at, roles::WORKER).await,
        lab,
    })
}
