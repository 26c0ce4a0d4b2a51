//! Where the local mapping puts what it keeps: the on-failure destination (an SQS queue on the
//! emulator, as the template's `AggregatorFailureQueue`), and its per-shard checkpoints (a file,
//! so that a restarted local stack resumes where it stopped).

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::sync::Mutex;

use serde_json::Value;

/// The queue the aggregator's mapping sends given-up batches to (the template's
/// `AggregatorFailureQueue`).
pub const FAILURE_QUEUE: &str = "likes-aggregator-failures";

pub trait Destination {
    fn send(&self, failure: Value) -> impl Future<Output = Result<(), String>>;
}

/// The on-failure destination on the emulator's SQS.
pub struct SqsDestination {
    pub client: aws_sdk_sqs::Client,
    pub queue_url: String,
}

impl SqsDestination {
    /// Creates (or finds) the queue `name`.
    /// Creates (or finds) the queue `name` with `admin`'s client; `client` sends to it (the
    /// function's role, as Lambda's mapping sends with it).
    pub async fn create(
        admin: &aws_sdk_sqs::Client,
        client: aws_sdk_sqs::Client,
        name: &str,
    ) -> Result<Self, String> {
        let out = admin
            .create_queue()
            .queue_name(name)
            .send()
            .await
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())?;
        let queue_url = out.queue_url.ok_or("the queue has no URL")?;
        Ok(Self { client, queue_url })
    }
}

impl Destination for SqsDestination {
    async fn send(&self, failure: Value) -> Result<(), String> {
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(failure.to_string())
            .send()
            .await
            .map(|_| ())
            .map_err(|e| aws_sdk_sqs::error::DisplayErrorContext(e).to_string())
    }
}

/// Failure records kept in memory, for tests.
#[derive(Debug, Default)]
pub struct MemoryDestination(pub Mutex<Vec<Value>>);

impl Destination for MemoryDestination {
    async fn send(&self, failure: Value) -> Result<(), String> {
        self.0.lock().map_err(|_| "lock")?.push(failure);
        Ok(())
    }
}

/// The last record fully handled, per shard, per stream: where a restart resumes. Lost, the
/// mapping starts from the oldest record (`TRIM_HORIZON`, as the template's), replays
/// everything, and the aggregator's marks make the replay harmless: time, not counts, is lost.
#[derive(Debug)]
pub struct Checkpoints {
    file: Option<PathBuf>,
    done: Mutex<BTreeMap<String, BTreeMap<String, String>>>,
}

impl Checkpoints {
    /// Kept in `file` when given, else in memory only.
    pub fn load(file: Option<PathBuf>) -> Self {
        let done = file
            .as_ref()
            .and_then(|f| std::fs::read_to_string(f).ok())
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        Self {
            file,
            done: Mutex::new(done),
        }
    }

    pub fn get(&self, stream: &str, shard: &str) -> Option<String> {
        self.done.lock().ok()?.get(stream)?.get(shard).cloned()
    }

    pub fn set(&self, stream: &str, shard: &str, seq: &str) {
        let Ok(mut done) = self.done.lock() else {
            return;
        };
        done.entry(stream.to_owned())
            .or_default()
            .insert(shard.to_owned(), seq.to_owned());
        if let Some(file) = &self.file {
            let text = serde_json::to_string_pretty(&*done).unwrap_or_default();
            // Written whole, then renamed: a crash mid-write leaves the previous file.
            let tmp = file.with_extension("tmp");
            if std::fs::write(&tmp, text).is_ok() {
                let _ = std::fs::rename(&tmp, file);
            }
        }
    }
}
