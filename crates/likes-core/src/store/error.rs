//! What a store returns when its database fails, sorted by what the failure says about the
//! request: certainly not applied, maybe applied, or a misconfiguration. The AWS adapters sort
//! SDK failures into these (`likes_aws::dynamo::classify`); everything above the stores — the
//! API's statuses, the aggregator's retries — decides by them alone.

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// Throttled or unreachable after the retries. A write that fails this way certainly did not
    /// take effect: retrying later is safe.
    #[error("DynamoDB is unavailable: {0}")]
    Unavailable(String),
    /// A write was sent but its answer never came (a timeout, a cut connection, a 5xx): it may
    /// or may not have taken effect, and a blind retry could apply it twice.
    #[error("the outcome of a DynamoDB write is unknown: {0}")]
    OutcomeUnknown(String),
    /// The post's bucket holds 10 GB, the most one item collection of a table with a local
    /// secondary index may hold: no more likes fit in it.
    #[error("the item collection is full: {0}")]
    CollectionFull(String),
    /// An `Idempotency-Key` already named a different request (a like reused for an unlike).
    #[error("the idempotency key was used for a different request")]
    KeyReused,
    /// Anything else: a bug, a misconfiguration (missing table, denied permission, no
    /// credentials, an endpoint that does not resolve), or a response we did not expect.
    #[error("DynamoDB request failed: {0}")]
    Internal(String),
}

impl StoreError {
    /// The same failure, seen from a read: a read has no effect to be unsure about.
    pub fn for_read(self) -> Self {
        match self {
            StoreError::OutcomeUnknown(d) => StoreError::Unavailable(d),
            other => other,
        }
    }
}
