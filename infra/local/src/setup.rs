//! The tables, created from the same definitions the template deploys, and the Likes stream.

use likes_aws::dynamo::schema::{create_table, TableDef};

use crate::error::LocalError;

pub async fn ensure_table(
    client: &aws_sdk_dynamodb::Client,
    def: &TableDef,
    name: &str,
) -> Result<(), LocalError> {
    let exists = client
        .describe_table()
        .table_name(name)
        .send()
        .await
        .is_ok();
    if !exists {
        create_table(client, def, name)
            .await
            .map_err(|e| LocalError::Setup(format!("creating {name}: {e}")))?;
    }
    Ok(())
}

/// The ARN of the table's stream.
pub async fn stream_arn(
    client: &aws_sdk_dynamodb::Client,
    table: &str,
) -> Result<String, LocalError> {
    client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| {
            LocalError::Setup(aws_sdk_dynamodb::error::DisplayErrorContext(e).to_string())
        })?
        .table
        .and_then(|t| t.latest_stream_arn)
        .ok_or_else(|| LocalError::Setup(format!("the table {table} has no stream")))
}
