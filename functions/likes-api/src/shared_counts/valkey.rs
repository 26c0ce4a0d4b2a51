//! The shared count tier on Valkey (ElastiCache Serverless on AWS, `redis-server` locally):
//! one multiplexed connection per execution environment, opened lazily and reopened when it
//! breaks (`redis`'s `ConnectionManager`).
//!
//! Only single-key commands, pipelined: a serverless cache is a cluster, where a multi-key
//! command (`MGET`) across hash slots is refused, and a pipeline of `GET`s costs the same ECPUs
//! (one per key and KB) in one round trip.

use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use super::{SharedCall, SharedError, SharedStore};

/// A connection attempt's bound: a TLS handshake in the same AZ takes a few ms.
const CONNECT_TIMEOUT: Duration = Duration::from_millis(500);

pub struct Valkey {
    connection: ConnectionManager,
}

impl From<redis::RedisError> for SharedError {
    fn from(e: redis::RedisError) -> Self {
        SharedError::Store(e.to_string())
    }
}

impl Valkey {
    /// A store at `url` (`redis://host:port`, or `rediss://` with TLS, as ElastiCache Serverless
    /// requires). Connects on first use; fails now only on a malformed URL.
    pub fn open(url: &str) -> Result<Self, SharedError> {
        let client = redis::Client::open(url)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(CONNECT_TIMEOUT))
            .set_response_timeout(Some(super::WAIT))
            // A reconnection is retried by the next request, not by this one's wait.
            .set_number_of_retries(1);
        let connection = ConnectionManager::new_lazy_with_config(client, config)?;
        Ok(Self { connection })
    }

    /// Opens the connection now (at start-up, so that the first request does not).
    pub async fn connect(&self) -> Result<(), SharedError> {
        let mut c = self.connection.clone();
        redis::cmd("PING").query_async::<()>(&mut c).await?;
        Ok(())
    }
}

impl SharedStore for Valkey {
    fn get<'a>(&'a self, keys: &'a [String]) -> SharedCall<'a, Vec<Option<Vec<u8>>>> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            for key in keys {
                pipe.get(key);
            }
            let mut c = self.connection.clone();
            Ok(pipe.query_async(&mut c).await?)
        })
    }

    fn put<'a>(&'a self, entries: &'a [(String, String)], keep: Duration) -> SharedCall<'a, ()> {
        Box::pin(async move {
            let mut pipe = redis::pipe();
            let ms = u64::try_from(keep.as_millis()).unwrap_or(u64::MAX).max(1);
            for (key, value) in entries {
                pipe.cmd("SET")
                    .arg(key)
                    .arg(value)
                    .arg("PX")
                    .arg(ms)
                    .ignore();
            }
            let mut c = self.connection.clone();
            pipe.query_async::<()>(&mut c).await?;
            Ok(())
        })
    }
}
