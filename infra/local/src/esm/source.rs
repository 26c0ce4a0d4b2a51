//! Where the local mapping reads stream records from: DynamoDB Streams (the emulator's), or —
//! for tests that need more than the emulator's single shard — an in-memory stream with many
//! shards and rollovers, following DynamoDB Streams' documented rules: a shard is read in
//! sequence-number order; a closed shard takes no more records and, read to its end, says so;
//! its children name it as their parent; sequence numbers grow within a shard and from a parent
//! to its children; one partition key's records are in one shard at a time.

use std::future::Future;
use std::sync::Mutex;

use aws_sdk_dynamodbstreams::types::{AttributeValue, ShardIteratorType};
use aws_sdk_dynamodbstreams::Client;
use serde_json::{json, Map, Value};

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Shard {
    pub id: String,
    pub parent: Option<String>,
}

/// One stream record, with what Lambda's event carries.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub event_name: String,
    /// Keys in DynamoDB JSON.
    pub keys: Map<String, Value>,
    pub seq: String,
    pub created_secs: f64,
    pub size_bytes: i64,
    pub event_id: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Position {
    TrimHorizon,
    At(String),
    After(String),
}

#[derive(Debug, Default)]
pub struct Read {
    pub records: Vec<Record>,
    /// The shard is closed and nothing follows the records returned.
    pub end: bool,
}

#[derive(Debug, thiserror::Error)]
#[error("reading the stream failed: {0}")]
pub struct SourceError(pub String);

pub trait StreamSource {
    fn arn(&self) -> &str;
    /// Every shard of the stream, all pages.
    fn shards(&self) -> impl Future<Output = Result<Vec<Shard>, SourceError>>;
    /// Up to `limit` records of `shard` from `from`.
    fn read(
        &self,
        shard: &str,
        from: &Position,
        limit: usize,
    ) -> impl Future<Output = Result<Read, SourceError>>;
}

/// Collects a paginated listing: `page(start)` answers one page and where the next starts.
/// DescribeStream answers at most 100 shards a page; stopping at the first would leave a
/// child's parent unseen, and the child would be read first.
pub async fn all_pages<T, F, Fut>(mut page: F) -> Result<Vec<T>, SourceError>
where
    F: FnMut(Option<String>) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), SourceError>>,
{
    let mut out = Vec::new();
    let mut start = None;
    loop {
        let (items, next) = page(start.take()).await?;
        out.extend(items);
        match next {
            Some(n) => start = Some(n),
            None => return Ok(out),
        }
    }
}

pub struct DynamoStream {
    client: Client,
    arn: String,
}

impl DynamoStream {
    pub fn new(client: Client, arn: String) -> Self {
        Self { client, arn }
    }
}

fn sdk_error<E>(e: aws_sdk_dynamodbstreams::error::SdkError<E>) -> SourceError
where
    E: aws_sdk_dynamodbstreams::error::ProvideErrorMetadata + std::error::Error + 'static,
{
    SourceError(aws_sdk_dynamodbstreams::error::DisplayErrorContext(e).to_string())
}

fn attr_json(v: &AttributeValue) -> Option<Value> {
    match v {
        AttributeValue::S(s) => Some(json!({ "S": s })),
        AttributeValue::N(n) => Some(json!({ "N": n })),
        _ => None,
    }
}

impl StreamSource for DynamoStream {
    fn arn(&self) -> &str {
        &self.arn
    }

    async fn shards(&self) -> Result<Vec<Shard>, SourceError> {
        all_pages(|start| async move {
            let out = self
                .client
                .describe_stream()
                .stream_arn(&self.arn)
                .set_exclusive_start_shard_id(start)
                .send()
                .await
                .map_err(sdk_error)?;
            let desc = out
                .stream_description
                .ok_or_else(|| SourceError("no stream description".into()))?;
            let shards = desc
                .shards()
                .iter()
                .filter_map(|s| {
                    Some(Shard {
                        id: s.shard_id()?.to_owned(),
                        parent: s.parent_shard_id().map(str::to_owned),
                    })
                })
                .collect();
            Ok((shards, desc.last_evaluated_shard_id))
        })
        .await
    }

    async fn read(&self, shard: &str, from: &Position, limit: usize) -> Result<Read, SourceError> {
        let req = self
            .client
            .get_shard_iterator()
            .stream_arn(&self.arn)
            .shard_id(shard);
        let req = match from {
            Position::TrimHorizon => req.shard_iterator_type(ShardIteratorType::TrimHorizon),
            Position::At(seq) => req
                .shard_iterator_type(ShardIteratorType::AtSequenceNumber)
                .sequence_number(seq),
            Position::After(seq) => req
                .shard_iterator_type(ShardIteratorType::AfterSequenceNumber)
                .sequence_number(seq),
        };
        let iterator = req.send().await.map_err(sdk_error)?.shard_iterator;
        let Some(iterator) = iterator else {
            return Ok(Read {
                records: Vec::new(),
                end: true,
            });
        };
        let out = self
            .client
            .get_records()
            .shard_iterator(iterator)
            .limit(i32::try_from(limit).unwrap_or(1000))
            .send()
            .await
            .map_err(sdk_error)?;
        let records = out
            .records()
            .iter()
            .filter_map(|r| {
                let d = r.dynamodb.as_ref()?;
                Some(Record {
                    event_name: r.event_name.as_ref()?.as_str().to_owned(),
                    keys: d
                        .keys
                        .as_ref()?
                        .iter()
                        .filter_map(|(k, v)| attr_json(v).map(|j| (k.clone(), j)))
                        .collect(),
                    seq: d.sequence_number.clone()?,
                    created_secs: d
                        .approximate_creation_date_time
                        .map(|t| t.as_secs_f64())
                        .unwrap_or(0.0),
                    size_bytes: d.size_bytes.unwrap_or(0),
                    event_id: r.event_id.clone().unwrap_or_default(),
                })
            })
            .collect();
        Ok(Read {
            records,
            end: out.next_shard_iterator.is_none(),
        })
    }
}

/// An in-memory stream with many shards, for tests (see the module docs for its rules).
#[derive(Debug, Default)]
pub struct MemoryStream {
    shards: Mutex<Vec<(Shard, Vec<Record>, bool)>>,
}

impl MemoryStream {
    pub fn open(&self, id: &str, parent: Option<&str>) {
        if let Ok(mut s) = self.shards.lock() {
            let shard = Shard {
                id: id.to_owned(),
                parent: parent.map(str::to_owned),
            };
            s.push((shard, Vec::new(), false));
        }
    }

    /// Appends `record` to the open shard `id`. Its sequence number must exceed every one the
    /// stream issued before (the caller issues them, as DynamoDB does, in commit order).
    pub fn append(&self, id: &str, record: Record) {
        if let Ok(mut s) = self.shards.lock() {
            if let Some((_, records, closed)) = s.iter_mut().find(|(sh, _, _)| sh.id == id) {
                assert!(!*closed, "shard {id} is closed");
                records.push(record);
            }
        }
    }

    pub fn close(&self, id: &str) {
        if let Ok(mut s) = self.shards.lock() {
            if let Some(entry) = s.iter_mut().find(|(sh, _, _)| sh.id == id) {
                entry.2 = true;
            }
        }
    }
}

fn seq_key(s: &str) -> (usize, &str) {
    let t = s.trim_start_matches('0');
    (t.len(), t)
}

impl StreamSource for MemoryStream {
    fn arn(&self) -> &str {
        "arn:aws:dynamodb:local:000000000000:table/likes/stream/memory"
    }

    async fn shards(&self) -> Result<Vec<Shard>, SourceError> {
        let s = self.shards.lock().map_err(|_| SourceError("lock".into()))?;
        Ok(s.iter().map(|(sh, _, _)| sh.clone()).collect())
    }

    async fn read(&self, shard: &str, from: &Position, limit: usize) -> Result<Read, SourceError> {
        let s = self.shards.lock().map_err(|_| SourceError("lock".into()))?;
        let (_, records, closed) = s
            .iter()
            .find(|(sh, _, _)| sh.id == shard)
            .ok_or_else(|| SourceError(format!("no shard {shard}")))?;
        let start = match from {
            Position::TrimHorizon => 0,
            Position::At(q) => records.partition_point(|r| seq_key(&r.seq) < seq_key(q)),
            Position::After(q) => records.partition_point(|r| seq_key(&r.seq) <= seq_key(q)),
        };
        let taken: Vec<Record> = records[start..].iter().take(limit).cloned().collect();
        let end = *closed && start + taken.len() == records.len();
        Ok(Read {
            records: taken,
            end,
        })
    }
}
