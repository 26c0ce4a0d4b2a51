//! X-Ray subsegments for every AWS call a function makes, when the template's `Tracing`
//! parameter is `Active` (it sets `LIKES_XRAY=1`, read by [`crate::env`]; Lambda then records each invocation's segment
//! and runs the X-Ray daemon at `AWS_XRAY_DAEMON_ADDRESS`).
//!
//! One SDK interceptor on the client, not a wrapper at each call site: every attempt of every
//! operation (DynamoDB, SQS) becomes a subsegment of the invocation, named after the service
//! with the operation, the HTTP status and the request id, and the call carries the
//! `X-Amzn-Trace-Id` header. The parent is read per attempt from `_X_AMZN_TRACE_ID`, which the
//! Lambda runtime sets for each invocation (one invocation at a time per process). Only sampled
//! invocations are reported: X-Ray bills per trace recorded, and the sampling decision is
//! Lambda's. A report is one non-blocking UDP datagram at each end of the attempt; a failed
//! send is dropped, never an error of the call.

use std::sync::Mutex;

use aws_sdk_dynamodb::config::interceptors::{
    BeforeTransmitInterceptorContextMut, BeforeTransmitInterceptorContextRef,
    FinalizerInterceptorContextRef,
};
use aws_sdk_dynamodb::config::{ConfigBag, Intercept, RuntimeComponents};
use aws_sdk_dynamodb::error::BoxError;
use aws_smithy_runtime_api::client::orchestrator::Metadata;
use aws_smithy_types::config_bag::{Storable, StoreReplace};
use xray_lite::{AwsNamespace, Context, DaemonClient, SubsegmentContext, SubsegmentSession};

/// The interceptor: reports each AWS call attempt to the X-Ray daemon.
#[derive(Debug, Clone)]
pub struct XrayCalls {
    daemon: DaemonClient,
}

impl XrayCalls {
    /// The interceptor, if the daemon's address is known (Lambda sets
    /// `AWS_XRAY_DAEMON_ADDRESS` when tracing is on). Whether to trace at all is the
    /// function's setting (`env::FunctionEnv::xray`).
    pub fn from_env() -> Option<Self> {
        match DaemonClient::from_lambda_env() {
            Ok(daemon) => Some(Self { daemon }),
            Err(e) => {
                tracing::warn!(error = %e, "X-Ray tracing is on but the daemon is not reachable; not tracing");
                None
            }
        }
    }
}

type Session = SubsegmentSession<DaemonClient, AwsNamespace>;

/// The attempt's open subsegment, kept in the operation's config bag between the hooks.
#[derive(Debug)]
struct Attempt(Mutex<Option<Session>>);

impl Storable for Attempt {
    type Storer = StoreReplace<Self>;
}

/// The invocation's trace, if Lambda sampled it.
fn sampled_context(daemon: &DaemonClient) -> Option<SubsegmentContext<DaemonClient>> {
    let header = std::env::var("_X_AMZN_TRACE_ID").ok()?;
    if !header.split(';').any(|part| part.trim() == "Sampled=1") {
        return None;
    }
    SubsegmentContext::from_lambda_env(daemon.clone()).ok()
}

impl Intercept for XrayCalls {
    fn name(&self) -> &'static str {
        "XrayCalls"
    }

    fn read_before_attempt(
        &self,
        _context: &BeforeTransmitInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let Some(trace) = sampled_context(&self.daemon) else {
            return Ok(());
        };
        let (service, operation) = match cfg.load::<Metadata>() {
            Some(m) => (m.service().to_owned(), m.name().to_owned()),
            None => ("AWS".to_owned(), "unknown".to_owned()),
        };
        let session = trace.enter_subsegment(AwsNamespace::new(service, operation));
        cfg.interceptor_state()
            .store_put(Attempt(Mutex::new(Some(session))));
        Ok(())
    }

    fn modify_before_transmit(
        &self,
        context: &mut BeforeTransmitInterceptorContextMut<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let header = cfg
            .load::<Attempt>()
            .and_then(|a| a.0.lock().ok()?.as_ref()?.x_amzn_trace_id());
        if let Some(header) = header {
            // `insert` panics on a value that is not a valid header; this one comes from the
            // environment, so a bad one only goes unsent.
            let _ = context
                .request_mut()
                .headers_mut()
                .try_insert("X-Amzn-Trace-Id", header);
        }
        Ok(())
    }

    fn read_after_attempt(
        &self,
        context: &FinalizerInterceptorContextRef<'_>,
        _components: &RuntimeComponents,
        cfg: &mut ConfigBag,
    ) -> Result<(), BoxError> {
        let session = cfg.load::<Attempt>().and_then(|a| a.0.lock().ok()?.take());
        if let Some(mut session) = session {
            let status = context.response().map(|r| r.status().as_u16());
            if let (Some(ns), Some(response)) = (session.namespace_mut(), context.response()) {
                ns.response_status(response.status().as_u16());
                let id = response
                    .headers()
                    .get("x-amzn-requestid")
                    .or_else(|| response.headers().get("x-amz-request-id"));
                if let Some(id) = id {
                    ns.request_id(id);
                }
            }
            if let SubsegmentSession::Entered { subsegment, .. } = &mut session {
                // No answer at all (a timeout, a lost connection) is a fault too: the write
                // may or may not have happened, which is what an operator looks for.
                subsegment.fault = status.is_none_or(|s| s >= 500);
                subsegment.error = status.is_some_and(|s| (400..500).contains(&s));
                subsegment.throttled = status == Some(429)
                    || context
                        .response()
                        .and_then(|r| r.headers().get("x-amzn-errortype"))
                        .is_some_and(|t| t.contains("Throttl") || t.contains("ThroughputExceeded"));
            }
            // Dropping the session ends the subsegment and sends it.
            drop(session);
        }
        Ok(())
    }
}
