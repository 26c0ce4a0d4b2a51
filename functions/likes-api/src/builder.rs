//! Building an [`App`]: what it holds unless told otherwise, and each setting the Lambda entry
//! and the local stack give it.

use std::sync::Arc;

use likes_aws::env::{CallerLimits, SummaryMine};
use likes_core::erase_job::{EraseQueue, ErasureRequests};
use likes_core::{CountsRead, Reactions, ReactionsStore};

use crate::count_cache::CountCache;
use crate::identity::Auth;
use crate::liker_ids::LikerIds;
use crate::limits::Limiter;
use crate::{blocks, policies, shared_counts, suspended, App};

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    pub fn new(likes: L, counts: C) -> Self {
        Self::with_cache(likes, counts, CountCache::default())
    }

    pub fn with_cache(likes: L, counts: C, cache: CountCache) -> Self {
        Self {
            likes,
            counts,
            cache,
            erase: None,
            erasures: None,
            function_name: "likes-api".to_owned(),
            auth: Auth::Authorizer,
            limiter: Limiter::default(),
            liker_ids: LikerIds::Raw,
            reactions: Reactions::default(),
            summary_mine: SummaryMine::Strong,
            suspended: None,
            homes: None,
            policies: policies::PolicyGate::default(),
            blocks: blocks::BlockGate::default(),
            shared: None,
        }
    }

    /// Feed summaries' counts through a tier every environment shares, kept there for the
    /// count cache's feed age (so set the cache first). None with the cache off: nothing could
    /// keep what the tier gives.
    pub fn with_shared_counts(mut self, store: Arc<dyn shared_counts::SharedStore>) -> Self {
        let keep = self.cache.feed_age();
        self.shared =
            (!self.cache.ttl().is_zero()).then(|| shared_counts::SharedCounts::new(store, keep));
        self
    }

    pub fn with_blocks(mut self, store: Arc<dyn likes_core::block::Blocks>) -> Self {
        self.blocks = blocks::BlockGate::new(Some(store));
        self
    }

    /// Posts' policies from `store` (none: every post follows `defaults`).
    pub fn with_policies(
        mut self,
        store: Option<Arc<dyn likes_core::policy::Policies>>,
        defaults: likes_core::policy::Defaults,
    ) -> Self {
        self.policies = policies::PolicyGate::new(store, defaults);
        self
    }

    pub fn with_summary_mine(mut self, mine: SummaryMine) -> Self {
        self.summary_mine = mine;
        self
    }

    pub fn with_reactions(mut self, reactions: Reactions) -> Self {
        self.reactions = reactions;
        self
    }

    pub fn with_liker_ids(mut self, liker_ids: LikerIds) -> Self {
        self.liker_ids = liker_ids;
        self
    }

    pub fn with_limits(mut self, limits: CallerLimits) -> Self {
        self.limiter = Limiter::new(limits);
        self
    }

    pub fn with_erase_queue(mut self, queue: Arc<dyn EraseQueue>) -> Self {
        self.erase = Some(queue);
        self
    }

    pub fn with_erasure_requests(mut self, erasures: Arc<dyn ErasureRequests>) -> Self {
        self.erasures = Some(erasures);
        self
    }

    pub fn with_suspensions(mut self, store: Arc<dyn likes_core::moderation::Suspensions>) -> Self {
        self.suspended = Some(suspended::Gate::new(store));
        self
    }

    /// Serves only the homes `store` records as opened here, by the tokens' `claim` (two
    /// regions: docs/regions.md).
    pub fn with_homes(mut self, claim: &str, store: Arc<dyn likes_core::homes::Homes>) -> Self {
        self.homes = Some(crate::homes::HomeGate::new(claim, store));
        self
    }

    pub fn with_auth(mut self, auth: Auth) -> Self {
        self.auth = auth;
        self
    }
}
