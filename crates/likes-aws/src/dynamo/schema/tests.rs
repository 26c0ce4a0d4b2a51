use super::*;
use serde_yaml::Value;

fn template() -> Value {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../template.yaml");
    let text = std::fs::read_to_string(path).expect("template.yaml is readable");
    serde_yaml::from_str(&text).expect("template.yaml parses")
}

fn s(v: &Value) -> &str {
    v.as_str()
        .unwrap_or_else(|| panic!("expected a string, got {v:?}"))
}

fn key_of(schema: &Value) -> Key {
    let mut hash = None;
    let mut range = None;
    for el in schema.as_sequence().expect("KeySchema is a list") {
        let name: &'static str = Box::leak(s(&el["AttributeName"]).to_owned().into_boxed_str());
        match s(&el["KeyType"]) {
            "HASH" => hash = Some(name),
            "RANGE" => range = Some(name),
            other => panic!("unknown KeyType {other}"),
        }
    }
    Key {
        hash: hash.expect("a HASH key"),
        range,
    }
}

/// The deployed schema of a property: an `!If [AllReactionIndexes, full, upgrade]` is the
/// `full` branch (the other is a stack's first step of the upgrade to reactions; checked by
/// `the_upgrade_step_adds_the_erase_index_first`).
fn full(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) if t.tag == "!If" && t.value[0].as_str() == Some("AllReactionIndexes") => {
            &t.value[1]
        }
        other => other,
    }
}

/// The upgrade step's branch of an `!If [AllReactionIndexes, …]` property.
fn upgrade(v: &Value) -> &Value {
    match v {
        Value::Tagged(t) if t.tag == "!If" => &t.value[2],
        other => panic!("not an !If: {other:?}"),
    }
}

fn names(seq: &Value, field: &str) -> Vec<String> {
    seq.as_sequence()
        .expect("a list")
        .iter()
        .map(|i| s(&i[field]).to_owned())
        .collect()
}

fn indexes(props: &Value, field: &str) -> Vec<(String, Key, String)> {
    full(&props[field])
        .as_sequence()
        .map(|seq| {
            seq.iter()
                .map(|i| {
                    (
                        s(&i["IndexName"]).to_owned(),
                        key_of(&i["KeySchema"]),
                        s(&i["Projection"]["ProjectionType"]).to_owned(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

fn check(def: &TableDef) {
    let t = template();
    let res = &t["Resources"][def.logical_id];
    assert_eq!(
        s(&res["Type"]),
        "AWS::DynamoDB::Table",
        "{}",
        def.logical_id
    );
    let props = &res["Properties"];
    // On demand, as `create_table` makes it — or, in the template, on demand unless the
    // deployment chose provisioned capacity (`!If [Provisioned, PROVISIONED, …]`).
    let billing = match &props["BillingMode"] {
        Value::Tagged(t) if t.tag == "!If" => t.value[2].clone(),
        other => other.clone(),
    };
    assert_eq!(s(&billing), "PAY_PER_REQUEST", "{}", def.logical_id);

    let mut attrs: Vec<(String, String)> = full(&props["AttributeDefinitions"])
        .as_sequence()
        .expect("AttributeDefinitions")
        .iter()
        .map(|a| {
            (
                s(&a["AttributeName"]).to_owned(),
                s(&a["AttributeType"]).to_owned(),
            )
        })
        .collect();
    let mut want: Vec<(String, String)> = def
        .attributes
        .iter()
        .map(|(n, t)| ((*n).to_owned(), format!("{t:?}")))
        .collect();
    attrs.sort();
    want.sort();
    assert_eq!(attrs, want, "{} attributes", def.logical_id);

    assert_eq!(
        key_of(&props["KeySchema"]),
        def.key,
        "{} key",
        def.logical_id
    );
    let want_idx = |list: &[Index]| -> Vec<(String, Key, String)> {
        list.iter()
            .map(|i| (i.name.to_owned(), i.key, i.projection.to_owned()))
            .collect()
    };
    assert_eq!(
        indexes(props, "LocalSecondaryIndexes"),
        want_idx(def.local_indexes)
    );
    assert_eq!(
        indexes(props, "GlobalSecondaryIndexes"),
        want_idx(def.global_indexes)
    );
    let view = props["StreamSpecification"]["StreamViewType"].as_str();
    assert_eq!(view, def.stream_view, "{} stream", def.logical_id);
    let ttl = &props["TimeToLiveSpecification"];
    let ttl = ttl["Enabled"]
        .as_bool()
        .filter(|on| *on)
        .and(ttl["AttributeName"].as_str());
    assert_eq!(ttl, def.ttl_attribute, "{} TTL", def.logical_id);
}

#[test]
fn template_matches_schema() {
    check(&LIKES);
    check(&COUNTS);
    check(&EVENT_STATE);
    check(&ERASE_REQUESTS);
    check(&MARKERS);
}

/// A stack from before reactions upgrades in two deploys (CloudFormation adds one global index
/// per update): the first step's branch has the erase's index and not `by_kind`, and defines
/// only the attributes its keys use (DynamoDB refuses others).
#[test]
fn the_upgrade_step_adds_the_erase_index_first() {
    let t = template();
    let props = &t["Resources"]["LikesTable"]["Properties"];
    let gsis = &props["GlobalSecondaryIndexes"];
    assert_eq!(
        names(full(gsis), "IndexName"),
        ["by_user", "by_kind", "by_reactor"]
    );
    assert_eq!(names(upgrade(gsis), "IndexName"), ["by_user", "by_reactor"]);
    let attrs = &props["AttributeDefinitions"];
    let mut want = names(full(attrs), "AttributeName");
    want.retain(|a| a != likes::KIND_KEY);
    assert_eq!(names(upgrade(attrs), "AttributeName"), want);
}
