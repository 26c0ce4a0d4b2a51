//! What deploying relies on: JSON access logs; tables that cannot be deleted by accident, on
//! the free key by default; every parameter explained in docs/deploy.md; each front door whole
//! and only one; provisioned capacity scaling every table and index; and the policy lint
//! (infra/scripts/check-policies.py) refusing what it must.

use std::collections::BTreeSet;

use serde_yaml::Value;

use super::monitoring::alarmed;
use super::{if_parts, load, of_type, reference};

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
    // Nothing but the issuer is needed to find the keys (discovery); the rest are choices,
    // and only the function's: the template refuses them behind API Gateway.
    assert_eq!(reference(&env["LIKES_JWKS_URL"]), Some("JwksUrl"));
    assert_eq!(
        reference(&env["LIKES_JWT_TOKEN_TYPE"]),
        Some("JwtTokenType")
    );
    assert!(env.get("LIKES_JWKS").is_none(), "no inline keys by default");
    let params = &root["Parameters"];
    assert_eq!(params["JwksUrl"]["Default"].as_str(), Some(""));
    assert_eq!(params["JwtTokenType"]["Default"].as_str(), Some("any"));
    let rule = &root["Rules"]["FunctionUrlTokenSettings"];
    let guarded: BTreeSet<&str> = rule["Assertions"]
        .as_sequence()
        .expect("assertions")
        .iter()
        .filter_map(|a| match &a["Assert"] {
            serde_yaml::Value::Tagged(t) if t.tag == "Equals" => reference(&t.value[0]),
            _ => None,
        })
        .collect();
    assert_eq!(guarded, BTreeSet::from(["JwksUrl", "JwtTokenType"]));
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
