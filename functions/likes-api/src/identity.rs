//! Who is calling: the `sub` of a verified token, and nothing else — never a header, a query
//! parameter or the body. Behind API Gateway (the default) its JWT authorizer verified the
//! token and the function reads the claims it passed on; behind a Lambda function URL (the lean
//! profile, `LIKES_AUTH=jwt`) nothing did, and the function verifies the bearer token itself
//! (`likes_auth`), ignoring any claims the event may carry.

use http::header::AUTHORIZATION;
use lambda_http::request::RequestContext;
use lambda_http::{Request, RequestExt};
use likes_auth::{AuthError, Verifier};
use likes_core::UserId;

use crate::error::ApiError;

/// The verified caller.
pub struct Caller {
    pub user: UserId,
    /// The verified token's claim the caller asked for (the home claim, in two regions), if
    /// it has it as a string.
    pub claim: Option<String>,
}

/// Who verified the token.
#[derive(Default)]
pub enum Auth {
    /// API Gateway's JWT authorizer, before the request reached the function.
    #[default]
    Authorizer,
    /// This function, with the issuer's keys (cached per execution environment). Boxed: the
    /// verifier is large and the default holds nothing.
    Function(Box<Verifier>),
}

impl Auth {
    /// The caller, and the verified token's `claim` when one is asked for.
    pub async fn caller(&self, req: &Request, claim: Option<&str>) -> Result<Caller, ApiError> {
        let (sub, claim) = match self {
            Auth::Authorizer => authorizer_claims(req, claim)
                .ok_or_else(|| ApiError::unauthorized("no verified identity on the request"))?,
            Auth::Function(verifier) => verifier_claims(verifier, req, claim).await?,
        };
        let user = UserId::parse(&sub).map_err(|e| {
            ApiError::unauthorized(format!(
                "the token's sub claim is not a user id: {}",
                e.to_string().trim_start_matches("user_id ")
            ))
        })?;
        Ok(Caller { user, claim })
    }
}

/// The `sub` claim API Gateway's authorizer verified, and `claim`'s value (it passes claims on
/// as strings).
fn authorizer_claims(req: &Request, claim: Option<&str>) -> Option<(String, Option<String>)> {
    match req.request_context_ref() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            let claims = &ctx.authorizer.as_ref()?.jwt.as_ref()?.claims;
            let sub = claims.get("sub")?.clone();
            Some((sub, claim.and_then(|c| claims.get(c)).cloned()))
        }
        _ => None,
    }
}

async fn verifier_claims(
    verifier: &Verifier,
    req: &Request,
    claim: Option<&str>,
) -> Result<(String, Option<String>), ApiError> {
    let mut values = req.headers().get_all(AUTHORIZATION).iter();
    let header = match (values.next(), values.next()) {
        (None, _) => None,
        (Some(v), None) => Some(
            v.to_str()
                .map_err(|_| ApiError::unauthorized(AuthError::Malformed.to_string()))?,
        ),
        (Some(_), Some(_)) => {
            return Err(ApiError::unauthorized(
                "Authorization may be given only once",
            ))
        }
    };
    match verifier.verify_authorization(header).await {
        Ok(verified) => {
            let value = claim
                .and_then(|c| verified.claims.get(c))
                .and_then(|v| v.as_str())
                .map(str::to_owned);
            Ok((verified.sub, value))
        }
        Err(e) if e.is_unavailable() => {
            tracing::warn!(error = %e, cause = ?std::error::Error::source(&e), "the issuer's keys cannot be fetched; answering 503");
            Err(ApiError::identity_unavailable())
        }
        Err(e) => Err(ApiError::unauthorized(e.to_string())),
    }
}
