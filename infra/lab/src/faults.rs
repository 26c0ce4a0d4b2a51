//! Faults of the network between a client and AWS, struck at chosen calls: what the SDK's
//! interceptors cannot show, because the call did reach the service.
//!
//! - [`Fault::Reset`]: the call is applied, then the connection is reset (a peer that crashed).
//! - [`Fault::Close`]: the call is applied, then the connection is closed without an answer (a
//!   peer or a middlebox that gave up: the client reads an incomplete message).
//! - [`Fault::Timeout`]: the call is applied, and no answer comes: the client's attempt
//!   timeout fires.
//! - [`Fault::ServerError`]: the call is applied, and the answer is a 500 (an answer lost inside
//!   the service).
//! - [`Fault::Hold`]: the call is held, unanswered, and applied `after` this long, whatever the
//!   client did meanwhile (gave up, retried, sent another call): a late write.
//! - [`Fault::Refuse`]: the connection is reset before the call is applied.
//! - [`Fault::Delay`]: the call is applied `by` this long later and answered then (a slow
//!   network): what another request sees meanwhile.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::call::Call;
use crate::policy::glob;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    Reset,
    Close,
    Timeout,
    ServerError,
    Hold { after: Duration },
    Refuse,
    Delay { by: Duration },
}

impl Fault {
    /// Whether the call reaches the service (now, or later for a held one).
    pub fn applies(&self) -> bool {
        !matches!(self, Fault::Refuse)
    }

    /// A fault by name: `reset`, `close`, `timeout`, `server_error`, `refuse`, `hold:<ms>`,
    /// `delay:<ms>` (`make dev`'s `POST /_local/lab/faults`).
    pub fn parse(raw: &str) -> Option<Fault> {
        let ms = |v: &str| v.parse().ok().map(Duration::from_millis);
        Some(match raw.split_once(':') {
            None => match raw {
                "reset" => Fault::Reset,
                "close" => Fault::Close,
                "timeout" => Fault::Timeout,
                "server_error" => Fault::ServerError,
                "refuse" => Fault::Refuse,
                _ => return None,
            },
            Some(("hold", v)) => Fault::Hold { after: ms(v)? },
            Some(("delay", v)) => Fault::Delay { by: ms(v)? },
            Some(_) => return None,
        })
    }
}

/// Which calls a fault strikes: all of `operation` by `identity` (any, if `None`) on a table
/// matching `table` (any, if `None`), after the first `skip` of them, `times` times.
#[derive(Debug, Clone)]
pub struct FaultRule {
    pub identity: Option<String>,
    pub operation: String,
    pub table: Option<String>,
    pub skip: usize,
    pub times: usize,
    pub fault: Fault,
}

impl FaultRule {
    /// `fault` on the next call of `operation` on `table`.
    pub fn once(operation: &str, table: &str, fault: Fault) -> Self {
        FaultRule {
            identity: None,
            operation: operation.to_owned(),
            table: Some(table.to_owned()),
            skip: 0,
            times: 1,
            fault,
        }
    }

    fn matches(&self, call: &Call) -> bool {
        call.operation == self.operation
            && self.identity.as_ref().is_none_or(|i| *i == call.identity)
            && self
                .table
                .as_ref()
                .is_none_or(|t| call.tables().iter().any(|name| glob(t, name)))
    }
}

struct Armed {
    rule: FaultRule,
    seen: usize,
    struck: Arc<AtomicUsize>,
}

#[derive(Default)]
pub(crate) struct Faults(Mutex<Vec<Armed>>);

impl Faults {
    pub(crate) fn add(&self, rule: FaultRule) -> Arc<AtomicUsize> {
        let struck = Arc::new(AtomicUsize::new(0));
        if let Ok(mut armed) = self.0.lock() {
            armed.push(Armed {
                rule,
                seen: 0,
                struck: Arc::clone(&struck),
            });
        }
        struck
    }

    /// Disarms every rule.
    pub(crate) fn clear(&self) {
        if let Ok(mut armed) = self.0.lock() {
            armed.clear();
        }
    }

    /// The fault that strikes `call`, if any (the first armed rule that matches and has one
    /// left).
    pub(crate) fn strike(&self, call: &Call) -> Option<Fault> {
        let mut armed = self.0.lock().ok()?;
        for a in armed.iter_mut().filter(|a| a.rule.matches(call)) {
            a.seen += 1;
            if a.seen > a.rule.skip && a.struck.load(Ordering::SeqCst) < a.rule.times {
                a.struck.fetch_add(1, Ordering::SeqCst);
                return Some(a.rule.fault.clone());
            }
        }
        None
    }
}
