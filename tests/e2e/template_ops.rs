//! What an operator of a deployed stack relies on, read from template.yaml and its nested
//! infra/monitoring.yaml: an alarm for every function, table and index; alarm names that match the
//! metrics the code emits; a dashboard that is valid JSON; JSON access logs; tables that cannot
//! be deleted by accident, on the free key by default; erasures that outlive the stack; and
//! every parameter explained in docs/deploy.md. `make lint-template` checks the same files with
//! SAM and cfn-lint; these tests check what those tools cannot know.

use std::collections::BTreeSet;

use serde_yaml::Value;

fn load(file: &str) -> Value {
    let path = format!("{}/../../{file}", env!("CARGO_MANIFEST_DIR"));
    serde_yaml::from_str(&std::fs::read_to_string(&path).expect(file)).expect("YAML")
}

/// The name in a `!Ref name`, if `v` is one.
fn reference(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "Ref" => t.value.as_str(),
        _ => None,
    }
}

fn of_type<'a>(t: &'a Value, kind: &str) -> Vec<(&'a str, &'a Value)> {
    let resources = t["Resources"].as_mapping().expect("Resources");
    resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some(kind))
        .map(|(k, r)| (k.as_str().expect("a logical id"), r))
        .collect()
}

/// A metric an alarm watches: (namespace, metric name, the parameters its dimensions name).
type Watched = (String, String, BTreeSet<String>);

/// Each metric an alarm watches.
fn watched(alarm: &Value) -> Vec<Watched> {
    let p = &alarm["Properties"];
    let refs = |dims: &Value| -> BTreeSet<String> {
        dims.as_sequence()
            .into_iter()
            .flatten()
            .filter_map(|d| reference(&d["Value"]).map(str::to_owned))
            .collect()
    };
    if let Some(metrics) = p["Metrics"].as_sequence() {
        return metrics
            .iter()
            .filter_map(|m| m["MetricStat"]["Metric"].as_mapping().map(|_| m))
            .map(|m| {
                let metric = &m["MetricStat"]["Metric"];
                (
                    metric["Namespace"].as_str().unwrap_or_default().to_owned(),
                    metric["MetricName"].as_str().unwrap_or_default().to_owned(),
                    refs(&metric["Dimensions"]),
                )
            })
            .collect();
    }
    vec![(
        p["Namespace"].as_str().unwrap_or_default().to_owned(),
        p["MetricName"].as_str().unwrap_or_default().to_owned(),
        refs(&p["Dimensions"]),
    )]
}

fn alarms(m: &Value) -> Vec<(&str, Vec<Watched>)> {
    of_type(m, "AWS::CloudWatch::Alarm")
        .into_iter()
        .map(|(name, a)| (name, watched(a)))
        .collect()
}

/// Whether some alarm watches `metric` in `namespace` with a dimension given by `param`.
fn alarmed(m: &Value, namespace: &str, metric: &str, param: &str) -> bool {
    alarms(m).iter().any(|(_, ws)| {
        ws.iter()
            .any(|(ns, name, dims)| ns == namespace && name == metric && dims.contains(param))
    })
}

/// The monitoring stack's parameter that the root template fills with `!Ref logical_id`.
fn passed_as<'a>(root: &'a Value, logical_id: &str) -> Option<&'a str> {
    let params = root["Resources"]["Monitoring"]["Properties"]["Parameters"]
        .as_mapping()
        .expect("the Monitoring application's parameters");
    params
        .iter()
        .find(|(_, v)| reference(v) == Some(logical_id))
        .and_then(|(k, _)| k.as_str())
}

#[test]
fn every_function_table_and_index_has_its_alarms() {
    let (root, m) = (load("template.yaml"), load("infra/monitoring.yaml"));
    let functions = of_type(&root, "AWS::Serverless::Function");
    assert!(functions.len() >= 3, "{functions:?}");
    for (function, _) in functions {
        let param = passed_as(&root, function)
            .unwrap_or_else(|| panic!("{function} is not passed to the monitoring stack"));
        for metric in ["Errors", "Throttles"] {
            assert!(
                alarmed(&m, "AWS/Lambda", metric, param),
                "no alarm on {function}'s {metric}"
            );
        }
    }
    for (table, _) in of_type(&root, "AWS::DynamoDB::Table") {
        let param = passed_as(&root, table)
            .unwrap_or_else(|| panic!("{table} is not passed to the monitoring stack"));
        for metric in ["ReadThrottleEvents", "WriteThrottleEvents"] {
            assert!(
                alarmed(&m, "AWS/DynamoDB", metric, param),
                "no alarm on {table}'s {metric}"
            );
        }
    }
    // The by-user index throttles on its own metrics (TableName + GlobalSecondaryIndexName).
    let index_alarmed = alarms(&m).iter().any(|(_, ws)| {
        ws.iter().any(|(_, name, dims)| {
            name == "WriteThrottleEvents"
                && dims.contains("LikesTable")
                && dims.contains("ByUserIndex")
        })
    });
    assert!(index_alarmed, "no alarm on the by-user index's throttles");
    assert!(alarmed(&m, "AWS/ApiGateway", "5xx", "HttpApiId"));
    assert!(alarmed(&m, "AWS/ApiGateway", "Latency", "HttpApiId"));
    assert!(alarmed(
        &m,
        "AWS/Lambda",
        "IteratorAge",
        "CountAggregatorFunction"
    ));
    for queue in ["EraseDeadLetterQueue", "AggregatorFailureQueue"] {
        assert!(alarmed(
            &m,
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            queue
        ));
    }
    assert!(alarmed(
        &m,
        "AWS/SQS",
        "ApproximateAgeOfOldestMessage",
        "EraseQueue"
    ));
}

/// The names in each embedded-metrics line's directive.
fn emitted(line: &str) -> (String, Vec<String>) {
    let v: serde_json::Value = serde_json::from_str(line).expect("an EMF line is JSON");
    let directive = &v["_aws"]["CloudWatchMetrics"][0];
    let names = directive["Metrics"]
        .as_array()
        .expect("metrics")
        .iter()
        .map(|m| m["Name"].as_str().expect("a name").to_owned())
        .collect();
    (
        directive["Namespace"]
            .as_str()
            .expect("a namespace")
            .to_owned(),
        names,
    )
}

#[test]
fn the_alarms_on_the_codes_own_metrics_name_what_the_code_emits() {
    let m = load("infra/monitoring.yaml");
    let (ns, api) = emitted(&likes_api::metrics::collection_full_line("f"));
    assert!(api.contains(&"ItemCollectionFull".to_owned()));
    assert!(alarmed(&m, &ns, "ItemCollectionFull", "LikesApiFunction"));
    let report = count_aggregator::BatchReport::default();
    let (ns, aggregator) = emitted(&count_aggregator::emf_line("f", &report));
    for metric in ["CountAnomalies", "MarksAhead"] {
        assert!(aggregator.contains(&metric.to_owned()), "{aggregator:?}");
        assert!(
            alarmed(&m, &ns, metric, "CountAggregatorFunction"),
            "{metric}"
        );
    }
}

#[test]
fn every_alarm_notifies_the_topic_the_stack_outputs() {
    let (root, m) = (load("template.yaml"), load("infra/monitoring.yaml"));
    let all = of_type(&m, "AWS::CloudWatch::Alarm");
    assert!(all.len() >= 12, "{} alarms", all.len());
    for (name, alarm) in all {
        let actions = alarm["Properties"]["AlarmActions"]
            .as_sequence()
            .unwrap_or_else(|| panic!("{name} has no actions"));
        assert!(
            actions.iter().any(|a| reference(a) == Some("AlarmTopic")),
            "{name} does not notify the topic"
        );
        assert!(
            alarm["Properties"]["AlarmDescription"].as_str().is_some(),
            "{name}"
        );
    }
    assert!(!root["Outputs"]["AlarmTopicArn"].is_null());
    assert!(!root["Outputs"]["DashboardName"].is_null());
    assert!(!root["Outputs"]["OperatorPolicyArn"].is_null());
}

/// `text` with every `${…}` (CloudFormation's substitutions) replaced by a plain word.
fn substituted(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = rest[start..].find('}').expect("a closed ${…}");
        out.push_str("name");
        rest = &rest[start + end + 1..];
    }
    out + rest
}

#[test]
fn the_dashboard_is_json_with_what_on_call_looks_at_first() {
    let m = load("infra/monitoring.yaml");
    let body = &m["Resources"]["Dashboard"]["Properties"]["DashboardBody"];
    let Value::Tagged(sub) = body else {
        panic!("the dashboard body is a !Sub")
    };
    let text = sub.value.as_str().expect("a string");
    let v: serde_json::Value = serde_json::from_str(&substituted(text)).expect("dashboard JSON");
    let titles: Vec<&str> = v["widgets"]
        .as_array()
        .expect("widgets")
        .iter()
        .map(|w| w["properties"]["title"].as_str().expect("a title"))
        .collect();
    for needed in [
        "outcome",
        "latency",
        "lag",
        "anomalies",
        "Queues",
        "throttles",
    ] {
        assert!(
            titles.iter().any(|t| t.contains(needed)),
            "no widget about {needed}: {titles:?}"
        );
    }
}

#[test]
fn api_access_logs_are_json_lines_with_what_the_function_cannot_see() {
    let root = load("template.yaml");
    let settings = &root["Resources"]["LikesHttpApi"]["Properties"]["AccessLogSettings"];
    assert!(!settings["DestinationArn"].is_null());
    let format = settings["Format"].as_str().expect("a format");
    let v: serde_json::Value = serde_json::from_str(format).expect("the format is JSON");
    for field in [
        "requestId",
        "routeKey",
        "status",
        "responseLatency",
        "integrationError",
        "authorizerError",
    ] {
        assert!(
            v[field]
                .as_str()
                .is_some_and(|s| s.starts_with("$context.")),
            "{field}"
        );
    }
}

#[test]
fn tables_are_protected_and_on_the_free_key_unless_told_otherwise() {
    let root = load("template.yaml");
    for (name, table) in of_type(&root, "AWS::DynamoDB::Table") {
        let p = &table["Properties"];
        assert_eq!(
            p["DeletionProtectionEnabled"].as_bool(),
            Some(true),
            "{name}"
        );
        assert_eq!(table["DeletionPolicy"].as_str(), Some("Retain"), "{name}");
        let Value::Tagged(sse) = &p["SSESpecification"] else {
            panic!("{name}: SSESpecification must be conditional on a customer key")
        };
        let parts = sse.value.as_sequence().expect("!If parts");
        assert_eq!(sse.tag, "If");
        assert_eq!(parts[0].as_str(), Some("HasTableKmsKey"), "{name}");
        assert_eq!(
            reference(&parts[1]["KMSMasterKeyId"]),
            Some("TableKmsKeyArn")
        );
        assert_eq!(reference(&parts[2]), Some("AWS::NoValue"), "{name}");
    }
    for queue in ["EraseQueue", "EraseDeadLetterQueue"] {
        let q = &root["Resources"][queue];
        assert_eq!(q["DeletionPolicy"].as_str(), Some("Retain"), "{queue}");
        assert_eq!(q["UpdateReplacePolicy"].as_str(), Some("Retain"), "{queue}");
    }
}

#[test]
fn every_parameter_is_explained_in_the_deploy_guide() {
    let root = load("template.yaml");
    let guide =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/deploy.md"))
            .expect("docs/deploy.md");
    for (name, p) in root["Parameters"].as_mapping().expect("Parameters") {
        let name = name.as_str().expect("a name");
        assert!(
            p["Description"].as_str().is_some(),
            "{name} has no Description"
        );
        assert!(
            guide.contains(&format!("`{name}`")),
            "docs/deploy.md does not explain the parameter {name}"
        );
    }
}

/// `(condition, then, else)` of an `!If`.
fn if_parts(v: &Value) -> (&str, &Value, &Value) {
    let Value::Tagged(t) = v else {
        panic!("expected !If, got {v:?}")
    };
    assert_eq!(t.tag, "If");
    let parts = t.value.as_sequence().expect("!If parts");
    (
        parts[0].as_str().expect("a condition"),
        &parts[1],
        &parts[2],
    )
}

#[test]
fn each_front_door_is_whole_and_only_one_exists() {
    let root = load("template.yaml");
    let r = &root["Resources"];
    let condition = |name: &str| r[name]["Condition"].as_str().map(str::to_owned);
    // API Gateway: the API, its invoke permission, its access log.
    for name in ["LikesHttpApi", "ApiInvokePermission", "ApiAccessLogGroup"] {
        assert_eq!(condition(name).as_deref(), Some("UseHttpApi"), "{name}");
    }
    // The function URL: public (the function verifies the token), with both permissions a
    // public URL needs since October 2025.
    for name in [
        "LikesApiFunctionUrl",
        "FunctionUrlPublicAccess",
        "FunctionUrlInvoke",
    ] {
        assert_eq!(condition(name).as_deref(), Some("UseFunctionUrl"), "{name}");
    }
    assert_eq!(
        r["LikesApiFunctionUrl"]["Properties"]["AuthType"].as_str(),
        Some("NONE")
    );
    let actions: BTreeSet<&str> = ["FunctionUrlPublicAccess", "FunctionUrlInvoke"]
        .iter()
        .map(|n| r[*n]["Properties"]["Action"].as_str().expect("an action"))
        .collect();
    assert_eq!(
        actions,
        BTreeSet::from(["lambda:InvokeFunctionUrl", "lambda:InvokeFunction"])
    );
    assert_eq!(
        r["FunctionUrlInvoke"]["Properties"]["InvokedViaFunctionUrl"].as_bool(),
        Some(true)
    );
    // The function verifies tokens exactly when nothing in front of it does.
    let env = &r["LikesApiFunction"]["Properties"]["Environment"]["Variables"];
    let (cond, url, api) = if_parts(&env["LIKES_AUTH"]);
    assert_eq!(
        (cond, url.as_str(), api.as_str()),
        ("UseFunctionUrl", Some("jwt"), Some("authorizer"))
    );
    assert_eq!(reference(&env["LIKES_JWT_ISSUER"]), Some("JwtIssuer"));
    // One URL output either way; the API alarms follow the door.
    let (cond, _, _) = if_parts(&root["Outputs"]["ApiUrl"]["Value"]);
    assert_eq!(cond, "UseHttpApi");
    let m = load("infra/monitoring.yaml");
    assert!(alarmed(&m, "AWS/Lambda", "Url5xxCount", "LikesApiFunction"));
    assert!(alarmed(
        &m,
        "AWS/Lambda",
        "UrlRequestLatency",
        "LikesApiFunction"
    ));
    let mr = &m["Resources"];
    assert_eq!(
        mr["ApiServerErrorRateAlarm"]["Condition"].as_str(),
        Some("HasHttpApi")
    );
    assert_eq!(
        mr["FunctionUrlServerErrorRateAlarm"]["Condition"].as_str(),
        Some("HasFunctionUrl")
    );
}

#[test]
fn provisioned_capacity_scales_every_table_and_index_it_provisions() {
    let root = load("template.yaml");
    let r = &root["Resources"];
    assert_eq!(r["Capacity"]["Condition"].as_str(), Some("Provisioned"));
    let passed = r["Capacity"]["Properties"]["Parameters"].clone();
    let capacity = load("infra/capacity.yaml");
    let targets: Vec<(String, String)> =
        of_type(&capacity, "AWS::ApplicationAutoScaling::ScalableTarget")
            .into_iter()
            .map(|(_, t)| {
                let p = &t["Properties"];
                let Value::Tagged(sub) = &p["ResourceId"] else {
                    panic!("ResourceId is a !Sub")
                };
                (
                    sub.value.as_str().expect("a string").to_owned(),
                    p["ScalableDimension"]
                        .as_str()
                        .expect("a dimension")
                        .to_owned(),
                )
            })
            .collect();
    for (name, table) in of_type(&root, "AWS::DynamoDB::Table") {
        let billing = &table["Properties"]["BillingMode"];
        if billing.as_str() == Some("PAY_PER_REQUEST") {
            continue; // always on demand (the event state table)
        }
        let (cond, on, off) = if_parts(billing);
        assert_eq!(
            (cond, on.as_str(), off.as_str()),
            ("Provisioned", Some("PROVISIONED"), Some("PAY_PER_REQUEST")),
            "{name}"
        );
        let param = passed
            .as_mapping()
            .expect("parameters")
            .iter()
            .find(|(_, v)| reference(v) == Some(name))
            .and_then(|(k, _)| k.as_str())
            .unwrap_or_else(|| panic!("{name} is not passed to the capacity stack"));
        for dim in [
            "dynamodb:table:ReadCapacityUnits",
            "dynamodb:table:WriteCapacityUnits",
        ] {
            assert!(
                targets.contains(&(format!("table/${{{param}}}"), dim.to_owned())),
                "{name} does not scale {dim}: {targets:?}"
            );
        }
        // The Likes table's list is `!If [AllReactionIndexes, all, the upgrade step's]`:
        // every index of either branch.
        let gsis = &table["Properties"]["GlobalSecondaryIndexes"];
        let lists: Vec<&Value> = match gsis {
            Value::Tagged(t) => t.value.as_sequence().expect("!If parts")[1..]
                .iter()
                .collect(),
            other => vec![other],
        };
        for gsi in lists.into_iter().filter_map(Value::as_sequence).flatten() {
            let (cond, _, _) = if_parts(&gsi["ProvisionedThroughput"]);
            assert_eq!(cond, "Provisioned");
            for dim in [
                "dynamodb:index:ReadCapacityUnits",
                "dynamodb:index:WriteCapacityUnits",
            ] {
                assert!(
                    targets.iter().any(|(id, d)| id
                        .starts_with(&format!("table/${{{param}}}/index/"))
                        && d == dim),
                    "{name}'s index does not scale {dim}"
                );
            }
        }
    }
    assert_eq!(
        of_type(&capacity, "AWS::ApplicationAutoScaling::ScalingPolicy").len(),
        targets.len()
    );
}

/// `infra/scripts/check-policies.py` (run by `make lint-template` on every translated template) on a
/// template holding one role with `statement`: whether it passes.
fn policy_passes(statement: serde_json::Value, managed: &[&str]) -> bool {
    let template = serde_json::json!({"Resources": {"Role": {
        "Type": "AWS::IAM::Role",
        "Properties": {
            "ManagedPolicyArns": managed,
            "Policies": [{"PolicyDocument": {"Statement": [statement]}}]
        }
    }}});
    let file = std::env::temp_dir().join(format!("policies-{}.json", uuid::Uuid::new_v4()));
    std::fs::write(&file, template.to_string()).expect("a temp file");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/check-policies.py");
    let status = std::process::Command::new("python3")
        .arg(script)
        .arg(&file)
        .stderr(std::process::Stdio::null())
        .status()
        .expect("python3 runs");
    let _ = std::fs::remove_file(&file);
    status.success()
}

#[test]
fn the_template_lint_refuses_wildcards_and_broad_policies() {
    let table = serde_json::json!({"Fn::GetAtt": ["LikesTable", "Arn"]});
    let basic = ["arn:aws:iam::aws:policy/service-role/AWSLambdaBasicExecutionRole"];
    let ok =
        serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:GetItem"], "Resource": [table]});
    assert!(policy_passes(ok, &basic), "a narrow statement must pass");
    let stream = serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:GetRecords"],
        "Resource": [{"Fn::Sub": "${LikesTable.Arn}/stream/*"}]});
    assert!(
        policy_passes(stream, &basic),
        "a stream's label may be a wildcard"
    );
    for (what, statement) in [
        (
            "every resource",
            serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:GetItem"], "Resource": "*"}),
        ),
        (
            "every index",
            serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:Query"],
            "Resource": [{"Fn::Sub": "${LikesTable.Arn}/index/*"}]}),
        ),
        (
            "every action",
            serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:*"], "Resource": [table]}),
        ),
    ] {
        assert!(!policy_passes(statement, &basic), "{what} must be refused");
    }
    let ok =
        serde_json::json!({"Effect": "Allow", "Action": ["dynamodb:GetItem"], "Resource": [table]});
    assert!(
        !policy_passes(ok, &["arn:aws:iam::aws:policy/AdministratorAccess"]),
        "a broad managed policy must be refused"
    );
}
