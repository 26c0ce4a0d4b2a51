//! Eventual consistency: a table given a lag gets a replica (`<table>.lagged`, same keys and
//! indexes, no stream) that trails it. Each write the emulator applies to the table is
//! followed by a strongly consistent read of every item it wrote, and that state is applied to
//! the replica `lag` later. Reads that do not ask for strong consistency (`GetItem`,
//! `BatchGetItem`, `Query`, `Scan` without `ConsistentRead: true`) and every query of a global
//! index (which DynamoDB never serves strongly) go to the replica: they see the table as it
//! was up to `lag` ago, an index omits what was written since, and a missing `ConsistentRead`
//! reads the past — as DynamoDB's eventually consistent reads may. Transactions' reads are
//! strong, as DynamoDB's are.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hyper::body::Bytes;
use serde_json::{json, Map, Value};
use tokio::sync::Notify;
use tokio::time::Instant;

use crate::call::{Call, Service};
use crate::policy::glob;
use crate::upstream::Upstream;

const SUFFIX: &str = ".lagged";

/// What the replica needs of its table.
#[derive(Debug, Clone)]
struct Info {
    keys: Vec<String>,
    global_indexes: HashSet<String>,
}

/// A state to apply to a replica: the item as read after a write, or its absence.
struct Pending {
    replica: String,
    key: Map<String, Value>,
    item: Option<Value>,
}

struct Inner {
    upstream: Upstream,
    global: Duration,
    lags: Mutex<Vec<(String, Duration)>>,
    ready: Mutex<HashMap<String, Info>>,
    creating: tokio::sync::Mutex<()>,
    queue: Mutex<BTreeMap<(Instant, u64), Pending>>,
    seq: std::sync::atomic::AtomicU64,
    wake: Notify,
}

#[derive(Clone)]
pub(crate) struct Replicas(Arc<Inner>);

/// A read sent to replicas instead of their tables.
pub(crate) struct Redirect {
    pub body: Value,
    renames: Vec<(String, String)>,
}

impl Redirect {
    /// The replica's answer, with its tables' names put back.
    pub fn answer(&self, body: &Bytes) -> Bytes {
        let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
            return body.clone();
        };
        for field in ["Responses", "UnprocessedKeys"] {
            if let Some(m) = v.get_mut(field).and_then(Value::as_object_mut) {
                for (replica, table) in &self.renames {
                    if let Some(x) = m.remove(replica) {
                        m.insert(table.clone(), x);
                    }
                }
            }
        }
        let capacity = match v.get_mut("ConsumedCapacity") {
            Some(Value::Array(list)) => list.iter_mut().collect(),
            Some(one @ Value::Object(_)) => vec![one],
            _ => Vec::new(),
        };
        for c in capacity {
            if let Some(name) = c["TableName"].as_str().and_then(|n| n.strip_suffix(SUFFIX)) {
                c["TableName"] = json!(name);
            }
        }
        Bytes::from(v.to_string())
    }
}

fn strong(v: &Value) -> bool {
    v["ConsistentRead"].as_bool() == Some(true)
}

impl Replicas {
    pub(crate) fn new(upstream: Upstream, global: Duration) -> Self {
        let r = Replicas(Arc::new(Inner {
            upstream,
            global,
            lags: Mutex::default(),
            ready: Mutex::default(),
            creating: tokio::sync::Mutex::new(()),
            queue: Mutex::default(),
            seq: std::sync::atomic::AtomicU64::new(0),
            wake: Notify::new(),
        }));
        tokio::spawn(r.clone().apply_due());
        r
    }

    pub(crate) fn set_lag(&self, table: &str, lag: Duration) {
        if let Ok(mut l) = self.0.lags.lock() {
            l.push((table.to_owned(), lag));
        }
    }

    fn lag(&self, table: &str) -> Duration {
        if table.ends_with(SUFFIX) {
            return Duration::ZERO;
        }
        let lags = self.0.lags.lock().map(|l| l.clone()).unwrap_or_default();
        lags.iter()
            .rev()
            .find(|(p, _)| glob(p, table))
            .map_or(self.0.global, |(_, lag)| *lag)
    }

    fn info(&self, table: &str) -> Option<Info> {
        self.0.ready.lock().ok()?.get(table).cloned()
    }

    /// Makes the replicas of the call's lagging tables (once each), so that the call can be
    /// redirected and its writes followed.
    pub(crate) async fn prepare(&self, call: &Call) {
        if call.service != Service::Dynamo || call.operation == "CreateTable" {
            return;
        }
        for table in call.tables() {
            if self.lag(&table).is_zero() || self.info(&table).is_some() {
                continue;
            }
            let _one_at_a_time = self.0.creating.lock().await;
            if self.info(&table).is_none() {
                match self.create(&table).await {
                    Ok(info) => {
                        if let Ok(mut r) = self.0.ready.lock() {
                            r.insert(table.clone(), info);
                        }
                    }
                    Err(e) => tracing::debug!(table, error = e, "no replica yet"),
                }
            }
        }
    }

    /// Creates `table`'s replica (anew: a replica left from before would miss deletes) and
    /// copies the table into it.
    async fn create(&self, table: &str) -> Result<Info, String> {
        let up = &self.0.upstream;
        let t = up
            .dynamo("DescribeTable", json!({"TableName": table}))
            .await?["Table"]
            .clone();
        let replica = format!("{table}{SUFFIX}");
        let _ = up
            .dynamo("DeleteTable", json!({"TableName": replica}))
            .await;
        let index = |i: &Value| json!({"IndexName": i["IndexName"], "KeySchema": i["KeySchema"], "Projection": i["Projection"]});
        let mut spec = json!({
            "TableName": replica,
            "KeySchema": t["KeySchema"],
            "AttributeDefinitions": t["AttributeDefinitions"],
            "BillingMode": "PAY_PER_REQUEST",
        });
        let global: Vec<Value> = t["GlobalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(index)
            .collect();
        let local: Vec<Value> = t["LocalSecondaryIndexes"]
            .as_array()
            .into_iter()
            .flatten()
            .map(index)
            .collect();
        if !global.is_empty() {
            spec["GlobalSecondaryIndexes"] = json!(global);
        }
        if !local.is_empty() {
            spec["LocalSecondaryIndexes"] = json!(local);
        }
        up.dynamo("CreateTable", spec).await?;
        let mut start = Value::Null;
        loop {
            let mut scan = json!({"TableName": table, "ConsistentRead": true});
            if !start.is_null() {
                scan["ExclusiveStartKey"] = start.clone();
            }
            let page = up.dynamo("Scan", scan).await?;
            for item in page["Items"].as_array().into_iter().flatten() {
                up.dynamo("PutItem", json!({"TableName": replica, "Item": item}))
                    .await?;
            }
            start = page["LastEvaluatedKey"].clone();
            if start.is_null() || start.as_object().is_some_and(Map::is_empty) {
                break;
            }
        }
        Ok(Info {
            keys: t["KeySchema"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|k| k["AttributeName"].as_str().map(str::to_owned))
                .collect(),
            global_indexes: t["GlobalSecondaryIndexes"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| i["IndexName"].as_str().map(str::to_owned))
                .collect(),
        })
    }

    /// The call, sent to replicas, if it is an eventually consistent read of lagging tables.
    pub(crate) fn redirect(&self, call: &Call) -> Option<Redirect> {
        if call.service != Service::Dynamo {
            return None;
        }
        let lagging = |t: &str| !self.lag(t).is_zero() && self.info(t).is_some();
        let mut body = call.body.clone();
        let mut renames = Vec::new();
        match call.operation.as_str() {
            "GetItem" | "Query" | "Scan" => {
                let table = body["TableName"].as_str()?.to_owned();
                let global = body["IndexName"].as_str().is_some_and(|i| {
                    self.info(&table)
                        .is_some_and(|info| info.global_indexes.contains(i))
                });
                if !lagging(&table) || (strong(&body) && !global) {
                    return None;
                }
                let replica = format!("{table}{SUFFIX}");
                body["TableName"] = json!(replica);
                renames.push((replica, table));
            }
            "BatchGetItem" => {
                let items = body["RequestItems"].as_object_mut()?;
                let tables: Vec<String> = items
                    .iter()
                    .filter(|(t, ask)| lagging(t) && !strong(ask))
                    .map(|(t, _)| t.clone())
                    .collect();
                for table in tables {
                    let replica = format!("{table}{SUFFIX}");
                    if let Some(ask) = items.remove(&table) {
                        items.insert(replica.clone(), ask);
                    }
                    renames.push((replica, table));
                }
            }
            _ => return None,
        }
        (!renames.is_empty()).then_some(Redirect { body, renames })
    }

    /// Follows a write the emulator applied: the state of each item it wrote, read now, is
    /// applied to the replica `lag` from now.
    pub(crate) async fn captured(&self, call: &Call) {
        if call.service != Service::Dynamo {
            return;
        }
        let written: Vec<(String, &Value)> = match call.operation.as_str() {
            "PutItem" => vec![(
                call.body["TableName"].as_str().unwrap_or("").to_owned(),
                &call.body["Item"],
            )],
            "UpdateItem" | "DeleteItem" => vec![(
                call.body["TableName"].as_str().unwrap_or("").to_owned(),
                &call.body["Key"],
            )],
            "BatchWriteItem" => call.body["RequestItems"]
                .as_object()
                .into_iter()
                .flatten()
                .flat_map(|(t, reqs)| {
                    reqs.as_array().into_iter().flatten().filter_map(move |r| {
                        let k = r["PutRequest"]
                            .get("Item")
                            .or_else(|| r["DeleteRequest"].get("Key"))?;
                        Some((t.clone(), k))
                    })
                })
                .collect(),
            "TransactWriteItems" => call.body["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|i| {
                    let op = i
                        .get("Put")
                        .or_else(|| i.get("Update"))
                        .or_else(|| i.get("Delete"))?;
                    let key = op.get("Item").or_else(|| op.get("Key"))?;
                    Some((op["TableName"].as_str()?.to_owned(), key))
                })
                .collect(),
            _ => return,
        };
        for (table, item) in written {
            let lag = self.lag(&table);
            let Some(info) = self.info(&table).filter(|_| !lag.is_zero()) else {
                continue;
            };
            let key: Map<String, Value> = info
                .keys
                .iter()
                .filter_map(|k| Some((k.clone(), item.get(k)?.clone())))
                .collect();
            let read = json!({"TableName": table, "Key": key, "ConsistentRead": true});
            let Ok(now) = self.0.upstream.dynamo("GetItem", read).await else {
                continue;
            };
            let pending = Pending {
                replica: format!("{table}{SUFFIX}"),
                key,
                item: now.get("Item").cloned(),
            };
            let n = self
                .0
                .seq
                .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            if let Ok(mut q) = self.0.queue.lock() {
                q.insert((Instant::now() + lag, n), pending);
            }
            self.0.wake.notify_one();
        }
    }

    /// Applies each pending state when it is due, in order.
    async fn apply_due(self) {
        loop {
            let next = self
                .0
                .queue
                .lock()
                .ok()
                .and_then(|q| q.keys().next().copied());
            match next {
                None => self.0.wake.notified().await,
                Some((due, _)) if due > Instant::now() => {
                    tokio::select! {
                        _ = tokio::time::sleep_until(due) => {}
                        _ = self.0.wake.notified() => {}
                    }
                }
                Some(first) => {
                    let Some(p) = self.0.queue.lock().ok().and_then(|mut q| q.remove(&first))
                    else {
                        continue;
                    };
                    let up = &self.0.upstream;
                    let done = match p.item {
                        Some(item) => {
                            up.dynamo("PutItem", json!({"TableName": p.replica, "Item": item}))
                                .await
                        }
                        None => {
                            up.dynamo("DeleteItem", json!({"TableName": p.replica, "Key": p.key}))
                                .await
                        }
                    };
                    if let Err(e) = done {
                        tracing::warn!(error = e, "a replica missed a write");
                    }
                }
            }
        }
    }

    /// A `ListTables` answer without the replicas.
    pub(crate) fn hide(body: &Bytes) -> Bytes {
        let Ok(mut v) = serde_json::from_slice::<Value>(body) else {
            return body.clone();
        };
        if let Some(names) = v["TableNames"].as_array_mut() {
            names.retain(|n| !n.as_str().is_some_and(|n| n.ends_with(SUFFIX)));
        }
        Bytes::from(v.to_string())
    }
}
