//! Erasing likes: a person's (when they ask, or leave) and a deleted post's. Deletes go
//! through the stream like any unlike, so the counts follow by themselves. Both are idempotent
//! and resumable: run again, they delete what is left.

use std::collections::HashMap;
use std::time::Duration;

use aws_sdk_dynamodb::types::{AttributeValue, DeleteRequest, WriteRequest};
use aws_sdk_dynamodb::Client;

use crate::bucket::PostBucket;
use crate::ids::{PostId, UserId};
use crate::schema::likes::{BY_USER, LIKED_AT, PK, SK};
use crate::store::batch;
use crate::store::error::{build, classify, classify_read, StoreError};

/// How an erase proceeds: what it reports, and how long the index must stay empty.
pub struct Sweep<'a> {
    /// Called with the number of items deleted so far.
    pub progress: &'a (dyn Fn(usize) + Sync),
    /// The user's index is eventually consistent: an erase ends only after this many
    /// consecutive sweeps found nothing, `pause` apart.
    pub empty_sweeps: u32,
    pub pause: Duration,
    /// Only likes made at or before this time (`liked_at`, the index's sort key); all if none.
    pub before: Option<&'a str>,
}

type Key = HashMap<String, AttributeValue>;

/// Deletes `keys` (BatchWriteItem, 25 at a time, unprocessed ones retried with backoff).
async fn delete_keys(client: &Client, table: &str, keys: Vec<Key>) -> Result<(), StoreError> {
    let mut requests = Vec::with_capacity(keys.len());
    for key in keys {
        let delete = DeleteRequest::builder()
            .set_key(Some(key))
            .build()
            .map_err(build)?;
        requests.push(WriteRequest::builder().delete_request(delete).build());
    }
    batch::write_all(client, table, requests, 8).await
}

/// How many conditional deletes run at once.
const DELETE_CONCURRENCY: usize = 16;

/// Deletes the likes of `keys` that were made at or before `t`; how many it deleted. The index
/// can still show a like that was since unliked and made again after `t` (its entry lags the
/// table): the condition, checked on the item itself, keeps such a like.
/// `progress` hears the running total (`base` + these) after every delete, so that a caller
/// stopped mid-page knows how far it got.
async fn delete_made_before(
    client: &Client,
    table: &str,
    keys: Vec<Key>,
    t: &str,
    base: usize,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<usize, StoreError> {
    use futures::{StreamExt, TryStreamExt};
    futures::stream::iter(keys)
        .map(|key| async move {
            let res = client
                .delete_item()
                .table_name(table)
                .set_key(Some(key))
                .condition_expression("#t <= :t")
                .expression_attribute_names("#t", LIKED_AT)
                .expression_attribute_values(":t", AttributeValue::S(t.to_owned()))
                .send()
                .await;
            match res {
                Ok(_) => Ok(1),
                // Gone already, or made again after the request: not this erase's to delete.
                Err(e)
                    if e.as_service_error()
                        .is_some_and(|se| se.is_conditional_check_failed_exception()) =>
                {
                    Ok(0)
                }
                Err(e) => Err(classify(e)),
            }
        })
        .buffer_unordered(DELETE_CONCURRENCY)
        .try_fold(0, |n, d| async move {
            if d > 0 {
                progress(base + n + d);
            }
            Ok(n + d)
        })
        .await
}

fn key_of(item: &Key) -> Option<Key> {
    Some(HashMap::from([
        (PK.to_owned(), item.get(PK)?.clone()),
        (SK.to_owned(), item.get(SK)?.clone()),
    ]))
}

/// Deletes every like of `user`, found through the `by_user` index. Returns how many it
/// deleted (without `before`, how many the index showed: a stale entry's delete is a no-op).
/// The index lags the table, so it sweeps until the index stays empty.
pub async fn erase_user(
    client: &Client,
    likes_table: &str,
    user: &UserId,
    sweep: &Sweep<'_>,
) -> Result<usize, StoreError> {
    let mut deleted = 0;
    let mut empty = 0;
    while empty < sweep.empty_sweeps {
        let mut found = 0;
        let mut start = None;
        loop {
            let mut query = client
                .query()
                .table_name(likes_table)
                .index_name(BY_USER)
                .expression_attribute_names("#u", SK)
                .expression_attribute_values(":u", AttributeValue::S(user.as_str().to_owned()))
                .set_exclusive_start_key(start);
            query = match sweep.before {
                Some(t) => query
                    .key_condition_expression("#u = :u AND #t <= :t")
                    .expression_attribute_names("#t", LIKED_AT)
                    .expression_attribute_values(":t", AttributeValue::S(t.to_owned())),
                None => query.key_condition_expression("#u = :u"),
            };
            let out = query.send().await.map_err(classify_read)?;
            let keys: Vec<Key> = out.items().iter().filter_map(key_of).collect();
            found += keys.len();
            deleted += match sweep.before {
                Some(t) => {
                    delete_made_before(client, likes_table, keys, t, deleted, sweep.progress)
                        .await?
                }
                None => {
                    let n = keys.len();
                    delete_keys(client, likes_table, keys).await?;
                    n
                }
            };
            (sweep.progress)(deleted);
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => break,
            }
        }
        if found == 0 {
            empty += 1;
        } else {
            empty = 0;
        }
        if empty < sweep.empty_sweeps {
            tokio::time::sleep(sweep.pause).await;
        }
    }
    Ok(deleted)
}

/// Deletes every item of `post`'s 16 buckets — its likes, and any control items (request
/// markers, recount fences and windows). Returns how many likes it deleted.
pub async fn erase_post(
    client: &Client,
    likes_table: &str,
    post: &PostId,
    progress: &(dyn Fn(usize) + Sync),
) -> Result<usize, StoreError> {
    let mut deleted = 0;
    for pb in PostBucket::all(post) {
        loop {
            let out = client
                .query()
                .table_name(likes_table)
                .key_condition_expression("#pb = :pb")
                .expression_attribute_names("#pb", PK)
                .expression_attribute_values(":pb", AttributeValue::S(pb.to_string()))
                .consistent_read(true)
                .send()
                .await
                .map_err(classify_read)?;
            if out.items().is_empty() {
                break;
            }
            deleted += out
                .items()
                .iter()
                .filter(|i| {
                    i.get(SK)
                        .and_then(|v| v.as_s().ok())
                        .is_some_and(|u| !u.starts_with('~'))
                })
                .count();
            let keys = out.items().iter().filter_map(key_of).collect();
            delete_keys(client, likes_table, keys).await?;
            progress(deleted);
        }
    }
    Ok(deleted)
}
