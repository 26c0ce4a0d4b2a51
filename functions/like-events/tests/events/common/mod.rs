//! What the like-events tests share: the events' JSON Schemas (`functions/like-events/schemas/`), compiled
//! once, and the check that a published event's detail is valid under its detail-type's.

#![allow(dead_code)]

pub mod world;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::OnceLock;

use like_events::detail::DETAIL_TYPES;
use serde_json::Value;

pub fn schemas_dir() -> PathBuf {
    PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas"))
}

fn validators() -> &'static HashMap<&'static str, jsonschema::Validator> {
    static V: OnceLock<HashMap<&'static str, jsonschema::Validator>> = OnceLock::new();
    V.get_or_init(|| {
        DETAIL_TYPES
            .iter()
            .map(|(detail_type, file)| {
                let path = schemas_dir().join(file);
                let text = std::fs::read_to_string(&path)
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                let schema: Value = serde_json::from_str(&text).expect("a JSON schema");
                let v = jsonschema::options()
                    .should_validate_formats(true)
                    .build(&schema)
                    .unwrap_or_else(|e| panic!("{file}: {e}"));
                (*detail_type, v)
            })
            .collect()
    })
}

/// Whether `detail` is valid under `detail_type`'s schema; what is wrong if not.
pub fn check(detail_type: &str, detail: &Value) -> Result<(), String> {
    let v = validators()
        .get(detail_type)
        .ok_or_else(|| format!("no schema for detail-type {detail_type}"))?;
    let errors: Vec<String> = v.iter_errors(detail).map(|e| e.to_string()).collect();
    match errors.is_empty() {
        true => Ok(()),
        false => Err(format!("{detail_type} {detail}: {}", errors.join("; "))),
    }
}
