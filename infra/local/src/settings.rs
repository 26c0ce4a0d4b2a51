//! Settings of the local stack, all from the environment (the README's variables table).

use likes_aws::env::{CallerLimits, EnvError, EventRules, LikerIdsSetting, Tuning};

use crate::cors::{Cors, NotAnOrigin};
use crate::jwt;

#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    #[error("{name}={value:?} is not {what}")]
    Invalid {
        name: &'static str,
        value: String,
        what: &'static str,
    },
    #[error("LIKES_ALLOWED_ORIGINS: {0}")]
    Origins(#[from] NotAnOrigin),
    #[error(transparent)]
    Tuning(#[from] EnvError),
}

#[derive(Debug, Clone)]
pub struct Settings {
    pub port: u16,
    /// The demo page's port: its origin, `http://127.0.0.1:<port>`, is always allowed.
    pub demo_port: u16,
    /// Origins whose pages may call the API (`LIKES_ALLOWED_ORIGINS`, as the template's
    /// `AllowedOrigins`), the demo page's not included.
    pub allowed_origins: Cors,
    pub endpoint: Option<String>,
    /// What the local JWT authorizer accepts, and `make token` issues.
    pub auth: jwt::Authorizer,
    /// `LIKES_AUTH=jwt`: no local authorizer; the API verifies bearer tokens itself, as behind a
    /// function URL, against a real provider's keys (`LIKES_JWT_ISSUER`, found by discovery;
    /// `LIKES_JWT_AUDIENCE`; docs/auth.md). Default `authorizer`.
    pub function_auth: bool,
    pub likes_table: String,
    pub counts_table: String,
    /// Test hook: the aggregator's first N writes fail, to exercise redelivery.
    pub fail_first_writes: usize,
    /// The erase worker's longest token lifetime (`LIKES_MAX_TOKEN_LIFETIME_SECS`).
    pub max_token_lifetime: std::time::Duration,
    /// The aggregator mapping's `MaximumRetryAttempts` instead of the template's 100: a
    /// given-up batch and its runbook rehearsed in seconds (`LIKES_LOCAL_MAX_RETRIES`).
    pub max_retries: Option<u32>,
    /// Test hook: seeded faults in the stream path (see `chaos`).
    pub chaos_seed: Option<u64>,
    /// Where the event source mapping keeps its checkpoints.
    pub state_dir: std::path::PathBuf,
    /// The API's and the aggregator's tuning, read as on Lambda.
    pub tuning: Tuning,
    /// What one caller may ask of the API (`LIKES_CALLER_LIMITS`, `LIKES_LIMIT_*`), as on
    /// Lambda: the whole local API is one execution environment.
    pub limits: CallerLimits,
    /// How "who liked" names likers (`LIKES_LIKER_IDS`, `LIKES_LIKER_ID_KEY`), as on Lambda.
    pub liker_ids: LikerIdsSetting,
    /// `LIKES_REACTION_KINDS`, `LIKES_REACTION_MODE` (docs/reactions.md).
    pub reactions: likes_core::Reactions,
    /// The events function's rules (what it publishes, the suppression window), read as on
    /// Lambda; its state table and bus on the emulator.
    pub event_rules: EventRules,
    pub event_state_table: String,
    /// The pending erasures (`ERASE_REQUESTS_TABLE_NAME`, default `erase-requests`).
    pub erase_requests_table: String,
    /// Named requests' markers (`MARKERS_TABLE_NAME`, default `markers`).
    pub markers_table: String,
    pub event_bus: String,
    /// The hostile lab in front of the emulator (`infra/lab`): each function's role enforced
    /// (`LIKES_LAB_IAM`, default `on`), eventually consistent reads trailing by
    /// `LIKES_LAB_READ_LAG_MS` (default 0).
    pub lab_iam: bool,
    pub read_lag: std::time::Duration,
    /// The demo's authors' policies, recorded at start (`LIKES_DEMO_POLICIES`, default `on`):
    /// a post whose count and likers are its author's, and one closed to likes.
    pub demo_policies: bool,
    /// The count tier the API's environments share (`LIKES_SHARED_COUNTS_URL`, e.g.
    /// `redis://127.0.0.1:6379` of a local `redis-server`); none by default.
    pub shared_counts_url: Option<String>,
    /// Two regions' home gate (`LIKES_HOME_CLAIM`, the token claim naming a user's home): the
    /// API serves only the homes opened with `likes-admin homes`; none by default (every
    /// caller served).
    pub home_claim: Option<String>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// A setting that is absent unless given, [`parsed`] when it is.
fn optional<T: std::str::FromStr + Default>(
    name: &'static str,
    what: &'static str,
) -> Result<Option<T>, SettingsError> {
    var(name)
        .map(|_| parsed(name, what, T::default()))
        .transpose()
}

fn parsed<T: std::str::FromStr>(
    name: &'static str,
    what: &'static str,
    default: T,
) -> Result<T, SettingsError> {
    match var(name) {
        None => Ok(default),
        Some(value) => value
            .parse()
            .map_err(|_| SettingsError::Invalid { name, value, what }),
    }
}

impl Settings {
    pub fn from_env() -> Result<Self, SettingsError> {
        Ok(Self {
            port: parsed("LIKES_PORT", "a port number", 3000)?,
            demo_port: parsed("LIKES_DEMO_PORT", "a port number", 3001)?,
            allowed_origins: Cors::parse(&var("LIKES_ALLOWED_ORIGINS").unwrap_or_default())?,
            endpoint: var("LIKES_DYNAMODB_ENDPOINT"),
            auth: jwt::Authorizer {
                secret: var("LIKES_DEV_JWT_SECRET")
                    .unwrap_or_else(|| jwt::DEFAULT_SECRET.to_owned()),
                issuer: var("LIKES_JWT_ISSUER").unwrap_or_else(|| jwt::DEFAULT_ISSUER.to_owned()),
                audience: var("LIKES_JWT_AUDIENCE")
                    .unwrap_or_else(|| jwt::DEFAULT_AUDIENCE.to_owned()),
            },
            function_auth: match var("LIKES_AUTH").as_deref() {
                None | Some("authorizer") => false,
                Some("jwt") => true,
                Some(other) => {
                    return Err(SettingsError::Invalid {
                        name: "LIKES_AUTH",
                        value: other.to_owned(),
                        what: "authorizer or jwt",
                    })
                }
            },
            likes_table: var("LIKES_TABLE_NAME").unwrap_or_else(|| "likes".to_owned()),
            counts_table: var("COUNTS_TABLE_NAME").unwrap_or_else(|| "counts".to_owned()),
            fail_first_writes: parsed("LIKES_LOCAL_FAIL_FIRST_WRITES", "a number", 0)?,
            max_token_lifetime: likes_aws::env::max_token_lifetime_from_env()?,
            max_retries: optional("LIKES_LOCAL_MAX_RETRIES", "a number")?,
            chaos_seed: optional("LIKES_LOCAL_CHAOS", "a number (a seed)")?,
            state_dir: var("LIKES_LOCAL_STATE_DIR")
                .map(std::path::PathBuf::from)
                .unwrap_or_else(|| {
                    std::path::PathBuf::from(concat!(
                        env!("CARGO_MANIFEST_DIR"),
                        "/../../.likes-local"
                    ))
                }),
            tuning: Tuning::from_env()?,
            limits: CallerLimits::from_env()?,
            liker_ids: LikerIdsSetting::from_env()?,
            reactions: likes_aws::env::reactions_from_env()?,
            event_rules: EventRules::from_env()?,
            event_state_table: var("EVENT_STATE_TABLE_NAME")
                .unwrap_or_else(|| "event-state".to_owned()),
            erase_requests_table: var("ERASE_REQUESTS_TABLE_NAME")
                .unwrap_or_else(|| "erase-requests".to_owned()),
            markers_table: var("MARKERS_TABLE_NAME").unwrap_or_else(|| "markers".to_owned()),
            event_bus: var("EVENT_BUS_NAME").unwrap_or_else(|| "likes".to_owned()),
            lab_iam: match var("LIKES_LAB_IAM").as_deref() {
                None | Some("on") => true,
                Some("off") => false,
                Some(other) => {
                    return Err(SettingsError::Invalid {
                        name: "LIKES_LAB_IAM",
                        value: other.to_owned(),
                        what: "on or off",
                    })
                }
            },
            read_lag: std::time::Duration::from_millis(parsed(
                "LIKES_LAB_READ_LAG_MS",
                "a number of milliseconds",
                0,
            )?),
            demo_policies: match var("LIKES_DEMO_POLICIES").as_deref() {
                None | Some("on") => true,
                Some("off") => false,
                Some(other) => {
                    return Err(SettingsError::Invalid {
                        name: "LIKES_DEMO_POLICIES",
                        value: other.to_owned(),
                        what: "on or off",
                    })
                }
            },
            shared_counts_url: var("LIKES_SHARED_COUNTS_URL"),
            home_claim: var("LIKES_HOME_CLAIM"),
        })
    }
}
