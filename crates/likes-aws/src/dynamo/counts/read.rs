//! The API's batch reads of Counts items. A feed's summary asks for up to 100 posts at once,
//! and one viral post's item is one partition: when DynamoDB throttles it, the batch's rounds
//! leave its key unprocessed. A partial read names those posts instead of failing the others
//! (`CountsRead::*_partial`); the whole read (`items_of`) still fails, as it always did.

use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes};
use likes_core::store::counts::PartialCounts;
use likes_core::{PostCounts, PostId, StoreError};

use super::super::calls::{self, Item, BATCH_GET_MAX};
use super::super::classify::build;
use super::super::schema::counts::PK;
use super::{post_counts_of, post_key, DynamoCounts};

/// The items of some posts that were read, and the posts whose keys were left unprocessed.
type Items = (Vec<(PostId, PostCounts)>, Vec<PostId>);

impl DynamoCounts {
    /// The items of `posts` that have one, eventually consistent; a key left unprocessed
    /// after every round fails the read.
    pub(super) async fn items_of(
        &self,
        posts: &[PostId],
    ) -> Result<Vec<(PostId, PostCounts)>, StoreError> {
        match self.items_partial(posts).await? {
            (items, unread) if unread.is_empty() => Ok(items),
            _ => Err(StoreError::Unavailable(
                "BatchGetItem kept returning UnprocessedKeys".into(),
            )),
        }
    }

    /// `of` each item of `posts` read, and the posts left unread.
    pub(super) async fn counts_partial<T>(
        &self,
        posts: &[PostId],
        of: impl Fn(&PostCounts) -> T,
    ) -> Result<PartialCounts<T>, StoreError> {
        let (items, unread) = self.items_partial(posts).await?;
        let read = items.iter().map(|(p, c)| (p.clone(), of(c))).collect();
        Ok(PartialCounts { read, unread })
    }

    async fn items_partial(&self, posts: &[PostId]) -> Result<Items, StoreError> {
        let mut out = (Vec::with_capacity(posts.len()), Vec::new());
        for chunk in posts.chunks(BATCH_GET_MAX) {
            let mut keys = KeysAndAttributes::builder();
            for post in chunk {
                keys = keys.keys(post_key(post));
            }
            let keys = keys.build().map_err(build)?;
            let got = calls::get_some(&self.client, &self.table, keys).await?;
            for item in &got.items {
                out.0.push((post_of(item)?, post_counts_of(item)?));
            }
            for key in &got.unprocessed {
                out.1.push(post_of(key)?);
            }
        }
        Ok(out)
    }
}

/// The post an item (or a key) is of.
fn post_of(item: &Item) -> Result<PostId, StoreError> {
    match item.get(PK) {
        Some(AttributeValue::S(p)) => {
            PostId::parse(p).map_err(|e| StoreError::Internal(format!("stored post_id: {e}")))
        }
        other => Err(StoreError::Internal(format!("stored post_id: {other:?}"))),
    }
}
