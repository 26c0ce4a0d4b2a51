//! Settings the cost model takes from template.yaml, which owns them: the model prices the
//! stack a deployment gets, not a copy of its numbers.

use serde_yaml::Value;

const TEMPLATE: &str = include_str!("../../../template.yaml");

/// The default of the template parameter `name`, as a number.
pub fn parameter_default(name: &str) -> f64 {
    let template: Value = serde_yaml::from_str(TEMPLATE).expect("template.yaml is YAML");
    let default = &template["Parameters"][name]["Default"];
    default
        .as_f64()
        .or_else(|| default.as_str().and_then(|s| s.parse().ok()))
        .unwrap_or_else(|| panic!("template.yaml has no numeric default for {name}"))
}

/// Target tracking keeps consumed capacity at this share of provisioned capacity, so
/// provisioned = load / this (`ProvisionedTargetUtilization`, in percent).
pub fn target_utilisation() -> f64 {
    parameter_default("ProvisionedTargetUtilization") / 100.0
}
