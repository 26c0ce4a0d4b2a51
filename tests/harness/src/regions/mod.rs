//! Two regions on two emulators (docs/regions.md): region A on the suite's moto, region B on a
//! second moto this starts; in each, the Likes, Counts and Markers tables as deployed, the
//! pending-erasures table (the region's served homes), an API, and an aggregator counting
//! that region's own stream into its own Counts table. A replicator
//! (`replicator`) plays MREC global tables between the two Likes tables (Markers are not
//! replicated: the simulation's workload sends no named requests).
//!
//! Streams are read as the event source mapping reads them: a shard iterator from the trim
//! horizon, every page, `MODIFY` dropped by the mapping's filter, in order.

pub mod replicator;

use std::collections::HashMap;
use std::process::Stdio;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodbstreams::types::ShardIteratorType;
use count_aggregator::Aggregator;
use likes_aws::dynamo::schema::{create_table, ERASE_REQUESTS};
use likes_aws::{DynamoCounts, DynamoHomes, DynamoLikes};
use likes_core::{bucket_of, CountsRead, PostBucket, PostId, UserId};
use likes_sim::stream::StreamRecord;
use tokio::process::{Child, Command};
use tokio::sync::Mutex;

use crate::stream::event_json;
use crate::Tables;
use replicator::{Delays, Replicator};

/// A second moto server on a loopback port of its own, stopped when dropped.
pub struct Moto {
    pub endpoint: String,
    _child: Child,
}

impl Moto {
    /// Starts one with the suite's virtualenv (`make test` makes it) and waits until it answers;
    /// one that exits at once (its port taken meanwhile) is started again on another port.
    pub async fn start() -> Self {
        for _ in 0..5 {
            if let Some(moto) = Self::try_start().await {
                return moto;
            }
        }
        panic!("the second moto exited at start five times: run infra/scripts/moto-server.py -H 127.0.0.1 -p <port> to see why");
    }

    async fn try_start() -> Option<Self> {
        let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
        let port = crate::free_port();
        let mut child = Command::new(format!("{root}/.venv/bin/python"))
            .arg(format!("{root}/infra/scripts/moto-server.py"))
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .expect("moto starts (.venv: infra/scripts/venv.sh, which make test runs)");
        let endpoint = format!("http://127.0.0.1:{port}");
        let client = crate::client_for(&endpoint).await;
        let deadline = tokio::time::Instant::now() + Duration::from_secs(30);
        while client.list_tables().send().await.is_err() {
            if child.try_wait().ok().flatten().is_some() {
                return None;
            }
            assert!(
                tokio::time::Instant::now() < deadline,
                "the second moto did not answer on {endpoint} within 30 s"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        Some(Self {
            endpoint,
            _child: child,
        })
    }
}

/// One change in a stream, as the mapping hands it on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// `INSERT`, `MODIFY` or `REMOVE`.
    pub name: String,
    pub post_bucket: String,
    pub user_id: String,
    pub seq: String,
    /// When the write was made (the record's approximate creation time; moto's has ms), µs
    /// since the epoch.
    pub at_us: u128,
}

/// A reader of a table's stream (moto's: one shard), from its trim horizon.
pub struct StreamTail {
    client: aws_sdk_dynamodbstreams::Client,
    iterator: Option<String>,
}

impl StreamTail {
    pub async fn open(endpoint: &str, arn: &str) -> Self {
        let conf = likes_aws::sdk::emulator(endpoint).await;
        let client = aws_sdk_dynamodbstreams::Client::new(&conf);
        let stream = client
            .describe_stream()
            .stream_arn(arn)
            .send()
            .await
            .expect("the stream");
        let shard = stream
            .stream_description()
            .and_then(|d| d.shards().first())
            .and_then(|s| s.shard_id())
            .expect("a shard")
            .to_owned();
        let iterator = client
            .get_shard_iterator()
            .stream_arn(arn)
            .shard_id(shard)
            .shard_iterator_type(ShardIteratorType::TrimHorizon)
            .send()
            .await
            .expect("an iterator")
            .shard_iterator;
        Self { client, iterator }
    }

    /// Every change since the last read, in the shard's order.
    pub async fn read(&mut self) -> Vec<Change> {
        let mut changes = Vec::new();
        while let Some(iterator) = self.iterator.clone() {
            let page = self
                .client
                .get_records()
                .shard_iterator(iterator)
                .send()
                .await
                .expect("a page of the stream");
            self.iterator = page.next_shard_iterator().map(str::to_owned);
            if page.records().is_empty() {
                break;
            }
            for r in page.records() {
                let Some(d) = r.dynamodb() else { continue };
                let key = |name: &str| {
                    d.keys()
                        .and_then(|k| k.get(name))
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default()
                };
                changes.push(Change {
                    name: r
                        .event_name()
                        .map(|n| n.as_str().to_owned())
                        .unwrap_or_default(),
                    post_bucket: key("post_bucket"),
                    user_id: key("user_id"),
                    seq: d.sequence_number().unwrap_or_default().to_owned(),
                    at_us: d
                        .approximate_creation_date_time()
                        .map_or(0, |t| (t.as_secs_f64() * 1e6) as u128),
                });
            }
        }
        changes
    }
}

/// One region: its tables, its API's stores, its aggregator.
pub struct Region {
    pub name: &'static str,
    pub endpoint: String,
    /// Its Likes, Counts and Markers tables (the same names in both regions, as a global
    /// table's replicas have).
    pub tables: Tables,
    /// Its pending-erasures table: the homes it serves (`region#homes`), its own.
    pub erase_requests_table: String,
    pub stream_arn: String,
    /// The aggregator's own reader of this region's stream.
    counted: Mutex<StreamTail>,
}

impl Region {
    /// Creates the region's tables on the emulator at `endpoint`.
    pub async fn create(name: &'static str, endpoint: &str, suffix: &str) -> Arc<Self> {
        let tables = Tables::create(crate::client_for(endpoint).await, suffix).await;
        let described = tables
            .client
            .describe_table()
            .table_name(&tables.likes_table)
            .send()
            .await
            .expect("the Likes table");
        let stream_arn = described
            .table()
            .and_then(|t| t.latest_stream_arn())
            .expect("a stream")
            .to_owned();
        let counted = Mutex::new(StreamTail::open(endpoint, &stream_arn).await);
        let erase_requests_table = format!("erase-requests-{suffix}");
        create_table(&tables.client, &ERASE_REQUESTS, &erase_requests_table)
            .await
            .expect("the pending-erasures table");
        Arc::new(Self {
            name,
            endpoint: endpoint.to_owned(),
            tables,
            erase_requests_table,
            stream_arn,
            counted,
        })
    }

    pub fn likes(&self) -> DynamoLikes {
        self.tables.likes()
    }

    pub fn counts(&self) -> DynamoCounts {
        self.tables.counts()
    }

    /// The region's API (no count cache: every read sees the region's Counts table).
    pub fn app(&self) -> likes_api::App<DynamoLikes, DynamoCounts> {
        likes_api::App::new(self.likes(), self.counts())
    }

    /// The homes this region serves.
    pub fn homes(&self) -> DynamoHomes {
        DynamoHomes::new(self.tables.client.clone(), &self.erase_requests_table)
    }

    /// The region's API behind its home gate, homes named by the tokens' `claim`: a new
    /// execution environment, which reads the served homes afresh.
    pub fn homed_app(&self, claim: &str) -> likes_api::App<DynamoLikes, DynamoCounts> {
        self.app().with_homes(claim, Arc::new(self.homes()))
    }

    /// Each of `posts`: the likes this region's table holds (control items aside), and its
    /// count here.
    pub async fn counts_against_table(&self, posts: &[PostId]) -> Vec<(i64, i64)> {
        let mut held: HashMap<PostId, i64> = HashMap::new();
        for (pb, user) in self.items().await.keys() {
            if user.starts_with('~') {
                continue;
            }
            let pb = PostBucket::parse(pb).expect("a post bucket");
            *held.entry(pb.post).or_default() += 1;
        }
        let mut out = Vec::new();
        for p in posts {
            let counted = self.counts().post_count(p).await.expect("a count");
            out.push((held.get(p).copied().unwrap_or(0), counted));
        }
        out
    }

    /// Counts what this region's stream holds since the last call, as the mapping delivers it
    /// (its filter drops `MODIFY`): the number of records delivered.
    pub async fn aggregate(&self) -> usize {
        let changes = self.counted.lock().await.read().await;
        let records: Vec<serde_json::Value> = changes
            .iter()
            .filter(|c| c.name != "MODIFY")
            .map(|c| {
                StreamRecord::likes(&c.name, &c.post_bucket, &c.user_id, &c.seq)
                    .created(c.at_us as f64 / 1e6)
                    .to_json()
            })
            .collect();
        for chunk in records.chunks(100) {
            let report = Aggregator::new(self.counts())
                .process_json(&event_json(chunk).0, None)
                .await
                .expect("the batch parses");
            assert!(
                report.checkpoint.is_none(),
                "{}: the aggregator failed a batch: {report:?}",
                self.name
            );
        }
        records.len()
    }

    /// Every item of the Likes table (a consistent scan): (post_bucket, user_id) → item.
    pub async fn items(&self) -> std::collections::BTreeMap<(String, String), Item> {
        crate::scan(&self.tables.client, &self.tables.likes_table)
            .await
            .into_iter()
            .map(|item| {
                let key = |n: &str| {
                    item.get(n)
                        .and_then(|v| v.as_s().ok())
                        .cloned()
                        .unwrap_or_default()
                };
                ((key("post_bucket"), key("user_id")), Item(item))
            })
            .collect()
    }
}

/// An item's attributes, compared whole.
#[derive(Debug, Clone, PartialEq)]
pub struct Item(pub std::collections::HashMap<String, AttributeValue>);

/// The replicator, in the background every 20 ms, until the flag returned is set. (The
/// aggregators count at quiet points: their futures are not `Send`, and when a stream's
/// records are counted does not change what they sum to.)
pub fn spawn(replicator: &Arc<Replicator>) -> Arc<AtomicBool> {
    let stop = Arc::new(AtomicBool::new(false));
    tokio::spawn(Arc::clone(replicator).run(Arc::clone(&stop)));
    stop
}

/// Waits (polling, 60 s at most) until nothing waits to be replicated and a round of the
/// replicator and both aggregators finds nothing new.
pub async fn quiet(regions: &[Arc<Region>; 2], replicator: &Replicator) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    loop {
        // Nothing waiting before the round and nothing moved in it: no send can then land
        // after an aggregator's read (the background loop sends only what is waiting).
        let waiting = replicator.waiting().await;
        let moved =
            replicator.step().await + regions[0].aggregate().await + regions[1].aggregate().await;
        if waiting == 0 && moved == 0 && replicator.waiting().await == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "the regions never went quiet: {} changes waiting",
            replicator.waiting().await
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Regions A (on the suite's emulator) and B (on `b`), their tables named alike as a global
/// table's replicas are, and a replicator between them (`delays`, seeded).
pub async fn pair(b: &Moto, delays: Delays, seed: u64) -> ([Arc<Region>; 2], Arc<Replicator>) {
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let regions = [
        Region::create("A", &crate::emulator(), &suffix).await,
        Region::create("B", &b.endpoint, &suffix).await,
    ];
    let replicator = Replicator::new(
        [Arc::clone(&regions[0]), Arc::clone(&regions[1])],
        delays,
        seed,
    )
    .await;
    (regions, replicator)
}

/// The key [`Region::items`] gives `user`'s like of `post`.
pub fn like_key(post: &PostId, user: &UserId) -> (String, String) {
    let pb = PostBucket {
        post: post.clone(),
        bucket: bucket_of(user),
    };
    (pb.to_string(), user.to_string())
}
