//! Day-2 operations against the local stack (emulator, API, mapping, aggregator), each command
//! run in-process exactly as `likes-admin` runs it: audit finds injected drift and only it;
//! recount makes a hot post exact while likes flow and the mapping redelivers; erase a user's
//! and a post's likes; backfill a table the stream never saw; a person's own erase through the
//! API and its worker.

use crate::common;
mod account;
mod erase;
mod given_up;
mod homes;
mod policies;
mod product;
mod reactions;
mod recount;
mod repairs;
mod suspend;

use std::time::{Duration, Instant};

use aws_sdk_dynamodb::types::AttributeValue;
use clap::Parser;
use common::{Emulator, Options, Stack};
use likes_admin::cli::Cli;
use likes_admin::commands::run;
use likes_admin::report::Report;
use likes_admin::{AdminError, Stores};
use likes_aws::{DynamoCounts, DynamoLikes};
use likes_core::{CountsLedger, LikesAdmin, PostBucket, PostId, BUCKETS};

/// A stack on an emulator this test owns, so that it can write to the tables directly.
pub struct Local {
    /// Kept for the stack's life: dropping it stops the emulator.
    _emulator: Emulator,
    pub stack: Stack,
    pub rt: tokio::runtime::Runtime,
    pub client: aws_sdk_dynamodb::Client,
    /// The stores `likes-admin` works on, for calls the command line does not make.
    pub stores: Stores<DynamoLikes, DynamoCounts>,
}

impl Local {
    pub fn start(chaos_seed: Option<u64>) -> Self {
        let emulator = Emulator::start();
        Self::on(emulator, chaos_seed)
    }

    pub fn on(emulator: Emulator, chaos_seed: Option<u64>) -> Self {
        Self::with(emulator, chaos_seed, Vec::new())
    }

    /// A stack with these settings besides (`LIKES_REACTION_KINDS`, …).
    pub fn with(
        emulator: Emulator,
        chaos_seed: Option<u64>,
        env: Vec<(&'static str, String)>,
    ) -> Self {
        let stack = Stack::start(&Options {
            endpoint: Some(emulator.endpoint.clone()),
            chaos_seed,
            env,
            ..Options::default()
        });
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("a runtime");
        let client = rt.block_on(likes_aws::sdk::emulator_dynamo(&emulator.endpoint));
        let stores = Stores {
            likes: DynamoLikes::new(client.clone(), "likes"),
            counts: DynamoCounts::new(client.clone(), "counts"),
            fence_wait: Duration::from_secs(120),
            lease_term: likes_admin::DEFAULT_LEASE_TERM,
        };
        Self {
            _emulator: emulator,
            stack,
            rt,
            client,
            stores,
        }
    }

    /// `likes-admin --json <args>` against this stack, through its lab: as the operators'
    /// policy, which must allow every call the command makes.
    pub fn admin(&self, args: &[&str]) -> Result<Report, AdminError> {
        let lab = self.stack.lab()["endpoint"]
            .as_str()
            .expect("the stack's lab")
            .to_owned();
        let queue = self.erase_queue_url();
        let mut argv = vec![
            "likes-admin",
            "--json",
            "--endpoint-url",
            &lab,
            "--likes-table",
            "likes",
            "--counts-table",
            "counts",
            "--erase-queue-url",
            &queue,
            "--erase-requests-table",
            "erase-requests",
        ];
        argv.extend_from_slice(args);
        let cli = Cli::try_parse_from(argv).map_err(|e| AdminError::Usage(e.to_string()))?;
        let report = self.rt.block_on(run(&cli));
        let denied = self.stack.denied();
        assert!(denied.is_empty(), "the lab refused calls: {denied:#?}");
        report
    }

    /// Puts one of the product's events on its bus (`likes-product`), as the product would:
    /// `PutEvents`, source `product`.
    pub fn put_product_event(&self, detail_type: &str, detail: &serde_json::Value) {
        let endpoint = &self._emulator.endpoint;
        self.rt
            .block_on(common::put_product_event(endpoint, detail_type, detail));
    }

    /// The bodies on the erase queue's dead-letter queue (read, not removed: each one is
    /// received once here, invisible for a while afterwards).
    pub fn dead_letters(&self) -> Vec<String> {
        self.rt.block_on(async {
            let conf = likes_aws::sdk::emulator_as(&self._emulator.endpoint, "admin").await;
            let sqs = aws_sdk_sqs::Client::new(&conf);
            let url = sqs
                .get_queue_url()
                .queue_name(likes_local::erase_poller::ERASE_DLQ)
                .send()
                .await
                .expect("the dead-letter queue")
                .queue_url
                .expect("its URL");
            let out = sqs
                .receive_message()
                .queue_url(url)
                .max_number_of_messages(10)
                .send()
                .await
                .expect("ReceiveMessage");
            out.messages()
                .iter()
                .filter_map(|m| m.body().map(str::to_owned))
                .collect()
        })
    }

    /// The stack's erase queue (its `EraseQueueUrl`).
    pub fn erase_queue_url(&self) -> String {
        let sqs = self.rt.block_on(async {
            let conf = likes_aws::sdk::emulator_as(&self._emulator.endpoint, "admin").await;
            aws_sdk_sqs::Client::new(&conf)
        });
        self.rt
            .block_on(
                sqs.get_queue_url()
                    .queue_name(likes_local::erase_poller::ERASE_QUEUE)
                    .send(),
            )
            .expect("the erase queue")
            .queue_url
            .expect("its URL")
    }

    /// Like items of `post` in each bucket (consistent; control items excluded).
    pub fn table_counts(&self, post: &str) -> Vec<i64> {
        let post = PostId::parse(post).expect("a post id");
        (0..BUCKETS)
            .map(|b| {
                let pb = PostBucket {
                    post: post.clone(),
                    bucket: b,
                };
                self.rt
                    .block_on(self.stores.likes.count_bucket(&pb))
                    .expect("count query")
            })
            .collect()
    }

    /// The Counts item's 16 partial counts.
    pub fn counted(&self, post: &str) -> Vec<i64> {
        let post = PostId::parse(post).expect("a post id");
        let item = self
            .rt
            .block_on(self.stores.counts.read_post(&post))
            .expect("read Counts")
            .unwrap_or_default();
        item.buckets.iter().map(|b| b.count).collect()
    }

    /// Polls until the Counts item equals the table, bucket by bucket; panics at the deadline.
    pub fn wait_exact(&self, post: &str, within: Duration) -> Vec<i64> {
        let deadline = Instant::now() + within;
        loop {
            let (counted, table) = (self.counted(post), self.table_counts(post));
            if counted == table {
                return table;
            }
            assert!(
                Instant::now() < deadline,
                "post {post}: counted {counted:?}, the table holds {table:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Adds `delta` to one bucket's count behind the aggregator's back: drift.
    pub fn drift(&self, post: &str, bucket: u8, delta: i64) {
        let (c, _, _) = likes_aws::dynamo::counts::bucket_attrs(bucket);
        self.rt
            .block_on(
                self.client
                    .update_item()
                    .table_name("counts")
                    .key("post_id", AttributeValue::S(post.into()))
                    .update_expression("ADD #c :d")
                    .expression_attribute_names("#c", c)
                    .expression_attribute_values(":d", AttributeValue::N(delta.to_string()))
                    .send(),
            )
            .expect("drift written");
    }

    /// Puts like items straight into the table.
    pub fn load(&self, table: &str, likes: &[(String, String)]) {
        load(&self.rt, &self.client, table, likes);
    }
}

/// Puts like items straight into a table, 25 per BatchWriteItem.
pub fn load(
    rt: &tokio::runtime::Runtime,
    client: &aws_sdk_dynamodb::Client,
    table: &str,
    likes: &[(String, String)],
) {
    use aws_sdk_dynamodb::types::{PutRequest, WriteRequest};
    for chunk in likes.chunks(25) {
        let mut pending: Vec<WriteRequest> = chunk
            .iter()
            .map(|(post, user)| {
                let pb = PostBucket::for_like(
                    &PostId::parse(post).expect("a post id"),
                    &likes_core::UserId::parse(user).expect("a user id"),
                )
                .to_string();
                let put = PutRequest::builder()
                    .item("post_bucket", AttributeValue::S(pb))
                    .item("user_id", AttributeValue::S(user.clone()))
                    .item("post_id", AttributeValue::S(post.clone()))
                    .item(
                        "liked_at",
                        AttributeValue::S("2026-11-30T12:00:00.000Z".into()),
                    )
                    .build()
                    .expect("a put");
                WriteRequest::builder().put_request(put).build()
            })
            .collect();
        while !pending.is_empty() {
            let out = rt
                .block_on(
                    client
                        .batch_write_item()
                        .request_items(table, pending.clone())
                        .send(),
                )
                .expect("batch write");
            pending = out
                .unprocessed_items
                .and_then(|mut m| m.remove(table))
                .unwrap_or_default();
        }
    }
}
