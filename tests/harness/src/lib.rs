//! Shared harness for the integration tests: a DynamoDB client for the local emulator (moto's
//! server, started by `make test` / `infra/scripts/with-moto.sh`), throwaway tables created from the
//! same schema the template deploys, and a request helper that sends API Gateway events
//! (built by the test kit) through the handler.

pub mod calls;
pub mod events;
pub mod lab;
pub mod linear;
pub mod linear_single;
pub mod oidc;
pub mod props;
pub mod regions;
pub mod sdk_faults;
pub mod stepped;
pub mod stream;
pub mod valkey;

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use lambda_http::Request;
use likes_aws::dynamo::schema::{create_table, COUNTS, LIKES, MARKERS};
use likes_aws::{DynamoCounts, DynamoLikes};
use likes_core::{CountsRead, PostBucket, PostId, ReactionsStore, UserId};
pub use likes_sim::apigw::ApiEvent;
use serde_json::Value;

pub const ENDPOINT_VAR: &str = "LIKES_TEST_DYNAMODB_ENDPOINT";

/// The emulator itself (moto's server), behind no lab.
pub fn emulator() -> String {
    std::env::var(ENDPOINT_VAR).unwrap_or_else(|_| {
        panic!("{ENDPOINT_VAR} is not set: run the integration tests with `make test`, which starts the emulator")
    })
}

/// Where the tests send their calls: the lab in front of the emulator ([`lab::lab`]).
pub fn endpoint() -> String {
    lab::lab().endpoint().to_owned()
}

/// A client configured like production (retries, timeouts) but pointed at `endpoint`.
pub async fn client_for(endpoint: &str) -> Client {
    likes_aws::sdk::emulator_dynamo(endpoint).await
}

pub async fn client() -> Client {
    client_for(&endpoint()).await
}

/// A fresh pair of tables, unique to one test.
#[derive(Clone)]
pub struct Tables {
    pub client: Client,
    pub likes_table: String,
    pub counts_table: String,
    /// Named requests' markers, as deployed (the API's Likes store writes them here).
    pub markers_table: String,
}

impl Tables {
    pub async fn new() -> Self {
        Self::with_lag(std::time::Duration::ZERO).await
    }

    /// Fresh tables whose eventually consistent reads, and index queries, trail their writes
    /// by the lab's lag (`LIKES_LAB_READ_LAG_MS`, default 500 ms): a read that needs the latest
    /// state and does not ask for it strongly reads the past.
    pub async fn lagging() -> Self {
        Self::with_lag(lab::read_lag()).await
    }

    /// Fresh tables whose eventually consistent reads trail by `lag`.
    pub async fn with_lag(lag: std::time::Duration) -> Self {
        let client = client().await;
        let suffix = uuid::Uuid::new_v4().simple().to_string();
        if !lag.is_zero() {
            lab::lab().set_lag(&format!("*-{suffix}"), lag);
        }
        Self::create(client, &suffix).await
    }

    /// The Likes, Counts and Markers tables named `<table>-<suffix>`, created through `client`.
    pub async fn create(client: Client, suffix: &str) -> Self {
        let likes_table = format!("likes-{suffix}");
        let counts_table = format!("counts-{suffix}");
        let markers_table = format!("markers-{suffix}");
        for (def, table) in [
            (&LIKES, &likes_table),
            (&COUNTS, &counts_table),
            (&MARKERS, &markers_table),
        ] {
            create_table(&client, def, table)
                .await
                .unwrap_or_else(|e| panic!("create {table}: {e}"));
        }
        Self {
            client,
            likes_table,
            counts_table,
            markers_table,
        }
    }

    pub fn likes(&self) -> DynamoLikes {
        DynamoLikes::new(self.client.clone(), &self.likes_table)
            .with_markers(Some(&self.markers_table))
    }

    pub fn counts(&self) -> DynamoCounts {
        DynamoCounts::new(self.client.clone(), &self.counts_table)
    }

    /// The API as deployed: its stores signed as its role.
    pub fn app(&self) -> likes_api::App<DynamoLikes, DynamoCounts> {
        let api = self.as_role(lab::roles::API);
        likes_api::App::new(api.likes(), api.counts())
    }

    /// The same tables, called as `role` (`lab::roles`): the lab enforces its policy from the
    /// template. `Tables::new()`'s own client is the lab's admin (the tests' scaffolding).
    pub fn as_role(&self, role: &str) -> Tables {
        use aws_sdk_dynamodb::config::Credentials;
        let conf = self
            .client
            .config()
            .to_builder()
            .credentials_provider(Credentials::new(role, "local", None, None, "lab"))
            .build();
        Tables {
            client: Client::from_conf(conf),
            ..self.clone()
        }
    }

    /// The environment a function binary needs to run against these tables on the emulator,
    /// signed as its `role` (`lab::roles`).
    pub fn lambda_env(&self, role: &str) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL_DYNAMODB", endpoint()),
            ("AWS_REGION", "us-east-1".to_owned()),
            ("AWS_ACCESS_KEY_ID", role.to_owned()),
            ("AWS_SECRET_ACCESS_KEY", "test".to_owned()),
            ("LIKES_TABLE_NAME", self.likes_table.clone()),
            ("COUNTS_TABLE_NAME", self.counts_table.clone()),
            ("MARKERS_TABLE_NAME", self.markers_table.clone()),
        ]
    }

    /// Writes a like straight into the Likes table, as the API stores it (its persistent item
    /// format), behind the API's back: the stream sees it, the API's write path does not run.
    pub async fn put_like(&self, post: &PostId, user: &UserId, liked_at: &str) {
        use likes_aws::dynamo::schema::likes::{LIKED_AT, PK, POST_ID, SK};
        let row = PostBucket::for_like(post, user);
        self.client
            .put_item()
            .table_name(&self.likes_table)
            .item(PK, AttributeValue::S(row.to_string()))
            .item(SK, AttributeValue::S(user.to_string()))
            .item(POST_ID, AttributeValue::S(post.to_string()))
            .item(LIKED_AT, AttributeValue::S(liked_at.to_owned()))
            .send()
            .await
            .expect("a like written");
    }

    /// Every item in a table (consistent scan): what the tests assert against.
    pub async fn scan(&self, table: &str) -> Vec<HashMap<String, AttributeValue>> {
        scan(&self.client, table).await
    }

    /// (post_id, user_id) of every like in the Likes table (control items, whose sort key
    /// starts with `~`, are not likes).
    pub async fn like_pairs(&self) -> Vec<(String, String)> {
        let mut pairs: Vec<(String, String)> = self
            .scan(&self.likes_table)
            .await
            .into_iter()
            .filter(|item| !item["user_id"].as_s().is_ok_and(|u| u.starts_with('~')))
            .map(|item| {
                let s = |k: &str| item[k].as_s().expect("string attribute").clone();
                (s("post_id"), s("user_id"))
            })
            .collect();
        pairs.sort();
        pairs
    }
}

/// The event converted by lambda_http exactly as in production.
pub fn request(event: &ApiEvent) -> Request {
    lambda_http::request::from_str(&event.to_json().to_string())
        .expect("valid API Gateway v2 event")
}

/// What a response said: status, JSON body, headers.
pub type Reply = (u16, Value, http::HeaderMap);

/// Sends one event through the handler, as API Gateway would after its authorizer.
pub async fn call<L: ReactionsStore, C: CountsRead>(
    app: &likes_api::App<L, C>,
    event: ApiEvent,
) -> Reply {
    let resp = app.handle(request(&event)).await;
    let status = resp.status().as_u16();
    let headers = resp.headers().clone();
    let bytes: &[u8] = resp.body().as_ref();
    let body = serde_json::from_slice(bytes).expect("response body is JSON");
    (status, body, headers)
}

/// `method path` as the user `sub`, no query, no body.
pub async fn call_as<L: ReactionsStore, C: CountsRead>(
    app: &likes_api::App<L, C>,
    method: &str,
    path: &str,
    sub: &str,
) -> Reply {
    call(app, ApiEvent::new(method, path).caller(sub)).await
}

pub fn like_path(post: &impl std::fmt::Display) -> String {
    format!("/posts/{post}/like")
}

/// Counts the HTTP requests a client sends to DynamoDB, by operation (every attempt counts):
/// how the tests check what each route costs.
#[derive(Debug, Clone, Default)]
pub struct RequestCounter {
    counts: std::sync::Arc<std::sync::Mutex<HashMap<String, usize>>>,
}

impl RequestCounter {
    pub fn take(&self) -> HashMap<String, usize> {
        std::mem::take(&mut *self.counts.lock().expect("counter lock"))
    }
}

impl aws_sdk_dynamodb::config::Intercept for RequestCounter {
    fn name(&self) -> &'static str {
        "RequestCounter"
    }

    fn read_before_transmit(
        &self,
        _ctx: &aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef<'_>,
        _rc: &aws_sdk_dynamodb::config::RuntimeComponents,
        cfg: &mut aws_sdk_dynamodb::config::ConfigBag,
    ) -> Result<(), aws_sdk_dynamodb::error::BoxError> {
        let op = cfg
            .load::<aws_smithy_runtime_api::client::orchestrator::Metadata>()
            .map(|m| m.name().to_owned())
            .unwrap_or_else(|| "unknown".to_owned());
        *self
            .counts
            .lock()
            .expect("counter lock")
            .entry(op)
            .or_default() += 1;
        Ok(())
    }
}

impl Tables {
    /// Sends `method path` as `sub` from a second device: its own client (no injected faults),
    /// its own thread and runtime, waited for. Safe to call from inside an interceptor.
    pub fn second_device(&self, method: &str, path: &str, sub: &str) -> Reply {
        self.second_device_of(likes_core::Reactions::default(), method, path, sub)
    }

    /// As [`Tables::second_device`], on a deployment with these reaction settings.
    pub fn second_device_of(
        &self,
        reactions: likes_core::Reactions,
        method: &str,
        path: &str,
        sub: &str,
    ) -> Reply {
        let (t, method, path, sub) = (
            self.clone(),
            method.to_owned(),
            path.to_owned(),
            sub.to_owned(),
        );
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("a runtime");
            let app = t.app().with_reactions(reactions);
            rt.block_on(async { call_as(&app, &method, &path, &sub).await })
        })
        .join()
        .expect("the second device's request")
    }

    /// An app (signed as the API's role) whose DynamoDB client runs `interceptor` on every
    /// request.
    pub fn app_with<I>(&self, interceptor: I) -> likes_api::App<DynamoLikes, DynamoCounts>
    where
        I: aws_sdk_dynamodb::config::Intercept + 'static,
    {
        let conf = self
            .as_role(lab::roles::API)
            .client
            .config()
            .to_builder()
            .interceptor(interceptor)
            .build();
        let client = Client::from_conf(conf);
        likes_api::App::new(
            DynamoLikes::new(client.clone(), &self.likes_table)
                .with_markers(Some(&self.markers_table)),
            DynamoCounts::new(client, &self.counts_table),
        )
    }

    /// An app whose DynamoDB client counts its requests.
    pub fn counted_app(&self) -> (likes_api::App<DynamoLikes, DynamoCounts>, RequestCounter) {
        let counter = RequestCounter::default();
        (self.app_with(counter.clone()), counter)
    }
}

/// An erase queue that keeps what it was given: what the API or the worker sent, in order,
/// each with the delay it was sent with.
#[derive(Default)]
pub struct RecordedQueue(
    pub std::sync::Mutex<Vec<(likes_core::erase_job::EraseJob, std::time::Duration)>>,
    /// Messages forwarded as they came (product events), each with its delay.
    pub std::sync::Mutex<Vec<(String, std::time::Duration)>>,
);

impl RecordedQueue {
    pub fn jobs(&self) -> Vec<likes_core::erase_job::EraseJob> {
        self.sent().into_iter().map(|(job, _)| job).collect()
    }

    /// Each job with its delay.
    pub fn sent(&self) -> Vec<(likes_core::erase_job::EraseJob, std::time::Duration)> {
        self.0.lock().map(|j| j.clone()).unwrap_or_default()
    }

    /// The bodies forwarded.
    pub fn forwarded(&self) -> Vec<String> {
        self.forwarded_with_delays()
            .into_iter()
            .map(|(body, _)| body)
            .collect()
    }

    pub fn forwarded_with_delays(&self) -> Vec<(String, std::time::Duration)> {
        self.1.lock().map(|j| j.clone()).unwrap_or_default()
    }
}

impl likes_core::erase_job::EraseQueue for RecordedQueue {
    fn submit<'a>(
        &'a self,
        job: &'a likes_core::erase_job::EraseJob,
    ) -> likes_core::erase_job::Submitted<'a> {
        self.submit_after(job, std::time::Duration::ZERO)
    }

    fn submit_after<'a>(
        &'a self,
        job: &'a likes_core::erase_job::EraseJob,
        delay: std::time::Duration,
    ) -> likes_core::erase_job::Submitted<'a> {
        Box::pin(async move {
            if let Ok(mut jobs) = self.0.lock() {
                jobs.push((job.clone(), delay));
            }
            Ok(())
        })
    }

    fn forward<'a>(
        &'a self,
        body: &'a str,
        delay: std::time::Duration,
    ) -> likes_core::erase_job::Submitted<'a> {
        Box::pin(async move {
            if let Ok(mut bodies) = self.1.lock() {
                bodies.push((body.to_owned(), delay));
            }
            Ok(())
        })
    }
}

/// Polls an eventually consistent read until `done` holds of what it answers (a listing, an
/// index query: what the lab's lagging tables serve late), at most 20 s; what it read last.
/// Once it shows the last write, every write before it shows too: the lab applies writes to
/// its replicas in the order they were made.
pub async fn eventually<T, F, Fut>(what: &str, mut read: F, done: impl Fn(&T) -> bool) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = T>,
    T: std::fmt::Debug,
{
    let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let now = read().await;
        if done(&now) {
            return now;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "{what} never showed what was written: {now:?}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
}

/// Every item in `table` through `client` (consistent scan, every page).
pub async fn scan(client: &Client, table: &str) -> Vec<HashMap<String, AttributeValue>> {
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let page = client
            .scan()
            .table_name(table)
            .consistent_read(true)
            .set_exclusive_start_key(start)
            .send()
            .await
            .expect("scan");
        out.extend(page.items.unwrap_or_default());
        match page.last_evaluated_key {
            Some(k) if !k.is_empty() => start = Some(k),
            _ => return out,
        }
    }
}

/// A free loopback port, for a server a test starts (the server may still lose it to another
/// process before it binds: its starter retries on a fresh one).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free loopback port")
}
