//! What template.yaml and its nested stacks (infra/monitoring.yaml, infra/capacity.yaml)
//! promise, read as YAML: what `make lint-template` (SAM, cfn-lint, the policy check) cannot know.
//! - `mappings`: the stream and erase mappings keep the aggregator's invariants, CORS is exactly
//!   what browsers need, and the local stack plays the same settings;
//! - `monitoring`: an alarm for every function, table and index, on the metrics the code emits;
//!   a dashboard that is valid JSON;
//! - `deploy`: access logs, protected tables, every parameter explained, each front door whole,
//!   provisioned capacity scaled, and the policy lint itself.

mod deploy;
mod mappings;
mod monitoring;

use serde_yaml::Value;

pub fn load(file: &str) -> Value {
    let path = format!("{}/../../{file}", env!("CARGO_MANIFEST_DIR"));
    serde_yaml::from_str(&std::fs::read_to_string(&path).expect(file)).expect("YAML")
}

/// The name in a `!Ref name` (or in the owned branch of an `!If`), if `v` is one.
pub fn reference(v: &Value) -> Option<&str> {
    match v {
        Value::Tagged(t) if t.tag == "Ref" => t.value.as_str(),
        // A resource the stack owns in one configuration (Likes and Markers: RegionRole=single),
        // and is given by a parameter in another: `!If [OwnsTables, !Ref X, !Ref ReplicaX]`.
        Value::Tagged(t) if t.tag == "If" => match t.value.as_sequence().map(Vec::as_slice) {
            Some([_, then, _]) => reference(then),
            _ => None,
        },
        _ => None,
    }
}

pub fn of_type<'a>(t: &'a Value, kind: &str) -> Vec<(&'a str, &'a Value)> {
    let resources = t["Resources"].as_mapping().expect("Resources");
    resources
        .iter()
        .filter(|(_, r)| r["Type"].as_str() == Some(kind))
        .map(|(k, r)| (k.as_str().expect("a logical id"), r))
        .collect()
}

/// `(condition, then, else)` of an `!If`.
pub fn if_parts(v: &Value) -> (&str, &Value, &Value) {
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
