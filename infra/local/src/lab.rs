//! The stack's lab: the emulator behind `likes_lab`'s proxy, and each function's clients
//! signed as its role, so that a call the template does not allow its role fails here as on
//! AWS (`AccessDenied`), and eventually consistent reads may trail (`LIKES_LAB_READ_LAG_MS`).
//! Lambda's event source mappings call with the function's own role (its stream reads, its
//! queue's receives, its on-failure destination): so do the local ones.

use aws_config::SdkConfig;
use likes_aws::sdk::emulator_as;
use likes_lab::{roles, Config, Fault, FaultRule, Lab, Names, Policies};
use serde_json::{json, Map, Value};

use crate::error::LocalError;
use crate::esm::sinks::FAILURE_QUEUE;
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
    Names::one_region()
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

/// `GET /_local/lab`: the lab's endpoint (for `likes-admin --endpoint-url`), every IAM decision
/// it made, and each identity's statements as it enforces them.
pub fn report(lab: &Lab) -> Value {
    let decided: Vec<Value> = lab
        .usage()
        .decided
        .into_iter()
        .map(|d| {
            let allowed_by =
                d.by.as_ref()
                    .ok()
                    .map(|(sid, r)| json!({"sid": sid, "resource": r}));
            json!({"identity": d.identity, "action": d.action, "resource": d.resource,
                "allowed_by": allowed_by, "denied": d.by.err()})
        })
        .collect();
    let policies: Map<String, Value> = lab
        .policies()
        .into_iter()
        .flat_map(|p| p.0.iter())
        .map(|(identity, statements)| {
            let list: Vec<Value> = statements
                .iter()
                .map(|s| json!({"sid": s.sid, "allow": s.allow, "actions": s.actions, "resources": s.resources}))
                .collect();
            (identity.clone(), json!(list))
        })
        .collect();
    json!({"endpoint": lab.endpoint(), "decided": decided, "policies": policies})
}

/// A fault for the lab from `POST /_local/lab/faults`: `{"operation": "PutItem", "table":
/// "likes", "identity": "LikesApiFunction", "skip": 0, "times": 1, "fault": "close"}` (table,
/// identity, skip and times optional; faults as `likes_lab::Fault::parse` names them).
pub fn fault_rule(body: &[u8]) -> Result<FaultRule, String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?;
    let text = |k: &str| v[k].as_str().map(str::to_owned);
    let count = |k: &str, default: u64| v[k].as_u64().unwrap_or(default) as usize;
    let fault = text("fault").ok_or("no fault")?;
    Ok(FaultRule {
        operation: text("operation").ok_or("no operation")?,
        table: text("table"),
        identity: text("identity"),
        skip: count("skip", 0),
        times: count("times", 1),
        fault: Fault::parse(&fault).ok_or_else(|| format!("no fault named {fault:?}"))?,
    })
}
