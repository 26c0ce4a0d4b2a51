//! The DynamoDB event source mapping, played locally as Lambda documents it:
//!
//! - shards are processed concurrently, one batch at a time per shard
//!   (`ParallelizationFactor: 1`), and a shard only after its parent was read to its end;
//! - a batch holds up to `BatchSize` records that pass the filter (INSERT/REMOVE);
//! - the function's answer is read serialised, with Lambda's rules for partial batch responses
//!   (`response`): retry from the lowest failed record, or the whole batch when an identifier
//!   is empty, null or not in the batch;
//! - a function error (a panic, an invocation past the function's timeout) fails the batch; with
//!   `BisectBatchOnFunctionError` the retry takes half of it;
//! - a batch that failed more than `MaximumRetryAttempts` times, or records older than
//!   `MaximumRecordAgeInSeconds`, are given up: a record of them (shard, sequence range) goes to
//!   the on-failure destination, and the shard moves on;
//! - progress is checkpointed per shard, so that a restart resumes (`sinks::Checkpoints`).
//!
//! All of it is read from template.yaml (`config`).

pub mod config;
pub mod function;
pub mod response;
pub mod sinks;
pub mod source;
#[cfg(test)]
mod tests;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use likes_sim::stream::{batch as batch_json, StreamRecord};
use serde_json::{json, Value};
use tokio::time::Instant;

use self::config::MappingConfig;
use self::function::Function;
use self::response::{verdict, Verdict};
use self::sinks::{Checkpoints, Destination};
use self::source::{Position, Record, StreamSource};

/// Idle wait between polls of a shard with nothing new.
const IDLE_POLL: Duration = Duration::from_millis(200);

/// One invocation, for logs and tests.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invocation {
    pub shard: String,
    pub first: String,
    pub last: String,
    pub records: usize,
    pub started: Instant,
    pub ended: Instant,
    pub outcome: String,
}

/// What the mapping did, by kind: printed by the local stack, read by tests.
#[derive(Debug, Default)]
pub struct Stats {
    pub invocations: AtomicU64,
    pub retries: AtomicU64,
    pub function_errors: AtomicU64,
    pub bisects: AtomicU64,
    pub given_up: AtomicU64,
    /// Rounds in which every shard that may run read nothing new: the mapping is caught up.
    /// A test that sees it grow knows every record written before was delivered and answered.
    pub idle_rounds: AtomicU64,
    pub log: Mutex<Vec<Invocation>>,
}

impl Stats {
    pub fn snapshot(&self) -> BTreeMap<&'static str, u64> {
        let get = |a: &AtomicU64| a.load(Ordering::Relaxed);
        BTreeMap::from([
            ("invocations", get(&self.invocations)),
            ("retries", get(&self.retries)),
            ("function_errors", get(&self.function_errors)),
            ("bisects", get(&self.bisects)),
            ("given_up", get(&self.given_up)),
            ("idle_rounds", get(&self.idle_rounds)),
        ])
    }
}

/// What one step of a shard came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Step {
    /// Records were read (and delivered, filtered out or given up).
    Moved,
    /// The shard had nothing new.
    Empty,
    /// Reading the shard failed: whether anything is pending is unknown.
    ReadFailed,
}

struct ShardRun {
    id: String,
    parent: Option<String>,
    position: Position,
    finished: bool,
    /// Failed attempts at the batch starting at `position`.
    retries: u32,
    /// Records per batch: the batch size, or less after a bisect.
    limit: usize,
    backoff: Duration,
}

pub struct Mapping<'a, S, F, D> {
    pub source: &'a S,
    pub function: &'a F,
    pub destination: &'a D,
    pub config: MappingConfig,
    pub checkpoints: &'a Checkpoints,
    pub stats: &'a Stats,
}

fn record_json(r: &Record, arn: &str) -> Value {
    StreamRecord {
        event_name: r.event_name.clone(),
        keys: r.keys.clone(),
        sequence_number: r.seq.clone(),
        created_secs: r.created_secs,
        event_id: r.event_id.clone(),
        size_bytes: r.size_bytes,
        stream_arn: arn.to_owned(),
    }
    .to_json()
}

fn iso(secs: f64) -> String {
    chrono::DateTime::from_timestamp_millis((secs * 1000.0) as i64)
        .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true))
        .unwrap_or_default()
}

impl<S: StreamSource, F: Function, D: Destination> Mapping<'_, S, F, D> {
    /// Runs until `stop` resolves.
    pub async fn run(&self, stop: impl std::future::Future<Output = ()>) {
        let mut shards: Vec<ShardRun> = Vec::new();
        let rounds = async {
            loop {
                if let Err(e) = self.refresh(&mut shards).await {
                    tracing::warn!(error = %e, "listing the stream's shards failed; retrying");
                    tokio::time::sleep(self.config.max_backoff).await;
                    continue;
                }
                let busy = self.round(&mut shards).await;
                if !busy {
                    tokio::time::sleep(IDLE_POLL).await;
                }
            }
        };
        tokio::select! {
            _ = rounds => {}
            _ = stop => {}
        }
    }

    /// Runs until every shard is read to its end (a closed stream, in tests).
    pub async fn drain(&self) {
        let mut shards: Vec<ShardRun> = Vec::new();
        loop {
            if self.refresh(&mut shards).await.is_err() {
                tokio::time::sleep(IDLE_POLL).await;
                continue;
            }
            if !shards.is_empty() && shards.iter().all(|s| s.finished) {
                return;
            }
            self.round(&mut shards).await;
        }
    }

    async fn refresh(&self, shards: &mut Vec<ShardRun>) -> Result<(), source::SourceError> {
        for s in self.source.shards().await? {
            if shards.iter().any(|x| x.id == s.id) {
                continue;
            }
            let position = match self.checkpoints.get(self.source.arn(), &s.id) {
                Some(seq) => Position::After(seq),
                None => Position::TrimHorizon,
            };
            shards.push(ShardRun {
                id: s.id,
                parent: s.parent,
                position,
                finished: false,
                retries: 0,
                limit: self.config.batch_size,
                backoff: self.config.backoff,
            });
        }
        Ok(())
    }

    /// One step of every shard that may run now, concurrently; whether any delivered records.
    /// A round in which every such shard read nothing counts as idle.
    async fn round(&self, shards: &mut [ShardRun]) -> bool {
        let done: Vec<String> = shards
            .iter()
            .filter(|s| s.finished)
            .map(|s| s.id.clone())
            .collect();
        let known: Vec<String> = shards.iter().map(|s| s.id.clone()).collect();
        // A child waits for its parent to be read to its end (a parent the stream no longer
        // lists, trimmed, does not hold it back).
        let ready = |s: &ShardRun| {
            !s.finished
                && s.parent
                    .as_ref()
                    .is_none_or(|p| done.contains(p) || !known.contains(p))
        };
        let steps = shards.iter_mut().filter(|s| ready(s)).map(|s| self.step(s));
        let steps = futures::future::join_all(steps).await;
        if steps.iter().all(|s| *s == Step::Empty) {
            self.stats.idle_rounds.fetch_add(1, Ordering::Relaxed);
        }
        steps.contains(&Step::Moved)
    }

    /// Reads one batch of the shard and delivers it.
    async fn step(&self, shard: &mut ShardRun) -> Step {
        let read = match self
            .source
            .read(&shard.id, &shard.position, shard.limit)
            .await
        {
            Ok(r) => r,
            Err(e) => {
                tracing::warn!(shard = %shard.id, error = %e, "reading the shard failed; retrying");
                return Step::ReadFailed;
            }
        };
        let Some(last_read) = read.records.last().map(|r| r.seq.clone()) else {
            shard.finished = read.end;
            return Step::Empty;
        };
        // The mapping's filter drops the rest before invocation.
        let mut batch: Vec<Record> = read
            .records
            .into_iter()
            .filter(|r| self.config.event_names.contains(&r.event_name))
            .collect();
        if batch.is_empty() {
            self.done_through(shard, &last_read);
            return Step::Moved;
        }
        let now = chrono::Utc::now().timestamp_millis() as f64 / 1000.0;
        let max_age = self.config.max_record_age.as_secs_f64();
        let old = batch
            .iter()
            .take_while(|r| r.created_secs > 0.0 && now - r.created_secs > max_age)
            .count();
        if old > 0 {
            let expired: Vec<Record> = batch.drain(..old).collect();
            self.give_up(shard, &expired, "RecordAgeExceeded").await;
            return Step::Moved;
        }
        self.invoke(shard, batch, &last_read).await;
        Step::Moved
    }

    async fn invoke(&self, shard: &mut ShardRun, batch: Vec<Record>, last_read: &str) {
        let arn = self.source.arn();
        let payload = batch_json(batch.iter().map(|r| record_json(r, arn)).collect()).to_string();
        self.stats.invocations.fetch_add(1, Ordering::Relaxed);
        let started = Instant::now();
        let answer = self.function.invoke(payload, self.config.timeout).await;
        let outcome = match &answer {
            Ok(text) => verdict(text, &batch),
            Err(_) => Verdict::Whole,
        };
        self.log(shard, &batch, started, &answer, &outcome);
        match (&answer, outcome) {
            (_, Verdict::Complete) => {
                // Every record read is done: the batch's, and those the filter dropped.
                self.done_through(shard, last_read);
                shard.retries = 0;
                shard.limit = self.config.batch_size;
                shard.backoff = self.config.backoff;
                return;
            }
            (Ok(_), Verdict::From(seq)) => {
                if let Some(before) = batch.iter().take_while(|r| r.seq != seq).last() {
                    self.done_through(shard, &before.seq.clone());
                    // Progress: the wait starts over. Doubling it across partial successes
                    // held a busy shard at the longest wait for good (a batch of many posts
                    // rarely has none failing under the chaos plan), and a burst's counts
                    // took minutes to settle.
                    shard.backoff = self.config.backoff;
                }
                shard.position = Position::At(seq);
            }
            (Ok(_), Verdict::Whole) => {}
            (Err(e), _) => {
                self.stats.function_errors.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(shard = %shard.id, error = %e, records = batch.len(), "function error");
                if self.config.bisect && batch.len() > 1 {
                    self.stats.bisects.fetch_add(1, Ordering::Relaxed);
                    shard.limit = batch.len() / 2;
                }
            }
        }
        shard.retries += 1;
        self.stats.retries.fetch_add(1, Ordering::Relaxed);
        if shard.retries > self.config.max_retries {
            let failed: Vec<Record> = match &shard.position {
                Position::At(seq) => batch
                    .iter()
                    .skip_while(|r| r.seq != *seq)
                    .cloned()
                    .collect(),
                _ => batch,
            };
            self.give_up(shard, &failed, "RetryAttemptsExhausted").await;
            return;
        }
        tokio::time::sleep(shard.backoff).await;
        shard.backoff = (shard.backoff * 2).min(self.config.max_backoff);
    }

    fn done_through(&self, shard: &mut ShardRun, seq: &str) {
        shard.position = Position::After(seq.to_owned());
        self.checkpoints.set(self.source.arn(), &shard.id, seq);
    }

    /// Sends a record of `records` to the on-failure destination, as Lambda does, and moves
    /// the shard past them.
    async fn give_up(&self, shard: &mut ShardRun, records: &[Record], condition: &str) {
        let (Some(first), Some(last)) = (records.first(), records.last()) else {
            return;
        };
        self.stats.given_up.fetch_add(1, Ordering::Relaxed);
        let failure = json!({
            "requestContext": {
                "requestId": uuid_like(),
                "functionArn": format!("arn:aws:lambda:local:000000000000:function:{}", self.config.function),
                "condition": condition,
                "approximateInvokeCount": shard.retries + 1,
            },
            "responseContext": {"statusCode": 200, "executedVersion": "$LATEST", "functionError": "Unhandled"},
            "version": "1.0",
            "timestamp": iso(chrono::Utc::now().timestamp_millis() as f64 / 1000.0),
            "DDBStreamBatchInfo": {
                "shardId": shard.id,
                "startSequenceNumber": first.seq,
                "endSequenceNumber": last.seq,
                "approximateArrivalOfFirstRecord": iso(first.created_secs),
                "approximateArrivalOfLastRecord": iso(last.created_secs),
                "batchSize": records.len(),
                "streamArn": self.source.arn(),
            }
        });
        tracing::error!(shard = %shard.id, from = %first.seq, to = %last.seq, condition, "records given up; sent to the on-failure destination: recount the posts in them");
        if let Err(e) = self.destination.send(failure).await {
            tracing::error!(error = %e, "the on-failure destination refused the record");
        }
        self.done_through(shard, &last.seq.clone());
        shard.retries = 0;
        shard.limit = self.config.batch_size;
        shard.backoff = self.config.backoff;
    }

    fn log(
        &self,
        shard: &ShardRun,
        batch: &[Record],
        started: Instant,
        answer: &Result<String, function::FunctionError>,
        outcome: &Verdict,
    ) {
        let outcome = match (answer, outcome) {
            (Err(e), _) => e.to_string(),
            (_, Verdict::Complete) => "ok".to_owned(),
            (_, Verdict::From(s)) => format!("FAILED from {s}"),
            (_, Verdict::Whole) => "FAILED: whole batch".to_owned(),
        };
        tracing::info!(shard = %shard.id, records = batch.len(), "batch: {outcome}");
        if let Ok(mut log) = self.stats.log.lock() {
            log.push(Invocation {
                shard: shard.id.clone(),
                first: batch[0].seq.clone(),
                last: batch[batch.len() - 1].seq.clone(),
                records: batch.len(),
                started,
                ended: Instant::now(),
                outcome,
            });
        }
    }
}

fn uuid_like() -> String {
    format!(
        "{:032x}",
        chrono::Utc::now().timestamp_nanos_opt().unwrap_or(0)
    )
}
