//! One AWS call as the lab sees it: who signed it, which operation, on which resources. Every
//! service the stack uses speaks AWS JSON over HTTP (`X-Amz-Target: <prefix>.<Operation>`):
//! DynamoDB, DynamoDB Streams, SQS and EventBridge. The identity is the access key id of the
//! SigV4 `Authorization` header (the lab does not check signatures: it stands for IAM's
//! authorization, not for its authentication).

use serde_json::Value;

/// The account and region the emulator names its resources in.
pub const ACCOUNT: &str = "123456789012";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Service {
    Dynamo,
    Streams,
    Sqs,
    Events,
}

#[derive(Debug, Clone)]
pub struct Call {
    pub identity: String,
    pub region: String,
    pub service: Service,
    /// The operation's name, as in its target (`PutItem`).
    pub operation: String,
    pub body: Value,
}

/// `Credential=<key>/<date>/<region>/<service>/aws4_request` of a SigV4 header.
fn credential(authorization: &str) -> Option<(String, String)> {
    let cred = authorization.split("Credential=").nth(1)?;
    let mut parts = cred.split(['/', ',']);
    let key = parts.next()?.to_owned();
    let _date = parts.next()?;
    let region = parts.next()?.to_owned();
    Some((key, region))
}

impl Call {
    /// The call in a request, if it is one the lab knows (anything else passes untouched).
    pub fn parse(authorization: Option<&str>, target: Option<&str>, body: &[u8]) -> Option<Call> {
        let (prefix, operation) = target?.split_once('.')?;
        let service = match prefix {
            "DynamoDB_20120810" => Service::Dynamo,
            "DynamoDBStreams_20120810" => Service::Streams,
            "AmazonSQS" => Service::Sqs,
            "AWSEvents" => Service::Events,
            _ => return None,
        };
        let (identity, region) = credential(authorization?)?;
        let body = serde_json::from_slice(body).unwrap_or(Value::Null);
        Some(Call {
            identity,
            region,
            service,
            operation: operation.to_owned(),
            body,
        })
    }

    pub fn table_arn(&self, table: &str) -> String {
        format!("arn:aws:dynamodb:{}:{ACCOUNT}:table/{table}", self.region)
    }

    fn queue_arn(&self, url_or_name: &str) -> String {
        let name = url_or_name.rsplit('/').next().unwrap_or(url_or_name);
        format!("arn:aws:sqs:{}:{ACCOUNT}:{name}", self.region)
    }

    fn str(&self, field: &str) -> Option<&str> {
        self.body[field].as_str()
    }

    /// The tables the call reads or writes (DynamoDB only).
    pub fn tables(&self) -> Vec<String> {
        if self.service != Service::Dynamo {
            return Vec::new();
        }
        match self.operation.as_str() {
            "BatchGetItem" | "BatchWriteItem" => self.body["RequestItems"]
                .as_object()
                .map(|m| m.keys().cloned().collect())
                .unwrap_or_default(),
            "TransactWriteItems" | "TransactGetItems" => self.body["TransactItems"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|item| {
                    let (_, op) = item.as_object()?.iter().next()?;
                    op["TableName"].as_str().map(str::to_owned)
                })
                .collect(),
            _ => self
                .str("TableName")
                .map(str::to_owned)
                .into_iter()
                .collect(),
        }
    }

    /// What IAM authorizes: each (action, resource) the call needs. A transaction needs each
    /// of its items' own action on its table, as DynamoDB authorizes it.
    pub fn permissions(&self) -> Vec<(String, String)> {
        let op = self.operation.as_str();
        match self.service {
            Service::Dynamo => match op {
                "TransactWriteItems" | "TransactGetItems" => self.body["TransactItems"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|item| {
                        let (kind, body) = item.as_object()?.iter().next()?;
                        let action = match kind.as_str() {
                            "Put" => "PutItem",
                            "Update" => "UpdateItem",
                            "Delete" => "DeleteItem",
                            "ConditionCheck" => "ConditionCheckItem",
                            "Get" => "GetItem",
                            _ => return None,
                        };
                        let table = body["TableName"].as_str()?;
                        Some((format!("dynamodb:{action}"), self.table_arn(table)))
                    })
                    .collect(),
                "ListTables" => vec![("dynamodb:ListTables".into(), "*".into())],
                "Query" | "Scan" => {
                    let table = self.table_arn(self.str("TableName").unwrap_or(""));
                    let arn = match self.str("IndexName") {
                        Some(index) => format!("{table}/index/{index}"),
                        None => table,
                    };
                    vec![(format!("dynamodb:{op}"), arn)]
                }
                _ => self
                    .tables()
                    .iter()
                    .map(|t| (format!("dynamodb:{op}"), self.table_arn(t)))
                    .collect(),
            },
            Service::Streams => {
                let arn = match op {
                    // The iterator (the emulator's) is the stream's ARN, `|`, and its position.
                    "GetRecords" => self
                        .str("ShardIterator")
                        .and_then(|i| i.split('|').next())
                        .unwrap_or("*")
                        .to_owned(),
                    "ListStreams" => "*".to_owned(),
                    _ => self.str("StreamArn").unwrap_or("*").to_owned(),
                };
                vec![(format!("dynamodb:{op}"), arn)]
            }
            Service::Sqs => {
                let arn = self
                    .str("QueueUrl")
                    .or_else(|| self.str("QueueName"))
                    .map_or("*".to_owned(), |q| self.queue_arn(q));
                vec![(format!("sqs:{op}"), arn)]
            }
            Service::Events => {
                let bus_arn =
                    |bus: &str| format!("arn:aws:events:{}:{ACCOUNT}:event-bus/{bus}", self.region);
                match op {
                    "PutEvents" => {
                        let mut buses: Vec<String> = self.body["Entries"]
                            .as_array()
                            .into_iter()
                            .flatten()
                            .map(|e| bus_arn(e["EventBusName"].as_str().unwrap_or("default")))
                            .collect();
                        buses.dedup();
                        buses
                            .into_iter()
                            .map(|b| ("events:PutEvents".into(), b))
                            .collect()
                    }
                    "CreateEventBus" | "DescribeEventBus" => {
                        vec![(
                            format!("events:{op}"),
                            bus_arn(self.str("Name").unwrap_or("default")),
                        )]
                    }
                    _ => vec![(format!("events:{op}"), "*".into())],
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const AUTH: &str = "AWS4-HMAC-SHA256 Credential=LikesApiFunction/20261203/us-east-1/dynamodb/aws4_request, SignedHeaders=host, Signature=x";

    fn call(target: &str, body: Value) -> Call {
        Call::parse(Some(AUTH), Some(target), body.to_string().as_bytes()).expect("a call")
    }

    #[test]
    fn a_transaction_needs_each_items_own_action() {
        let c = call(
            "DynamoDB_20120810.TransactWriteItems",
            json!({"TransactItems": [
                {"Put": {"TableName": "likes", "Item": {}}},
                {"ConditionCheck": {"TableName": "likes", "Key": {}}},
                {"Put": {"TableName": "markers", "Item": {}}},
            ]}),
        );
        assert_eq!(c.identity, "LikesApiFunction");
        let arn = |t: &str| format!("arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/{t}");
        assert_eq!(
            c.permissions(),
            [
                ("dynamodb:PutItem".into(), arn("likes")),
                ("dynamodb:ConditionCheckItem".into(), arn("likes")),
                ("dynamodb:PutItem".into(), arn("markers")),
            ]
        );
    }

    #[test]
    fn an_index_query_is_on_the_index_and_a_shard_read_on_its_stream() {
        let q = call(
            "DynamoDB_20120810.Query",
            json!({"TableName": "likes", "IndexName": "by_user"}),
        );
        assert!(q.permissions()[0].1.ends_with(":table/likes/index/by_user"));
        let stream = format!("arn:aws:dynamodb:us-east-1:{ACCOUNT}:table/likes/stream/2026");
        let r = call(
            "DynamoDBStreams_20120810.GetRecords",
            json!({"ShardIterator": format!("{stream}|1|abc")}),
        );
        assert_eq!(r.permissions(), [("dynamodb:GetRecords".into(), stream)]);
        let s = call(
            "AmazonSQS.SendMessage",
            json!({"QueueUrl": "http://127.0.0.1:5000/123456789012/likes-erase"}),
        );
        assert_eq!(
            s.permissions()[0].1,
            format!("arn:aws:sqs:us-east-1:{ACCOUNT}:likes-erase")
        );
    }

    #[test]
    fn what_is_not_an_aws_json_call_is_left_alone() {
        assert!(Call::parse(Some(AUTH), None, b"{}").is_none());
        assert!(Call::parse(None, Some("DynamoDB_20120810.GetItem"), b"{}").is_none());
        assert!(Call::parse(Some(AUTH), Some("Other.Op"), b"{}").is_none());
    }
}
