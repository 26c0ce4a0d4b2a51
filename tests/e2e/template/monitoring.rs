//! An alarm for every function, table and index; alarm names that match the metrics the code
//! emits; every alarm on the topic the stack outputs; a dashboard that is valid JSON with what
//! on-call looks at first.

use std::collections::BTreeSet;

use serde_yaml::Value;

use super::{load, of_type, reference};

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
pub fn alarmed(m: &Value, namespace: &str, metric: &str, param: &str) -> bool {
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
