//! The whole likes system on one machine, for development: moto's DynamoDB + Streams emulator,
//! API Gateway with its JWT authorizer, and the stream event source mapping, played locally
//! around the same handler code that runs on Lambda.

pub mod gateway;
pub mod jwt;
pub mod poller;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use aws_sdk_dynamodb::config::{Credentials, Region};
use count_aggregator::Aggregator;
use likes_core::schema::{create_table, COUNTS, LIKES};
use likes_core::{
    ApplyOutcome, CountRow, CountsStore, DynamoCounts, DynamoLikes, PostBucket, PostId, SeqNo,
    StoreError,
};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};

#[derive(Debug, thiserror::Error)]
pub enum LocalError {
    #[error("port {0} is busy: stop what uses it, or run with LIKES_PORT=<another port>")]
    PortBusy(u16),
    #[error("cannot listen on 127.0.0.1:{0}: {1}")]
    Listen(u16, std::io::Error),
    #[error("the emulator is not installed at {0}: run `make dev` (it installs it into .venv), or set LIKES_MOTO_SERVER, or point LIKES_DYNAMODB_ENDPOINT at a running emulator")]
    NoEmulator(String),
    #[error("could not start the emulator: {0}")]
    EmulatorStart(String),
    #[error("DynamoDB setup failed: {0}")]
    Setup(String),
}

/// Settings, all from the environment (see the README).
#[derive(Debug, Clone)]
pub struct Settings {
    pub port: u16,
    pub endpoint: Option<String>,
    pub secret: String,
    pub likes_table: String,
    pub counts_table: String,
    /// Test hook: the aggregator's first N writes fail, to exercise redelivery.
    pub fail_first_writes: usize,
}

impl Settings {
    pub fn from_env() -> Result<Self, String> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        let port = match var("LIKES_PORT") {
            Some(p) => p
                .parse()
                .map_err(|_| format!("LIKES_PORT={p:?} is not a port number"))?,
            None => 3000,
        };
        let fail_first_writes = match var("LIKES_LOCAL_FAIL_FIRST_WRITES") {
            Some(n) => n
                .parse()
                .map_err(|_| format!("LIKES_LOCAL_FAIL_FIRST_WRITES={n:?} is not a number"))?,
            None => 0,
        };
        Ok(Self {
            port,
            endpoint: var("LIKES_DYNAMODB_ENDPOINT"),
            secret: var("LIKES_DEV_JWT_SECRET").unwrap_or_else(|| jwt::DEFAULT_SECRET.to_owned()),
            likes_table: var("LIKES_TABLE_NAME").unwrap_or_else(|| "likes".to_owned()),
            counts_table: var("COUNTS_TABLE_NAME").unwrap_or_else(|| "counts".to_owned()),
            fail_first_writes,
        })
    }
}

/// A Counts store whose first `n` writes fail (the local test hook).
pub struct FlakyCounts<C> {
    inner: C,
    remaining: AtomicUsize,
}

impl<C> FlakyCounts<C> {
    pub fn new(inner: C, fail_first: usize) -> Self {
        Self {
            inner,
            remaining: AtomicUsize::new(fail_first),
        }
    }
}

impl<C: CountsStore> CountsStore for FlakyCounts<C> {
    async fn apply(
        &self,
        row: PostBucket,
        delta: i64,
        first: &SeqNo,
        last: &SeqNo,
        now: &str,
    ) -> Result<ApplyOutcome, StoreError> {
        let failing = self
            .remaining
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
            .is_ok();
        if failing {
            return Err(StoreError::Unavailable(
                "injected by LIKES_LOCAL_FAIL_FIRST_WRITES".into(),
            ));
        }
        self.inner.apply(row, delta, first, last, now).await
    }

    async fn read_row(&self, row: PostBucket) -> Result<Option<CountRow>, StoreError> {
        self.inner.read_row(row).await
    }

    async fn post_count(&self, post: PostId) -> Result<i64, StoreError> {
        self.inner.post_count(post).await
    }
}

fn moto_path() -> PathBuf {
    std::env::var_os("LIKES_MOTO_SERVER")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/../../.venv/bin/moto_server"
            ))
        })
}

fn free_port() -> Result<u16, LocalError> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| LocalError::EmulatorStart(e.to_string()))
}

/// Starts moto's server on a free loopback port; it is killed when the returned child drops.
pub async fn start_emulator() -> Result<(Child, String), LocalError> {
    let path = moto_path();
    if !path.exists() {
        return Err(LocalError::NoEmulator(path.display().to_string()));
    }
    let port = free_port()?;
    let child = Command::new(&path)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| LocalError::EmulatorStart(format!("{}: {e}", path.display())))?;
    let addr: SocketAddr = ([127, 0, 0, 1], port).into();
    let deadline = Instant::now() + Duration::from_secs(30);
    while tokio::net::TcpStream::connect(addr).await.is_err() {
        if Instant::now() > deadline {
            return Err(LocalError::EmulatorStart(
                "it did not listen within 30 s".into(),
            ));
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    Ok((child, format!("http://{addr}")))
}

async fn sdk_config(endpoint: &str) -> aws_config::SdkConfig {
    likes_core::config::sdk_loader()
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(
            "local",
            "local",
            None,
            None,
            "likes-local",
        ))
        .load()
        .await
}

async fn ensure_table(
    client: &aws_sdk_dynamodb::Client,
    def: &likes_core::schema::TableDef,
    name: &str,
) -> Result<(), LocalError> {
    let exists = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .is_ok();
    if !exists {
        create_table(client, def, name)
            .await
            .map_err(|e| LocalError::Setup(format!("creating {name}: {e}")))?;
    }
    Ok(())
}

/// Runs everything until Ctrl-C / SIGTERM.
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
            let (child, endpoint) = start_emulator().await?;
            (Some(child), endpoint)
        }
    };
    tracing::info!("emulator at {endpoint}");
    let conf = sdk_config(&endpoint).await;
    let dynamo = aws_sdk_dynamodb::Client::new(&conf);
    ensure_table(&dynamo, &LIKES, &settings.likes_table).await?;
    ensure_table(&dynamo, &COUNTS, &settings.counts_table).await?;
    let stream_arn = dynamo
        .describe_table()
        .table_name(&settings.likes_table)
        .send()
        .await
        .map_err(|e| {
            LocalError::Setup(aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string())
        })?
        .table
        .and_then(|t| t.latest_stream_arn)
        .ok_or_else(|| LocalError::Setup("the Likes table has no stream".into()))?;

    let ready = Arc::new(AtomicBool::new(false));
    let streams = aws_sdk_dynamodbstreams::Client::new(&conf);
    let aggregator = Aggregator::new(FlakyCounts::new(
        DynamoCounts::new(dynamo.clone(), &settings.counts_table),
        settings.fail_first_writes,
    ));
    // Not spawned: the aggregator's borrowed futures are not `Send` for every lifetime, and
    // they need not be; the poller runs on this task, next to the shutdown signal.
    let poller = poller::run(streams, stream_arn, aggregator);
    ready.store(true, Ordering::SeqCst);

    let gateway = Arc::new(gateway::Gateway {
        app: likes_api::App::new(
            DynamoLikes::new(dynamo.clone(), &settings.likes_table),
            DynamoCounts::new(dynamo, &settings.counts_table),
        ),
        secret: settings.secret.clone(),
        ready,
    });
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
