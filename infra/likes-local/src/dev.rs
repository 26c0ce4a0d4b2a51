//! `make dev`: the emulator, the tables, the local API Gateway and the local event source
//! mapping, until Ctrl-C or SIGTERM.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

use count_aggregator::Aggregator;
use likes_core::schema::{COUNTS, LIKES};
use likes_core::{DynamoCounts, DynamoLikes};
use likes_testkit::faults::{FaultPlan, FaultyCounts};
use tokio::net::TcpListener;

use crate::error::LocalError;
use crate::settings::Settings;
use crate::{emulator, gateway, poller, setup};

pub async fn dev(settings: Settings) -> Result<(), LocalError> {
    let started = Instant::now();
    let listener = match TcpListener::bind(("127.0.0.1", settings.port)).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(LocalError::PortBusy(settings.port))
        }
        Err(e) => return Err(LocalError::Listen(settings.port, e)),
    };
    // Keep the child alive for the whole run; dropping it stops the emulator.
    let (_emulator, endpoint) = match &settings.endpoint {
        Some(e) => (None, e.clone()),
        None => {
            let (child, endpoint) = emulator::start().await?;
            (Some(child), endpoint)
        }
    };
    tracing::info!("emulator at {endpoint}");
    let conf = likes_testkit::emulator::sdk_config(&endpoint).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&conf);
    setup::ensure_table(&dynamo, &LIKES, &settings.likes_table).await?;
    setup::ensure_table(&dynamo, &COUNTS, &settings.counts_table).await?;
    let stream_arn = setup::stream_arn(&dynamo, &settings.likes_table).await?;

    let ready = Arc::new(AtomicBool::new(false));
    let streams = aws_sdk_dynamodbstreams::Client::new(&conf);
    let plan = FaultPlan {
        fail_next: settings.fail_first_writes,
        ..FaultPlan::default()
    };
    let aggregator = Aggregator::new(FaultyCounts::with_plan(
        DynamoCounts::new(dynamo.clone(), &settings.counts_table),
        plan,
    ));
    // Not spawned: the aggregator's borrowed futures are not `Send` for every lifetime, and
    // they need not be; the poller runs on this task, next to the shutdown signal.
    let poller = poller::run(streams, stream_arn, aggregator);
    ready.store(true, Ordering::SeqCst);

    let gateway = Arc::new(gateway::Gateway {
        app: likes_api::App::with_cache(
            DynamoLikes::new(dynamo.clone(), &settings.likes_table),
            DynamoCounts::new(dynamo, &settings.counts_table),
            likes_api::CountCache::from_env(),
        ),
        auth: settings.auth.clone(),
        ready,
    });
    tracing::info!(
        "JWT authorizer: HS256, issuer {:?}, audience {:?} (`make token USER=<id>` issues one)",
        settings.auth.issuer,
        settings.auth.audience
    );
    tracing::info!(
        "likes API on http://127.0.0.1:{} (ready in {:.1}s); Ctrl-C stops everything",
        settings.port,
        started.elapsed().as_secs_f64()
    );
    let server = tokio::spawn(gateway::serve(listener, gateway));
    tokio::select! {
        _ = poller => {}
        _ = shutdown_signal() => {}
    }
    tracing::info!("stopping");
    server.abort();
    Ok(())
}

async fn shutdown_signal() {
    #[cfg(unix)]
    {
        let mut term =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(s) => s,
                Err(_) => {
                    let _ = tokio::signal::ctrl_c().await;
                    return;
                }
            };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
