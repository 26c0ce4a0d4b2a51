//! The event source mapping's settings, read from `template.yaml` (built into the binary), so
//! that the local mapping plays the one that is deployed.

use std::time::Duration;

use serde_yaml::Value;

const TEMPLATE: &str = include_str!("../../../../template.yaml");

#[derive(Debug, Clone, PartialEq)]
pub struct MappingConfig {
    /// Most records per invocation (`BatchSize`).
    pub batch_size: usize,
    /// Retries of a failing batch before it is given up (`MaximumRetryAttempts`).
    pub max_retries: u32,
    /// Records older than this are given up (`MaximumRecordAgeInSeconds`).
    pub max_record_age: Duration,
    /// A function error splits the batch in two (`BisectBatchOnFunctionError`).
    pub bisect: bool,
    /// The function's timeout (`Timeout` of the aggregator, or the template's global one).
    pub timeout: Duration,
    /// Only these event names reach the function (`FilterCriteria`).
    pub event_names: Vec<String>,
    /// First wait before retrying a failed batch; doubles up to `max_backoff`.
    pub backoff: Duration,
    pub max_backoff: Duration,
    /// The function's logical id, as the failure records name it (`functionArn`).
    pub function: String,
}

#[derive(Debug, thiserror::Error)]
#[error("template.yaml: {0}")]
pub struct ConfigError(String);

fn get<'a>(v: &'a Value, path: &[&str]) -> Option<&'a Value> {
    path.iter().try_fold(v, |v, k| v.get(*k))
}

/// The aggregator's mapping and function in template.yaml.
pub const AGGREGATOR: (&str, &str) = ("LikesStreamMapping", "CountAggregatorFunction");
/// The events function's.
pub const EVENTS: (&str, &str) = ("LikeEventsStreamMapping", "LikeEventsFunction");

/// A number, or a `!Ref` to a parameter: its default (what a deployment gets unless told).
fn number(t: &Value, v: &Value) -> Option<u64> {
    match v {
        Value::Tagged(tagged) if tagged.tag == "!Ref" => {
            let name = tagged.value.as_str()?;
            get(t, &["Parameters", name, "Default"]).and_then(Value::as_u64)
        }
        other => other.as_u64(),
    }
}

impl MappingConfig {
    /// The settings of `LikesStreamMapping` and `CountAggregatorFunction` in template.yaml.
    pub fn from_template() -> Result<Self, ConfigError> {
        Self::parse(TEMPLATE)
    }

    /// The settings of the mapping and function `(mapping, function)` in template.yaml.
    pub fn of(names: (&str, &str)) -> Result<Self, ConfigError> {
        Self::parse_of(TEMPLATE, names)
    }

    pub fn parse(template: &str) -> Result<Self, ConfigError> {
        Self::parse_of(template, AGGREGATOR)
    }

    pub fn parse_of(
        template: &str,
        (mapping, function): (&str, &str),
    ) -> Result<Self, ConfigError> {
        let t: Value = serde_yaml::from_str(template).map_err(|e| ConfigError(e.to_string()))?;
        let m = get(&t, &["Resources", mapping, "Properties"])
            .ok_or_else(|| ConfigError(format!("no {mapping}")))?;
        let int = |k: &str| {
            m.get(k)
                .and_then(|v| number(&t, v))
                .ok_or_else(|| ConfigError(format!("{mapping}.{k} is not a number")))
        };
        if int("ParallelizationFactor")? != 1 {
            return Err(ConfigError(format!(
                "{mapping}: ParallelizationFactor must be 1: its function needs one batch per shard at a time"
            )));
        }
        let timeout = get(&t, &["Resources", function, "Properties", "Timeout"])
            .or_else(|| get(&t, &["Globals", "Function", "Timeout"]))
            .and_then(Value::as_u64)
            .ok_or_else(|| ConfigError(format!("no Timeout for {function}")))?;
        let pattern: serde_json::Value = get(m, &["FilterCriteria", "Filters"])
            .and_then(|f| f.get(0))
            .and_then(|f| f.get("Pattern"))
            .and_then(Value::as_str)
            .and_then(|p| serde_json::from_str(p).ok())
            .ok_or_else(|| ConfigError("no FilterCriteria pattern".into()))?;
        let event_names = pattern["eventName"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            })
            .ok_or_else(|| ConfigError("the filter pattern has no eventName list".into()))?;
        Ok(Self {
            batch_size: int("BatchSize")? as usize,
            max_retries: int("MaximumRetryAttempts")? as u32,
            max_record_age: Duration::from_secs(int("MaximumRecordAgeInSeconds")?),
            bisect: m
                .get("BisectBatchOnFunctionError")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            timeout: Duration::from_secs(timeout),
            event_names,
            backoff: Duration::from_millis(100),
            max_backoff: Duration::from_secs(5),
            function: function.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_deployed_mapping() {
        let c = MappingConfig::from_template().unwrap();
        assert_eq!(c.batch_size, 1000);
        assert_eq!(c.max_retries, 100);
        assert_eq!(c.max_record_age, Duration::from_secs(86_400));
        assert!(c.bisect);
        assert_eq!(c.timeout, Duration::from_secs(60));
        assert_eq!(c.event_names, ["INSERT", "REMOVE"]);
    }

    #[test]
    fn reads_the_events_mapping_its_record_age_from_the_windows_default() {
        let c = MappingConfig::of(EVENTS).unwrap();
        assert_eq!(c.batch_size, 1000);
        assert_eq!(c.max_record_age, Duration::from_secs(86_400));
        assert!(c.bisect);
        assert_eq!(c.timeout, Duration::from_secs(60));
        assert_eq!(c.event_names, ["INSERT", "REMOVE"]);
        let broken = TEMPLATE.replace(
            "Default: 86400\n    MinValue: 60",
            "Default: 3600\n    MinValue: 60",
        );
        let c = MappingConfig::parse_of(&broken, EVENTS).unwrap();
        assert_eq!(c.max_record_age, Duration::from_secs(3600));
    }

    #[test]
    fn refuses_a_mapping_that_breaks_the_aggregator() {
        let broken = TEMPLATE.replace("ParallelizationFactor: 1", "ParallelizationFactor: 2");
        assert!(MappingConfig::parse(&broken).is_err());
    }
}
