//! Each identity's policy, read from `template.yaml` as IAM would hold it: the statements of a
//! function's `Policies` (its execution role) and of the operators' managed policy
//! (`OperatorPolicy`), with every `!GetAtt X.Arn`, `!Sub "${X.Arn}/…"` and `!Ref X` resolved to
//! the local stack's names, and every `!If` by the conditions the lab is told hold. A template
//! construct this reading does not know (a policy template, a statement's `Condition`,
//! `NotAction`, a condition it was not told) is an error, never a silent allow.
//!
//! Evaluation is IAM's for identity policies: an explicit `Deny` wins, then any `Allow` whose
//! action and resource both match, else the request is denied. Actions match without regard to
//! case, resources exactly; both take `*` and `?`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_yaml::Value;

/// The identity that may do anything: the person at the keyboard, and the tests' scaffolding
/// (tables created, items checked). `likes_aws::sdk::emulator`'s access key.
pub const ADMIN: &str = "local";
/// The operators' policy: what `likes-admin` may do on a deployed stack.
pub const OPERATOR: &str = "OperatorPolicy";

#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("reading {0}: {1}")]
    Read(String, String),
    #[error("template.yaml: {0}")]
    Template(String),
}

/// What the template's logical ids (and parameters) are called locally: a table's, queue's or
/// bus's name (a pattern with `*` where the tests name theirs uniquely: `likes-*`); and which of
/// the template's conditions hold for the stack the lab stands for (`OwnsTables`: one region).
#[derive(Debug, Clone, Default)]
pub struct Names {
    names: BTreeMap<String, String>,
    conditions: BTreeMap<String, bool>,
}

impl Names {
    /// A one-region stack's (`RegionRole=single`): it owns its Likes and Markers tables. The
    /// names are then given with [`Names::with`].
    pub fn one_region() -> Self {
        Self::default().when("OwnsTables", true)
    }

    pub fn with(mut self, logical_id: &str, name: &str) -> Self {
        self.names.insert(logical_id.to_owned(), name.to_owned());
        self
    }

    /// The template's condition `condition` holds (or not) here.
    pub fn when(mut self, condition: &str, holds: bool) -> Self {
        self.conditions.insert(condition.to_owned(), holds);
        self
    }

    pub fn without(mut self, logical_id: &str) -> Self {
        self.names.remove(logical_id);
        self
    }

    fn name(&self, id: &str) -> Result<String, String> {
        self.names
            .get(id)
            .cloned()
            .ok_or_else(|| format!("no local name for {id} (give the lab one)"))
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Statement {
    pub sid: String,
    pub allow: bool,
    pub actions: Vec<String>,
    pub resources: Vec<String>,
}

/// Every identity's statements.
#[derive(Debug, Clone, Default)]
pub struct Policies(pub BTreeMap<String, Vec<Statement>>);

/// What IAM answers, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Allowed by statement `sid`, through its resource pattern `resource`.
    Allowed {
        sid: String,
        resource: String,
    },
    Denied {
        why: String,
    },
}

impl Policies {
    /// The policies in `template` (the file), with `names` for the resources they name.
    pub fn from_template(template: &Path, names: &Names) -> Result<Self, PolicyError> {
        let text = std::fs::read_to_string(template)
            .map_err(|e| PolicyError::Read(template.display().to_string(), e.to_string()))?;
        let t: Value = serde_yaml::from_str(&text)
            .map_err(|e| PolicyError::Read(template.display().to_string(), e.to_string()))?;
        let resources = t["Resources"]
            .as_mapping()
            .ok_or_else(|| PolicyError::Template("no Resources".into()))?;
        let mut out = Policies::default();
        for (id, r) in resources {
            let id = id.as_str().unwrap_or_default();
            let documents: Vec<&Value> = match r["Type"].as_str() {
                Some("AWS::Serverless::Function") => match &r["Properties"]["Policies"] {
                    Value::Sequence(list) => list.iter().collect(),
                    Value::Null => Vec::new(),
                    other => vec![other],
                },
                Some("AWS::IAM::ManagedPolicy") => vec![&r["Properties"]["PolicyDocument"]],
                _ => continue,
            };
            let mut statements = Vec::new();
            for doc in documents {
                let list = doc["Statement"].as_sequence().ok_or_else(|| {
                    PolicyError::Template(format!(
                        "{id}: a policy that is not a statement list (a SAM policy template?): {doc:?}"
                    ))
                })?;
                for s in list {
                    statements.push(statement(id, s, &t, names)?);
                }
            }
            out.0.insert(id.to_owned(), statements);
        }
        Ok(out)
    }

    /// Whether `identity` may do `action` (`service:Name`) on `resource` (an ARN, or `*`).
    pub fn decide(&self, identity: &str, action: &str, resource: &str) -> Decision {
        if identity == ADMIN {
            return Decision::Allowed {
                sid: "admin".into(),
                resource: "*".into(),
            };
        }
        let Some(statements) = self.0.get(identity) else {
            return Decision::Denied {
                why: format!(
                    "no identity {identity:?} in template.yaml (known: {})",
                    self.0.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            };
        };
        let matching = |s: &&Statement| {
            s.actions
                .iter()
                .any(|a| glob(&a.to_ascii_lowercase(), &action.to_ascii_lowercase()))
                && s.resources.iter().any(|r| glob(r, resource))
        };
        if let Some(s) = statements.iter().filter(|s| !s.allow).find(matching) {
            return Decision::Denied {
                why: format!("explicitly denied by statement {}", s.sid),
            };
        }
        match statements.iter().filter(|s| s.allow).find(matching) {
            Some(s) => Decision::Allowed {
                sid: s.sid.clone(),
                resource: s
                    .resources
                    .iter()
                    .find(|r| glob(r, resource))
                    .cloned()
                    .unwrap_or_default(),
            },
            None => Decision::Denied {
                why: format!("no identity-based policy allows the {action} action"),
            },
        }
    }
}

fn strings(v: &Value, what: &str, id: &str) -> Result<Vec<Value>, PolicyError> {
    match v {
        Value::Sequence(list) => Ok(list.clone()),
        Value::Null => Err(PolicyError::Template(format!(
            "{id}: a statement without {what}"
        ))),
        one => Ok(vec![one.clone()]),
    }
}

fn statement(id: &str, s: &Value, t: &Value, names: &Names) -> Result<Statement, PolicyError> {
    for unsupported in ["NotAction", "NotResource", "Condition", "Principal"] {
        if !s[unsupported].is_null() {
            return Err(PolicyError::Template(format!(
                "{id}: the lab does not evaluate {unsupported} (statement {:?})",
                s["Sid"]
            )));
        }
    }
    let allow = match s["Effect"].as_str() {
        Some("Allow") => true,
        Some("Deny") => false,
        other => return Err(PolicyError::Template(format!("{id}: Effect {other:?}"))),
    };
    let actions = strings(&s["Action"], "Action", id)?
        .iter()
        .map(|a| {
            a.as_str()
                .map(str::to_owned)
                .ok_or_else(|| PolicyError::Template(format!("{id}: an action {a:?}")))
        })
        .collect::<Result<_, _>>()?;
    let resources = strings(&s["Resource"], "Resource", id)?
        .iter()
        .map(|r| resolve(r, t, names).map_err(|e| PolicyError::Template(format!("{id}: {e}"))))
        .collect::<Result<_, _>>()?;
    Ok(Statement {
        sid: s["Sid"].as_str().unwrap_or("(no Sid)").to_owned(),
        allow,
        actions,
        resources,
    })
}

/// Stands, in an ARN made from a local name pattern, for the name's `*`: any run of characters
/// but `/`. A test's unique table name has no `/`, so the table's ARN pattern matches its own
/// ARN and never its indexes' or its stream's, as on AWS (`table/likes` does not match
/// `table/likes/index/by_user`). A plain `*` would, and did: every index query was allowed.
const NAME_PART: char = '\u{E000}';

/// The ARN (with `*` for region and account) of the resource `logical_id`, by its type.
fn arn_of(logical_id: &str, t: &Value, names: &Names) -> Result<String, String> {
    let name = names.name(logical_id)?.replace('*', &NAME_PART.to_string());
    match t["Resources"][logical_id]["Type"].as_str() {
        Some("AWS::DynamoDB::Table") => Ok(format!("arn:aws:dynamodb:*:*:table/{name}")),
        Some("AWS::SQS::Queue") => Ok(format!("arn:aws:sqs:*:*:{name}")),
        Some("AWS::Events::EventBus") => Ok(format!("arn:aws:events:*:*:event-bus/{name}")),
        other => Err(format!("{logical_id}: an ARN of a {other:?}")),
    }
}

/// A `Resource` entry: a string, `!GetAtt X.Arn`, `!Sub "…${X.Arn}…${Name}…"`, `!Ref X` (a
/// name) or `!If [condition, one of these, another]`.
fn resolve(v: &Value, t: &Value, names: &Names) -> Result<String, String> {
    match v {
        Value::String(s) => Ok(s.clone()),
        Value::Tagged(tagged) => {
            let arg = &tagged.value;
            match tagged.tag.to_string().trim_start_matches('!') {
                "GetAtt" => {
                    let text = match arg {
                        Value::String(s) => s.clone(),
                        Value::Sequence(p) => p
                            .iter()
                            .filter_map(Value::as_str)
                            .collect::<Vec<_>>()
                            .join("."),
                        other => return Err(format!("!GetAtt {other:?}")),
                    };
                    match text.split_once('.') {
                        Some((id, "Arn")) => arn_of(id, t, names),
                        _ => Err(format!("!GetAtt {text}: only .Arn is known")),
                    }
                }
                "Sub" => {
                    let mut text = arg.as_str().ok_or("!Sub with variables")?.to_owned();
                    while let Some(start) = text.find("${") {
                        let end = text[start..].find('}').ok_or("an unclosed ${")? + start;
                        let var = &text[start + 2..end];
                        let value = match var.split_once('.') {
                            Some((id, "Arn")) => arn_of(id, t, names)?,
                            None => pseudo_parameter(var).map_or_else(
                                || Ok(names.name(var)?.replace('*', &NAME_PART.to_string())),
                                |v| Ok::<_, String>(v.to_owned()),
                            )?,
                            Some(_) => return Err(format!("${{{var}}}: only .Arn is known")),
                        };
                        text.replace_range(start..=end, &value);
                    }
                    Ok(text)
                }
                "Ref" => names.name(arg.as_str().ok_or("!Ref of nothing")?),
                // A resource that exists in one of the template's configurations: the branch
                // of the configuration the lab stands for.
                "If" => match arg.as_sequence().map(Vec::as_slice) {
                    Some([Value::String(condition), then, otherwise]) => {
                        match names.conditions.get(condition) {
                            Some(true) => resolve(then, t, names),
                            Some(false) => resolve(otherwise, t, names),
                            None => Err(format!(
                                "!If {condition}: the lab was not told whether it holds"
                            )),
                        }
                    }
                    _ => Err(format!("!If {arg:?}: not [condition, then, else]")),
                },
                other => Err(format!(
                    "!{other} in a Resource: the lab does not evaluate it"
                )),
            }
        }
        other => Err(format!("a Resource {other:?}")),
    }
}

/// A pseudo parameter's value in an ARN: any region and account (the tests' ARNs name theirs).
fn pseudo_parameter(var: &str) -> Option<&'static str> {
    match var {
        "AWS::Partition" => Some("aws"),
        "AWS::Region" | "AWS::AccountId" => Some("*"),
        _ => None,
    }
}

/// IAM's wildcard match: `*` any run of characters, `?` any one (and the lab's own
/// [`NAME_PART`], any run without a `/`). Over the pattern and text's positions, from the end:
/// `ok[j]` says whether the rest of the pattern matches `text[j..]`.
pub fn glob(pattern: &str, text: &str) -> bool {
    let (p, t): (Vec<char>, Vec<char>) = (pattern.chars().collect(), text.chars().collect());
    // The empty pattern matches the empty text only.
    let mut ok: Vec<bool> = (0..=t.len()).map(|j| j == t.len()).collect();
    for &c in p.iter().rev() {
        let mut next = vec![false; t.len() + 1];
        for j in (0..=t.len()).rev() {
            next[j] = match c {
                // Nothing more of the text, or one character more.
                '*' => ok[j] || (j < t.len() && next[j + 1]),
                NAME_PART => ok[j] || (j < t.len() && t[j] != '/' && next[j + 1]),
                '?' => j < t.len() && ok[j + 1],
                c => j < t.len() && t[j] == c && ok[j + 1],
            };
        }
        ok = next;
    }
    ok[0]
}

#[cfg(test)]
mod tests;
