//! The region's served homes (`likes_core::homes`), in its pending-erasures table beside the
//! product's decisions: one item, `region#homes`, whose string set `homes` names them (absent:
//! none). The table is the region's own in two regions: never replicated.

use std::collections::BTreeSet;

use aws_sdk_dynamodb::types::AttributeValue;
use aws_sdk_dynamodb::Client;
use likes_core::erase_job::Call;
use likes_core::homes::{Home, Homes};
use likes_core::StoreError;

use super::classify::{classify, classify_read};
use super::s;
use super::schema::erase_requests::{HOMES, HOMES_KEY, PK};

#[derive(Clone, Debug)]
pub struct DynamoHomes {
    client: Client,
    table: String,
}

impl DynamoHomes {
    /// On the pending-erasures table (`ERASE_REQUESTS_TABLE_NAME`).
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self {
            client,
            table: table.into(),
        }
    }
}

impl Homes for DynamoHomes {
    fn served(&self) -> Call<'_, BTreeSet<Home>> {
        Box::pin(async move {
            let out = self
                .client
                .get_item()
                .table_name(&self.table)
                .key(PK, s(HOMES_KEY))
                .consistent_read(true)
                .send()
                .await
                .map_err(classify_read)?;
            let Some(set) = out.item.as_ref().and_then(|i| i.get(HOMES)) else {
                return Ok(BTreeSet::new());
            };
            let labels = set.as_ss().map_err(|_| {
                StoreError::Internal(format!("{HOMES_KEY}: {HOMES} is not a string set"))
            })?;
            labels
                .iter()
                .map(|l| {
                    Home::parse(l).map_err(|e| StoreError::Internal(format!("{HOMES_KEY}: {e}")))
                })
                .collect()
        })
    }

    fn set<'a>(&'a self, home: &'a Home, serve: bool) -> Call<'a, ()> {
        Box::pin(async move {
            // ADD and DELETE of a set's member: idempotent, and no read before the write. A set
            // left empty is removed by DynamoDB: absent, as never opened.
            let verb = if serve { "ADD" } else { "DELETE" };
            self.client
                .update_item()
                .table_name(&self.table)
                .key(PK, s(HOMES_KEY))
                .update_expression(format!("{verb} #homes :home"))
                .expression_attribute_names("#homes", HOMES)
                .expression_attribute_values(
                    ":home",
                    AttributeValue::Ss(vec![home.as_str().to_owned()]),
                )
                .send()
                .await
                .map_err(classify)?;
            Ok(())
        })
    }
}
