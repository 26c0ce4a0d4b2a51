//! What a reaction costs, in each mode, beside a like: the API's real requests against moto's
//! DynamoDB, each one counted with the units DynamoDB bills for it. Units are read off the
//! request itself (the item written, the key deleted, the read's consistency), by the rules
//! DynamoDB prices by (items here are all under 1 KB and reads under 4 KB):
//! - a standard write: 1 unit, and 1 more for each index entry it writes or removes; a like is
//!   in `by_time` and `by_user`, a reaction in `by_kind` and `by_reactor`, a control item in none
//!   (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/LSI.html#LSI.ThroughputConsiderations>,
//!   <https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/GSI.html#GSI.ThroughputConsiderations>);
//! - a transactional write or condition check: 2 units per item, and here 2 per index entry
//!   too, an upper bound (<https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/transaction-apis.html#transaction-capacity-handling>);
//! - a read: 1 unit strongly consistent, 0.5 eventually.
//!
//! Runs only with the emulator (`make bench` starts one); without, it says so.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::BeforeTransmitInterceptorContextRef;
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use likes_api::App;
use likes_aws::dynamo::schema::{create_table, COUNTS, LIKES, MARKERS};
use likes_aws::{DynamoCounts, DynamoLikes};
use likes_core::{Kinds, Mode, PostId, Reactions, UserId};
use likes_sim::apigw::ApiEvent;
use serde_json::Value;

/// Write and read units, summed over the requests seen.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Units {
    pub write: f64,
    pub read: f64,
}

#[derive(Debug, Clone, Default)]
pub(crate) struct UnitCounter(Arc<Mutex<(Units, BTreeMap<String, usize>)>>);

impl UnitCounter {
    pub(crate) fn take(&self) -> (Units, BTreeMap<String, usize>) {
        self.0
            .lock()
            .map(|mut g| std::mem::take(&mut *g))
            .unwrap_or_default()
    }
}

/// Index entries an item with these attributes has in the Likes table.
fn entries_of_item(item: &Value) -> f64 {
    let has = |a: &str| item.get(a).is_some();
    let like = if has("liked_at") { 2.0 } else { 0.0 };
    let kind = f64::from(u8::from(has("reacted_at") && has("kind_key")));
    let reactor = f64::from(u8::from(has("reacted_at") && has("reactor")));
    like + kind + reactor
}

/// Index entries the item under `key` has (a delete removes them): by its sort key (a hidden
/// copy keeps the entries of the item it hides, `likes_core::suspend`).
fn entries_of_key(key: &Value) -> f64 {
    let sk = key["user_id"]["S"].as_str();
    match sk.map(|k| likes_core::control::unhidden(k).unwrap_or(k)) {
        Some(sk) if sk.starts_with('~') => 0.0,
        Some(_) => 2.0,
        None => 0.0,
    }
}

fn write_units(op: &str, body: &Value, likes_table: &str) -> f64 {
    let in_likes = |v: &Value| v["TableName"].as_str() == Some(likes_table);
    let entries = |v: &Value, item: bool| match (in_likes(v), item) {
        (false, _) => 0.0,
        (true, true) => entries_of_item(&v["Item"]),
        (true, false) => entries_of_key(&v["Key"]),
    };
    match op {
        "PutItem" => 1.0 + entries(body, true),
        "DeleteItem" => 1.0 + entries(body, false),
        "UpdateItem" => 1.0,
        "BatchWriteItem" => body["RequestItems"].as_object().map_or(0.0, |t| {
            t.values()
                .filter_map(Value::as_array)
                .map(|r| r.len() as f64)
                .sum()
        }),
        "TransactWriteItems" => body["TransactItems"].as_array().map_or(0.0, |items| {
            items
                .iter()
                .map(|i| match (i.get("Put"), i.get("Delete")) {
                    (Some(put), _) => 2.0 * (1.0 + entries(put, true)),
                    (_, Some(delete)) => 2.0 * (1.0 + entries(delete, false)),
                    _ => 2.0,
                })
                .sum()
        }),
        _ => 0.0,
    }
}

fn read_units(op: &str, body: &Value) -> f64 {
    let per = |v: &Value| {
        if v["ConsistentRead"] == true {
            1.0
        } else {
            0.5
        }
    };
    match op {
        "GetItem" | "Query" => per(body),
        "BatchGetItem" => body["RequestItems"].as_object().map_or(0.0, |t| {
            t.values()
                .map(|k| k["Keys"].as_array().map_or(0, Vec::len) as f64 * per(k))
                .sum()
        }),
        _ => 0.0,
    }
}

#[derive(Debug)]
struct Counting {
    counter: UnitCounter,
    likes_table: String,
}

impl Intercept for Counting {
    fn name(&self) -> &'static str {
        "UnitCounter"
    }

    fn read_before_transmit(
        &self,
        ctx: &BeforeTransmitInterceptorContextRef<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = cfg
            .load::<Metadata>()
            .map(|m| m.name().to_owned())
            .unwrap_or_default();
        let body: Value = ctx
            .request()
            .body()
            .bytes()
            .and_then(|b| serde_json::from_slice(b).ok())
            .unwrap_or(Value::Null);
        let mut g = self.counter.0.lock().map_err(|_| "counter lock")?;
        g.0.write += write_units(&op, &body, &self.likes_table);
        g.0.read += read_units(&op, &body);
        *g.1.entry(op).or_default() += 1;
        Ok(())
    }
}

/// `client`, with every request it sends counted in units (`likes_table` is the Likes table,
/// whose items have index entries).
pub(crate) fn counting(
    client: &aws_sdk_dynamodb::Client,
    likes_table: &str,
) -> (aws_sdk_dynamodb::Client, UnitCounter) {
    let counter = UnitCounter::default();
    let conf = client
        .config()
        .to_builder()
        .interceptor(Counting {
            counter: counter.clone(),
            likes_table: likes_table.to_owned(),
        })
        .build();
    (aws_sdk_dynamodb::Client::from_conf(conf), counter)
}

/// One measured request kind: units per request, and the operations it made.
pub struct Measured {
    pub what: &'static str,
    pub units: Units,
    pub ops: BTreeMap<String, f64>,
}

const N: usize = 200;

pub(crate) async fn stack(
    endpoint: &str,
    reactions: Reactions,
) -> Result<(App<DynamoLikes, DynamoCounts>, UnitCounter), String> {
    let client = likes_aws::sdk::emulator_dynamo(endpoint).await;
    let suffix = uuid::Uuid::new_v4().simple().to_string();
    let (likes, counts, markers) = (
        format!("likes-{suffix}"),
        format!("counts-{suffix}"),
        format!("markers-{suffix}"),
    );
    for (def, name) in [(&LIKES, &likes), (&COUNTS, &counts), (&MARKERS, &markers)] {
        if let Err(e) = create_table(&client, def, name).await {
            // A slow emulator can time out a create that went through, and the SDK's retry
            // then finds the table: that is this run's table, made.
            let made = client
                .describe_table()
                .table_name(name)
                .send()
                .await
                .is_ok();
            if !made {
                return Err(e.to_string());
            }
        }
    }
    let (client, counter) = counting(&client, &likes);
    let app = App::new(
        DynamoLikes::new(client.clone(), likes).with_markers(Some(markers)),
        DynamoCounts::new(client, counts),
    )
    .with_reactions(reactions);
    Ok((app, counter))
}

/// Sends `N` requests (`path_of(i)` as user i) and measures them.
async fn measure(
    app: &App<DynamoLikes, DynamoCounts>,
    counter: &UnitCounter,
    what: &'static str,
    users: &[UserId],
    path: &str,
) -> Result<Measured, String> {
    counter.take();
    for user in users {
        let event = ApiEvent::new("PUT", path).caller(user.as_str());
        // lambda_http's parser is the one the Lambda entry uses.
        let req = lambda_http::request::from_str(&event.to_json().to_string())
            .map_err(|e| e.to_string())?;
        let resp = app.handle(req).await;
        if resp.status() != 200 {
            return Err(format!("{what}: {path} answered {}", resp.status()));
        }
    }
    let (units, ops) = counter.take();
    let n = users.len() as f64;
    Ok(Measured {
        what,
        units: Units {
            write: units.write / n,
            read: units.read / n,
        },
        ops: ops.into_iter().map(|(k, v)| (k, v as f64 / n)).collect(),
    })
}

/// The like in a like-only deployment, and reactions in each mode, per request.
pub async fn measure_all(endpoint: &str) -> Result<Vec<Measured>, String> {
    let users: Vec<UserId> = (0..N).map(|_| UserId::new_random()).collect();
    let kinds = Kinds::parse("like,love,laugh").map_err(|e| e.to_string())?;
    let mut out = Vec::new();

    let (app, counter) = stack(endpoint, Reactions::default()).await?;
    let post = PostId::new_random();
    out.push(
        measure(
            &app,
            &counter,
            "like, like-only deployment",
            &users,
            &format!("/posts/{post}/like"),
        )
        .await?,
    );

    let multi = Reactions {
        kinds: kinds.clone(),
        mode: Mode::Multi,
    };
    let (app, counter) = stack(endpoint, multi).await?;
    let post = PostId::new_random();
    out.push(
        measure(
            &app,
            &counter,
            "like, multi mode",
            &users,
            &format!("/posts/{post}/like"),
        )
        .await?,
    );
    out.push(
        measure(
            &app,
            &counter,
            "reaction, multi mode",
            &users,
            &format!("/posts/{post}/reactions/love"),
        )
        .await?,
    );

    let single = Reactions {
        kinds,
        mode: Mode::Single,
    };
    let (app, counter) = stack(endpoint, single).await?;
    let post = PostId::new_random();
    out.push(
        measure(
            &app,
            &counter,
            "first reaction, single mode",
            &users,
            &format!("/posts/{post}/reactions/love"),
        )
        .await?,
    );
    out.push(
        measure(
            &app,
            &counter,
            "replacement, single mode",
            &users,
            &format!("/posts/{post}/reactions/laugh"),
        )
        .await?,
    );
    out.push(
        measure(
            &app,
            &counter,
            "same kind again, single mode",
            &users,
            &format!("/posts/{post}/reactions/laugh"),
        )
        .await?,
    );
    Ok(out)
}
