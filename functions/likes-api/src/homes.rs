//! The home gate, in two regions (`likes_core::homes`; docs/regions.md): a caller whose
//! token's home claim names a home this region does not serve is refused, every route alike
//! (`421 wrong_region`, nothing read or written), so that a user's requests are answered by
//! one region at a time. Each execution environment reads the served set at most once per
//! `HOMES_TTL`: a home closed here is refused everywhere here within it.

use std::collections::BTreeSet;
use std::sync::Arc;

use likes_core::homes::{Home, Homes, HOMES_TTL};
// tokio's clock: a test can pause and advance it.
use tokio::time::Instant;

use crate::ttl::Ttl;
use crate::{ApiError, Failure};

pub struct HomeGate {
    claim: String,
    store: Arc<dyn Homes>,
    served: Ttl<(), BTreeSet<Home>>,
}

impl HomeGate {
    /// Homes named by the tokens' `claim`, served as `store` records.
    pub fn new(claim: impl Into<String>, store: Arc<dyn Homes>) -> Self {
        Self {
            claim: claim.into(),
            store,
            served: Ttl::new(HOMES_TTL, 1),
        }
    }

    /// The token claim naming a caller's home.
    pub fn claim(&self) -> &str {
        &self.claim
    }

    /// Admits a caller whose token's home claim is `home`, if this region serves it.
    pub(crate) async fn admit(&self, home: Option<&str>) -> Result<(), Failure> {
        let Some(home) = home else {
            return Err(ApiError::wrong_region(format!(
                "the token has no {} claim (a string): this region serves callers by their home",
                self.claim
            ))
            .into());
        };
        let served = self.served().await?;
        if served.iter().any(|h| h.as_str() == home) {
            return Ok(());
        }
        let shown: String = home.chars().take(40).collect();
        Err(ApiError::wrong_region(format!(
            "this region does not serve the home {shown:?}: call your home region's address"
        ))
        .into())
    }

    async fn served(&self) -> Result<BTreeSet<Home>, Failure> {
        if let Some(set) = self.served.get(&()) {
            return Ok(set);
        }
        let asked = Instant::now();
        let set = self.store.served().await?;
        self.served.put_at((), set.clone(), asked);
        Ok(set)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use likes_core::store::memory::MemoryHomes;

    fn status(r: Result<(), Failure>) -> u16 {
        match r {
            Ok(()) => 200,
            Err(Failure::Api(e)) => e.status,
            Err(Failure::Store(e)) => panic!("store error {e}"),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn a_home_is_served_here_only_once_opened_and_until_closed() {
        let store = Arc::new(MemoryHomes::default());
        let gate = HomeGate::new("home", store.clone());
        let eu = Home::parse("eu").unwrap();
        // Nothing is served until an operator opens a home.
        assert_eq!(status(gate.admit(Some("eu")).await), 421);
        store.set(&eu, true).await.unwrap();
        // Kept for the TTL, then read again.
        assert_eq!(status(gate.admit(Some("eu")).await), 421);
        tokio::time::advance(HOMES_TTL).await;
        assert_eq!(status(gate.admit(Some("eu")).await), 200);
        assert_eq!(status(gate.admit(Some("us")).await), 421);
        // No claim: refused, whatever is served.
        assert_eq!(status(gate.admit(None).await), 421);
        store.set(&eu, false).await.unwrap();
        assert_eq!(status(gate.admit(Some("eu")).await), 200);
        tokio::time::advance(HOMES_TTL).await;
        assert_eq!(status(gate.admit(Some("eu")).await), 421);
    }
}
