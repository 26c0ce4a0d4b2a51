//! `make dev`: the emulator, the tables, the local API Gateway and the local event source
//! mappings (counts, events) with the events' bus, until Ctrl-C or SIGTERM.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use count_aggregator::{Aggregator, Settings as AggregatorSettings};
use likes_aws::dynamo::schema::{COUNTS, ERASE_REQUESTS, EVENT_STATE, LIKES, MARKERS};
use likes_aws::env::Published;
use likes_aws::eventbridge::{ensure_bus, EventBridgeBus};
use likes_aws::sqs_erase_queue::SqsEraseQueue;
use likes_aws::{
    DynamoCounts, DynamoErasureRequests, DynamoLikes, DynamoMilestones, DynamoSuppression,
};
use likes_sim::faulty_counts::{FaultPlan, FaultyCounts};
use serde_json::json;
use tokio::net::TcpListener;

use crate::chaos::{ChaosFunction, Rng};
use crate::error::LocalError;
use crate::esm::config::{MappingConfig, EVENTS};
use crate::esm::function::AggregatorFunction;
use crate::esm::sinks::{Checkpoints, SqsDestination, FAILURE_QUEUE};
use crate::esm::source::DynamoStream;
use crate::esm::{Mapping, Stats};
use crate::events::{EventFeed, EventTotals, EventsFunction, FeedingBus, EVENTS_FAILURE_QUEUE};
use crate::settings::Settings;
use crate::{api, demo, erase_poller, gateway, lab, moto, product_bus, setup};

pub async fn dev(settings: Settings) -> Result<(), LocalError> {
    let started = Instant::now();
    let listener = match TcpListener::bind(("127.0.0.1", settings.port)).await {
        Ok(l) => l,
        Err(e) if e.kind() == std::io::ErrorKind::AddrInUse => {
            return Err(LocalError::PortBusy(settings.port))
        }
        Err(e) => return Err(LocalError::Listen(settings.port, e)),
    };
    // The demo is a convenience: without its port the API still runs.
    let demo_listener = match TcpListener::bind(("127.0.0.1", settings.demo_port)).await {
        Ok(l) => Some(l),
        Err(e) => {
            tracing::warn!(
                "demo page not served: cannot listen on 127.0.0.1:{} ({e}); set LIKES_DEMO_PORT to a free port",
                settings.demo_port
            );
            None
        }
    };
    let demo_origin = format!("http://127.0.0.1:{}", settings.demo_port);
    let cors = match &demo_listener {
        Some(_) => settings.allowed_origins.clone().with(demo_origin.clone()),
        None => settings.allowed_origins.clone(),
    };
    // Before the emulator: a wrong issuer or audience stops `make dev` at once.
    let own_auth = if settings.function_auth {
        Some(api::function_auth().await?)
    } else {
        None
    };
    // Keep the child alive for the whole run; dropping it stops the emulator.
    let (_emulator, endpoint) = match &settings.endpoint {
        Some(e) => (None, e.clone()),
        None => {
            let (child, endpoint) = moto::start().await?;
            (Some(child), endpoint)
        }
    };
    tracing::info!("emulator at {endpoint}");
    let roles = lab::start(&settings, &endpoint).await?;
    tracing::info!(
        "the lab at {} (roles {}, reads trailing {} ms): likes-admin --endpoint-url {0}",
        roles.lab.endpoint(),
        if settings.lab_iam { "enforced" } else { "off" },
        settings.read_lag.as_millis()
    );
    let conf = roles.admin.clone();
    let dynamo = aws_sdk_dynamodb::Client::new(&conf);
    setup::ensure_table(&dynamo, &LIKES, &settings.likes_table).await?;
    setup::ensure_table(&dynamo, &COUNTS, &settings.counts_table).await?;
    let stream_arn = setup::stream_arn(&dynamo, &settings.likes_table).await?;
    let mut config =
        MappingConfig::from_template().map_err(|e| LocalError::Setup(e.to_string()))?;
    if let Some(n) = settings.max_retries {
        config.max_retries = n;
    }
    let admin_sqs = aws_sdk_sqs::Client::new(&conf);
    let destination = SqsDestination::create(
        &admin_sqs,
        aws_sdk_sqs::Client::new(&roles.aggregator),
        FAILURE_QUEUE,
    )
    .await
    .map_err(|e| LocalError::Setup(format!("the on-failure queue: {e}")))?;
    let (erase_queue, erase_dlq) = erase_poller::create(&admin_sqs).await?;
    tracing::info!(
        "the erase queue at {erase_queue}: likes-admin erase-user --erase-queue-url {erase_queue}"
    );
    let admin_events = aws_sdk_eventbridge::Client::new(&conf);
    product_bus::create(&admin_events, &admin_sqs, &erase_queue).await?;
    tracing::info!(
        "the product's bus {}: its UserDeleted and PostDeleted events (source {}) reach the erase worker",
        product_bus::PRODUCT_BUS,
        product_bus::PRODUCT_SOURCE
    );
    setup::ensure_table(&dynamo, &ERASE_REQUESTS, &settings.erase_requests_table).await?;
    if settings.demo_policies {
        let policies =
            likes_aws::DynamoPolicies::new(dynamo.clone(), &settings.erase_requests_table);
        demo::seed_policies(&policies).await?;
    }
    // The API and the worker each with its own clients: each role's calls are its own.
    let (api_dynamo, api_sqs) = (
        aws_sdk_dynamodb::Client::new(&roles.api),
        aws_sdk_sqs::Client::new(&roles.api),
    );
    let (worker_dynamo, worker_sqs) = (
        aws_sdk_dynamodb::Client::new(&roles.worker),
        aws_sdk_sqs::Client::new(&roles.worker),
    );
    let jobs: Arc<dyn likes_core::erase_job::EraseQueue> =
        Arc::new(SqsEraseQueue::new(api_sqs, erase_queue.clone()));
    let erasures: Arc<dyn likes_core::erase_job::ErasureRequests> = Arc::new(
        DynamoErasureRequests::new(api_dynamo.clone(), &settings.erase_requests_table),
    );
    let erase_worker = erase_worker::Worker {
        likes: DynamoLikes::new(worker_dynamo.clone(), &settings.likes_table),
        empty_sweeps: 2,
        pause: std::time::Duration::from_millis(500),
        settle: likes_core::erase_job::SETTLE,
        requeue: Some(Arc::new(SqsEraseQueue::new(
            worker_sqs.clone(),
            erase_queue.clone(),
        ))),
        erasures: Some(Arc::new(DynamoErasureRequests::new(
            worker_dynamo.clone(),
            &settings.erase_requests_table,
        ))),
        token_lifetime: settings.max_token_lifetime,
        rejects: Some(Arc::new(SqsEraseQueue::new(worker_sqs.clone(), erase_dlq))),
        suspensions: Some(Arc::new(likes_aws::DynamoSuspensions::new(
            worker_dynamo.clone(),
            &settings.erase_requests_table,
        ))),
        policies: Some(Arc::new(likes_aws::DynamoPolicies::new(
            worker_dynamo.clone(),
            &settings.erase_requests_table,
        ))),
        blocks: Some(Arc::new(likes_aws::DynamoBlocks::new(
            worker_dynamo,
            &settings.erase_requests_table,
        ))),
    };
    let _ = std::fs::create_dir_all(&settings.state_dir);
    let checkpoints = Checkpoints::load(Some(settings.state_dir.join("mapping-checkpoints.json")));
    // Like events: the bus (what it accepts kept in the feed), the events function's state, and
    // its own mapping of the same stream (checkpointed apart, as Lambda keeps each mapping's).
    setup::ensure_table(&dynamo, &EVENT_STATE, &settings.event_state_table).await?;
    let eventbridge = aws_sdk_eventbridge::Client::new(&conf);
    ensure_bus(&eventbridge, &settings.event_bus)
        .await
        .map_err(|e| LocalError::Setup(format!("the events bus: {e}")))?;
    let feed = Arc::new(EventFeed::default());
    let region = conf
        .region()
        .map_or("us-east-1".to_owned(), |r| r.to_string());
    let events_dynamo = aws_sdk_dynamodb::Client::new(&roles.events);
    let events_function = EventsFunction {
        function: like_events::LikeEvents {
            suppression: DynamoSuppression::new(events_dynamo.clone(), &settings.event_state_table),
            milestones: DynamoMilestones::new(events_dynamo.clone(), &settings.event_state_table),
            counts: DynamoCounts::new(events_dynamo, &settings.counts_table),
            bus: FeedingBus::new(
                EventBridgeBus::new(
                    aws_sdk_eventbridge::Client::new(&roles.events),
                    &settings.event_bus,
                ),
                Arc::clone(&feed),
                region,
            ),
            settings: like_events::Settings::from(settings.event_rules),
        },
        totals: EventTotals::default(),
    };
    let events_source = DynamoStream::new(
        aws_sdk_dynamodbstreams::Client::new(&roles.events),
        stream_arn.clone(),
    );
    let events_destination = SqsDestination::create(
        &admin_sqs,
        aws_sdk_sqs::Client::new(&roles.events),
        EVENTS_FAILURE_QUEUE,
    )
    .await
    .map_err(|e| LocalError::Setup(format!("the events' on-failure queue: {e}")))?;
    let events_checkpoints = Checkpoints::load(Some(
        settings.state_dir.join("events-mapping-checkpoints.json"),
    ));
    let events_stats = Stats::default();
    let events_mapping = Mapping {
        source: &events_source,
        function: &events_function,
        destination: &events_destination,
        config: MappingConfig::of(EVENTS).map_err(|e| LocalError::Setup(e.to_string()))?,
        checkpoints: &events_checkpoints,
        stats: &events_stats,
    };

    let ready = Arc::new(AtomicBool::new(false));
    let mut plan = FaultPlan {
        fail_next: settings.fail_first_writes,
        ..FaultPlan::default()
    };
    if let Some(seed) = settings.chaos_seed {
        plan.random_failures = Some((Rng(seed ^ 0x5eed), 5));
    }
    let aggregator_dynamo = aws_sdk_dynamodb::Client::new(&roles.aggregator);
    let counts = FaultyCounts::with_plan(
        DynamoCounts::new(aggregator_dynamo.clone(), &settings.counts_table)
            .with_windows(DynamoLikes::new(aggregator_dynamo, &settings.likes_table)),
        plan,
    );
    let injected = std::sync::Arc::clone(&counts.injected);
    let function = ChaosFunction::new(
        AggregatorFunction::new(Aggregator::with_settings(
            counts,
            AggregatorSettings::from(settings.tuning),
        )),
        settings.chaos_seed,
    );
    let stats = Stats::default();
    let source = DynamoStream::new(
        aws_sdk_dynamodbstreams::Client::new(&roles.aggregator),
        stream_arn,
    );
    let mapping = Mapping {
        source: &source,
        function: &function,
        destination: &destination,
        config,
        checkpoints: &checkpoints,
        stats: &stats,
    };
    ready.store(true, Ordering::SeqCst);

    let report = Arc::new(Mutex::new(serde_json::Value::Null));
    setup::ensure_table(&dynamo, &MARKERS, &settings.markers_table).await?;
    let mut app = api::app(&settings, api_dynamo, jobs, erasures).await?;
    let authorizer = if let Some(auth) = own_auth {
        app = app.with_auth(auth);
        None
    } else {
        tracing::info!(
            "JWT authorizer: HS256, issuer {:?}, audience {:?} (`make token USER=<id>` issues one)",
            settings.auth.issuer,
            settings.auth.audience
        );
        Some(settings.auth.clone())
    };
    let gateway = Arc::new(gateway::Gateway {
        app,
        auth: authorizer,
        cors: cors.clone(),
        ready,
        stats: report.clone(),
        events: Arc::clone(&feed),
        lab: roles.lab.clone(),
    });
    tracing::info!(
        "likes API on http://127.0.0.1:{} (ready in {:.1}s); Ctrl-C stops everything",
        settings.port,
        started.elapsed().as_secs_f64()
    );
    tracing::info!(
        "browsers: pages on {} may call the API (CORS)",
        cors.describe()
    );
    let server = tokio::spawn(gateway::serve(listener, gateway));
    let demo_server = demo_listener.map(|l| {
        tracing::info!("demo page on {demo_origin}/ : pick a user, like posts, see who liked");
        let demo = Arc::new(demo::Demo {
            auth: settings.auth.clone(),
            api: format!("http://127.0.0.1:{}", settings.port),
        });
        tokio::spawn(demo::serve(l, demo))
    });
    // The erase queue's mapping receives and deletes with the worker's role, as Lambda's does.
    let eraser = tokio::spawn(erase_poller::run(worker_sqs, erase_queue, erase_worker));
    // With nothing to publish the events mapping is not run: on Lambda it would be invoked and
    // do nothing (invariant 9); here it would only add requests to the one-at-a-time emulator.
    let events_on = settings.event_rules.published != Published::None;
    tracing::info!(
        "like events ({:?}) on the bus {:?}, every one it accepts listed by GET /_local/events",
        settings.event_rules.published,
        settings.event_bus
    );
    // What the mapping and the chaos did, published for `GET /_local/stats` every second.
    let publish = async {
        loop {
            let c = &function.counts;
            let snapshot = json!({
                "mapping": stats.snapshot(),
                "aggregator": function.inner.totals.snapshot(),
                "events": {
                    "mapping": events_stats.snapshot(),
                    "function": events_function.totals.snapshot(),
                },
                "injected": {
                    "duplicate_deliveries": c.duplicate_deliveries.load(Ordering::Relaxed),
                    "function_errors": c.function_errors.load(Ordering::Relaxed),
                    "write_failures": injected.load(Ordering::Relaxed),
                }
            });
            if let Ok(mut r) = report.lock() {
                *r = snapshot;
            }
            tokio::time::sleep(std::time::Duration::from_millis(250)).await;
        }
    };
    // Not spawned: the mapping borrows the function and its stores, and need not be `Send`;
    // it runs on this task, next to the shutdown signal.
    tokio::select! {
        _ = mapping.run(shutdown_signal()) => {}
        _ = async {
            if events_on {
                events_mapping.run(std::future::pending::<()>()).await
            } else {
                std::future::pending::<()>().await
            }
        } => {}
        _ = publish => {}
    }
    tracing::info!("stopping");
    server.abort();
    eraser.abort();
    if let Some(d) = demo_server {
        d.abort();
    }
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
