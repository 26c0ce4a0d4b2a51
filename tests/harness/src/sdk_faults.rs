//! Faults injected into the API's DynamoDB client through SDK interceptors, never through the
//! production code: a throttled write (refused, nothing applied), a write whose answer is lost
//! after DynamoDB applied it, a 5xx without an error code, a full item collection. A hook can
//! run another request (a second device of the same user) between a faulted attempt and what
//! the caller does next.

use std::sync::{Arc, Mutex};

use aws_sdk_dynamodb::config::interceptors::{
    BeforeDeserializationInterceptorContextMut, BeforeTransmitInterceptorContextMut,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::body::SdkBody;
use aws_smithy_types::config_bag::{Storable, StoreReplace};

/// What happens to one call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// DynamoDB refuses it with `ThrottlingException`; nothing is applied.
    Throttle,
    /// DynamoDB applies it; its answer is lost on the way back.
    LoseAnswer,
    /// DynamoDB applies it and answers a 500 with no error code.
    BareServerError,
    /// DynamoDB refuses it with `ItemCollectionSizeLimitExceededException`.
    CollectionFull,
}

impl Storable for Fault {
    type Storer = StoreReplace<Self>;
}

/// Decides each call's fault: `(operation name, call number of that operation) -> fault`.
pub type Plan = Box<dyn FnMut(&str, usize) -> Option<Fault> + Send>;
/// Runs after a faulted attempt's answer arrived, before the caller sees it.
pub type Hook = Box<dyn FnMut(&str, Fault) + Send>;

struct State {
    plan: Plan,
    hook: Option<Hook>,
    calls: std::collections::HashMap<String, usize>,
    injected: std::collections::BTreeMap<String, usize>,
}

#[derive(Clone)]
pub struct Faults {
    state: Arc<Mutex<State>>,
}

impl std::fmt::Debug for Faults {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Faults")
    }
}

impl Faults {
    pub fn new(plan: Plan) -> Self {
        Self {
            state: Arc::new(Mutex::new(State {
                plan,
                hook: None,
                calls: Default::default(),
                injected: Default::default(),
            })),
        }
    }

    /// The first call of `op` gets `fault`; every other call is clean.
    pub fn first(op: &'static str, fault: Fault) -> Self {
        Self::new(Box::new(move |name, n| {
            (name == op && n == 0).then_some(fault)
        }))
    }

    pub fn with_hook(self, hook: Hook) -> Self {
        self.state.lock().expect("faults lock").hook = Some(hook);
        self
    }

    /// Faults injected so far, by `"{operation} {fault:?}"`.
    pub fn injected(&self) -> std::collections::BTreeMap<String, usize> {
        self.state.lock().expect("faults lock").injected.clone()
    }
}

fn op_name(cfg: &ConfigBag) -> String {
    cfg.load::<Metadata>()
        .map(|m| m.name().to_owned())
        .unwrap_or_default()
}

fn error_body(code: &str) -> SdkBody {
    SdkBody::from(format!(
        r#"{{"__type":"com.amazonaws.dynamodb.v20120810#{code}","message":"injected"}}"#
    ))
}

impl Intercept for Faults {
    fn name(&self) -> &'static str {
        "Faults"
    }

    fn modify_before_signing(
        &self,
        ctx: &mut BeforeTransmitInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let op = op_name(cfg);
        let fault = {
            let mut st = self.state.lock().map_err(|_| "faults lock")?;
            let n = st.calls.entry(op.clone()).or_default();
            let call = *n;
            *n += 1;
            let fault = (st.plan)(&op, call);
            if let Some(f) = fault {
                *st.injected.entry(format!("{op} {f:?}")).or_default() += 1;
            }
            fault
        };
        let Some(fault) = fault else { return Ok(()) };
        cfg.interceptor_state().store_put(fault);
        if matches!(fault, Fault::Throttle | Fault::CollectionFull) {
            // Refused: point the request at a table that does not exist, so that the emulator
            // applies nothing, and answer the refusal below.
            let req = ctx.request_mut();
            let body = req.body().bytes().map(|b| b.to_vec()).unwrap_or_default();
            let text = String::from_utf8_lossy(&body).replace(
                "\"TableName\":\"",
                "\"TableName\":\"refused-by-fault-injection-",
            );
            let len = text.len();
            *req.body_mut() = SdkBody::from(text);
            req.headers_mut().insert("content-length", len.to_string());
        }
        Ok(())
    }

    fn modify_before_deserialization(
        &self,
        ctx: &mut BeforeDeserializationInterceptorContextMut<'_>,
        _rc: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(fault) = cfg.load::<Fault>().copied() else {
            return Ok(());
        };
        let op = op_name(cfg);
        if let Some(hook) = self.state.lock().map_err(|_| "faults lock")?.hook.as_mut() {
            hook(&op, fault);
        }
        let resp = ctx.response_mut();
        // The error type header, where the emulator sets one, wins over the body's `__type`.
        resp.headers_mut().remove("x-amzn-errortype");
        match fault {
            Fault::LoseAnswer => return Err("injected: the answer was lost".into()),
            Fault::Throttle => {
                *resp.status_mut() = 400u16.try_into()?;
                *resp.body_mut() = error_body("ThrottlingException");
            }
            Fault::CollectionFull => {
                *resp.status_mut() = 400u16.try_into()?;
                *resp.body_mut() = error_body("ItemCollectionSizeLimitExceededException");
            }
            Fault::BareServerError => {
                *resp.status_mut() = 500u16.try_into()?;
                *resp.body_mut() = SdkBody::from("{}");
            }
        }
        Ok(())
    }
}

/// Writes and the consistent reads (`GetItem`, `Query`) fail at random: 10 % throttled, 10 %
/// answer lost after the call, 3 % a bare 500.
pub fn random_faults(seed: u64) -> Faults {
    random_faults_on(seed, true)
}

/// As [`random_faults`], the reads left alone when `reads` is false.
pub fn random_faults_on(seed: u64, reads: bool) -> Faults {
    let rng = Mutex::new(likes_sim::rng::SplitMix(seed));
    Faults::new(Box::new(move |op, _| {
        // The writes, and the consistent reads: a read that settles a lost answer, a strong
        // `GET …/like`, single mode's guard and items fail as writes do.
        let struck = match op {
            "PutItem" | "DeleteItem" | "TransactWriteItems" => true,
            "GetItem" | "Query" => reads,
            _ => false,
        };
        if !struck {
            return None;
        }
        match rng.lock().ok()?.below(100) {
            0..=9 => Some(Fault::Throttle),
            10..=19 => Some(Fault::LoseAnswer),
            20..=22 => Some(Fault::BareServerError),
            _ => None,
        }
    }))
}
