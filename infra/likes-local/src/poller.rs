//! The DynamoDB event source mapping, played locally: polls the Likes stream, builds
//! Lambda-format batches (INSERT/REMOVE only, as the template's filter; at most the template's
//! batch size), invokes the aggregator, and honours `batchItemFailures` by re-reading from the
//! reported sequence number with backoff.

use std::time::Duration;

use aws_sdk_dynamodbstreams::types::{AttributeValue, Record, ShardIteratorType};
use aws_sdk_dynamodbstreams::Client;
use count_aggregator::Aggregator;
use likes_core::CountsStore;
use likes_testkit::stream::{batch, StreamRecord};
use serde_json::{json, Value};

/// Same as `BatchSize` in template.yaml.
pub const BATCH_SIZE: i32 = 1000;
const IDLE_POLL: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Why one poll of a shard did not complete; the poller logs it and tries again.
#[derive(Debug, thiserror::Error)]
pub enum PollError {
    #[error("reading the stream failed: {0}")]
    Stream(String),
    #[error("the stream has no description")]
    NoDescription,
    #[error("building the batch failed: {0}")]
    Batch(#[from] serde_json::Error),
}

fn stream_error<E>(e: aws_sdk_dynamodbstreams::error::SdkError<E>) -> PollError
where
    E: aws_sdk_dynamodbstreams::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    PollError::Stream(aws_sdk_dynamodbstreams::error::DisplayErrorContext(e).to_string())
}

fn attr_json(v: &AttributeValue) -> Option<Value> {
    match v {
        AttributeValue::S(s) => Some(json!({ "S": s })),
        AttributeValue::N(n) => Some(json!({ "N": n })),
        _ => None,
    }
}

/// One stream record in the shape Lambda hands to the function; `None` for the events the
/// template's filter drops (anything but INSERT and REMOVE).
fn lambda_record(r: &Record, stream_arn: &str) -> Option<Value> {
    let name = r.event_name.as_ref()?.as_str();
    if name != "INSERT" && name != "REMOVE" {
        return None;
    }
    let d = r.dynamodb.as_ref()?;
    let keys = d
        .keys
        .as_ref()?
        .iter()
        .filter_map(|(k, v)| attr_json(v).map(|j| (k.clone(), j)))
        .collect();
    let record = StreamRecord {
        event_name: name.to_owned(),
        keys,
        sequence_number: d.sequence_number.clone().unwrap_or_default(),
        created_secs: d
            .approximate_creation_date_time
            .map(|t| t.as_secs_f64())
            .unwrap_or(0.0),
        event_id: r.event_id.clone().unwrap_or_default(),
        size_bytes: d.size_bytes.unwrap_or(0),
        stream_arn: stream_arn.to_owned(),
    };
    Some(record.to_json())
}

struct ShardState {
    id: String,
    parent: Option<String>,
    /// Closed and read to its end: its children may start.
    finished: bool,
    iterator: Option<String>,
    /// Where to resume after a reported failure (that record included).
    retry_from: Option<String>,
    /// The last record read and fully handled: where to resume after a lost iterator.
    done_through: Option<String>,
    backoff: Duration,
}

pub async fn run<C: CountsStore>(client: Client, stream_arn: String, agg: Aggregator<C>) {
    let mut shards: Vec<ShardState> = Vec::new();
    loop {
        if let Err(e) = refresh_shards(&client, &stream_arn, &mut shards).await {
            tracing::warn!(error = %e, "describe stream failed; retrying");
            tokio::time::sleep(MAX_BACKOFF).await;
            continue;
        }
        let mut busy = false;
        let eligible: Vec<bool> = shards.iter().map(|s| ready(s, &shards)).collect();
        for (shard, _) in shards.iter_mut().zip(eligible).filter(|(_, ok)| *ok) {
            match poll_shard(&client, &stream_arn, &agg, shard).await {
                Ok(n) => busy |= n > 0,
                Err(e) => tracing::warn!(shard = %shard.id, error = %e, "poll failed; retrying"),
            }
        }
        if !busy {
            tokio::time::sleep(IDLE_POLL).await;
        }
    }
}

/// As Lambda does: a shard is read only after its parent (if the stream still has it) was read
/// to its end, so one key's records are delivered in order across a shard split.
fn ready(shard: &ShardState, all: &[ShardState]) -> bool {
    !shard.finished
        && shard.parent.as_ref().is_none_or(|parent| {
            all.iter()
                .find(|s| &s.id == parent)
                .is_none_or(|p| p.finished)
        })
}

async fn refresh_shards(
    client: &Client,
    stream_arn: &str,
    shards: &mut Vec<ShardState>,
) -> Result<(), PollError> {
    let out = client
        .describe_stream()
        .stream_arn(stream_arn)
        .send()
        .await
        .map_err(stream_error)?;
    let desc = out.stream_description.ok_or(PollError::NoDescription)?;
    for s in desc.shards() {
        let Some(id) = s.shard_id() else { continue };
        if !shards.iter().any(|x| x.id == id) {
            shards.push(ShardState {
                id: id.to_owned(),
                parent: s.parent_shard_id().map(str::to_owned),
                finished: false,
                iterator: None,
                retry_from: None,
                done_through: None,
                backoff: Duration::from_millis(100),
            });
        }
    }
    Ok(())
}

/// Reads one batch from the shard and delivers it. Returns the number of records delivered.
async fn poll_shard<C: CountsStore>(
    client: &Client,
    stream_arn: &str,
    agg: &Aggregator<C>,
    shard: &mut ShardState,
) -> Result<usize, PollError> {
    if shard.iterator.is_none() {
        let mut req = client
            .get_shard_iterator()
            .stream_arn(stream_arn)
            .shard_id(&shard.id);
        req = match (&shard.retry_from, &shard.done_through) {
            (Some(seq), _) => req
                .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                .sequence_number(seq),
            (None, Some(seq)) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
            (None, None) => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
        };
        let out = req.send().await.map_err(stream_error)?;
        shard.iterator = out.shard_iterator;
    }
    let Some(iterator) = shard.iterator.clone() else {
        return Ok(0);
    };
    let out = client
        .get_records()
        .shard_iterator(iterator)
        .limit(BATCH_SIZE)
        .send()
        .await
        // An expired or invalid iterator: start again from where we were.
        .map_err(stream_error);
    let out = match out {
        Ok(o) => o,
        Err(e) => {
            shard.iterator = None;
            return Err(e);
        }
    };
    let records: Vec<Value> = out
        .records()
        .iter()
        .filter_map(|r| lambda_record(r, stream_arn))
        .collect();
    let next = out.next_shard_iterator.clone();
    let last_read = out
        .records()
        .last()
        .and_then(|r| r.dynamodb.as_ref())
        .and_then(|d| d.sequence_number.clone());
    if records.is_empty() {
        shard.finished = next.is_none();
        shard.iterator = next;
        shard.done_through = last_read.or(shard.done_through.take());
        return Ok(0);
    }
    let delivered = records.len();
    let text = batch(records).to_string();
    let report = agg.process_json(&text, None).await?;
    tracing::info!(
        "batch: {} records, {} groups, {} duplicates, lag {} ms{}",
        report.records,
        report.groups,
        report.duplicates,
        report.lag_ms(),
        report
            .checkpoint
            .as_ref()
            .map(|c| format!(", FAILED from {c}"))
            .unwrap_or_default()
    );
    match report.checkpoint {
        Some(cp) => {
            // Lambda retries from the reported record; so do we, after a backoff.
            shard.retry_from = Some(cp);
            shard.iterator = None;
            tokio::time::sleep(shard.backoff).await;
            shard.backoff = (shard.backoff * 2).min(MAX_BACKOFF);
        }
        None => {
            shard.retry_from = None;
            shard.done_through = last_read.or(shard.done_through.take());
            shard.backoff = Duration::from_millis(100);
            shard.finished = next.is_none();
            shard.iterator = next;
        }
    }
    Ok(delivered)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(id: &str, parent: Option<&str>, finished: bool) -> ShardState {
        ShardState {
            id: id.into(),
            parent: parent.map(Into::into),
            finished,
            iterator: None,
            retry_from: None,
            done_through: None,
            backoff: Duration::from_millis(100),
        }
    }

    #[test]
    fn children_wait_for_their_parent_to_finish() {
        let open = [shard("p", None, false), shard("c", Some("p"), false)];
        assert!(ready(&open[0], &open));
        assert!(
            !ready(&open[1], &open),
            "the child waits while the parent is open"
        );
        let done = [shard("p", None, true), shard("c", Some("p"), false)];
        assert!(
            !ready(&done[0], &done),
            "a finished shard is not read again"
        );
        assert!(ready(&done[1], &done));
        let trimmed = [shard("c", Some("gone"), false)];
        assert!(
            ready(&trimmed[0], &trimmed),
            "a trimmed parent does not block"
        );
    }
}
