//! The users' moderation state, the posts' policies and the users' blocks in memory, recorded as the DynamoDB
//! stores record them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Mutex;

use super::poisoned;
use crate::block::{self, Blocks};
use crate::erase_job::Call;
use crate::homes::{Home, Homes};
use crate::ids::{PostId, UserId};
use crate::moderation::{compare, Decided, Suspensions};
use crate::policy::{self, Policies, Policy};

#[derive(Debug, Default)]
pub struct MemorySuspensions {
    /// Each user's last decision: suspended, as of when.
    users: Mutex<HashMap<UserId, (bool, String)>>,
}

impl Suspensions for MemorySuspensions {
    fn decide<'a>(&'a self, user: &'a UserId, suspended: bool, at: &'a str) -> Call<'a, Decided> {
        Box::pin(async move {
            let mut users = self.users.lock().map_err(|_| poisoned())?;
            let recorded = users.get(user).map(|(s, t)| (*s, t.as_str()));
            let decided = compare(recorded, suspended, at);
            if matches!(decided, Decided::Newer { .. }) {
                users.insert(user.clone(), (suspended, at.to_owned()));
            }
            Ok(decided)
        })
    }

    fn is_suspended<'a>(&'a self, user: &'a UserId) -> Call<'a, bool> {
        Box::pin(async move {
            let users = self.users.lock().map_err(|_| poisoned())?;
            Ok(users.get(user).is_some_and(|(s, _)| *s))
        })
    }

    fn suspended_count(&self) -> Call<'_, i64> {
        Box::pin(async move {
            let users = self.users.lock().map_err(|_| poisoned())?;
            Ok(users.values().filter(|(s, _)| *s).count() as i64)
        })
    }
}

#[derive(Debug, Default)]
pub struct MemoryPolicies {
    /// Each post's policy, as of when.
    posts: Mutex<HashMap<PostId, (Policy, String)>>,
}

impl Policies for MemoryPolicies {
    fn decide<'a>(&'a self, post: &'a PostId, new: &'a Policy, at: &'a str) -> Call<'a, Decided> {
        Box::pin(async move {
            let mut posts = self.posts.lock().map_err(|_| poisoned())?;
            let recorded = posts.get(post).map(|(p, t)| (p, t.as_str()));
            let decided = policy::compare(recorded, new, at);
            if matches!(decided, Decided::Newer { .. }) {
                posts.insert(post.clone(), (new.clone(), at.to_owned()));
            }
            Ok(decided)
        })
    }

    fn policy<'a>(&'a self, post: &'a PostId) -> Call<'a, Option<Policy>> {
        Box::pin(async move {
            let posts = self.posts.lock().map_err(|_| poisoned())?;
            Ok(posts.get(post).map(|(p, _)| p.clone()))
        })
    }

    fn policy_count(&self) -> Call<'_, i64> {
        Box::pin(async move {
            let posts = self.posts.lock().map_err(|_| poisoned())?;
            Ok(posts.len() as i64)
        })
    }
}

#[derive(Debug, Default)]
pub struct MemoryBlocks {
    /// Each (blocker, blocked) pair's decision: blocking, as of when.
    pairs: Mutex<HashMap<(UserId, UserId), (bool, String)>>,
}

impl Blocks for MemoryBlocks {
    fn decide<'a>(
        &'a self,
        blocker: &'a UserId,
        blocked: &'a UserId,
        blocking: bool,
        at: &'a str,
    ) -> Call<'a, Decided> {
        Box::pin(async move {
            let mut pairs = self.pairs.lock().map_err(|_| poisoned())?;
            let key = (blocker.clone(), blocked.clone());
            let recorded = pairs.get(&key).map(|(b, t)| (*b, t.as_str()));
            let decided = block::compare(recorded, blocking, at);
            if matches!(decided, Decided::Newer { .. }) {
                pairs.insert(key, (blocking, at.to_owned()));
            }
            Ok(decided)
        })
    }

    fn blocks<'a>(&'a self, blocker: &'a UserId, blocked: &'a UserId) -> Call<'a, bool> {
        Box::pin(async move {
            let pairs = self.pairs.lock().map_err(|_| poisoned())?;
            let key = (blocker.clone(), blocked.clone());
            Ok(pairs.get(&key).is_some_and(|(b, _)| *b))
        })
    }

    fn pair_count(&self) -> Call<'_, i64> {
        Box::pin(async move {
            let pairs = self.pairs.lock().map_err(|_| poisoned())?;
            Ok(pairs.len() as i64)
        })
    }
}

/// A region's served homes.
#[derive(Debug, Default)]
pub struct MemoryHomes {
    served: Mutex<BTreeSet<Home>>,
}

impl Homes for MemoryHomes {
    fn served(&self) -> Call<'_, BTreeSet<Home>> {
        Box::pin(async move { Ok(self.served.lock().map_err(|_| poisoned())?.clone()) })
    }

    fn set<'a>(&'a self, home: &'a Home, serve: bool) -> Call<'a, ()> {
        Box::pin(async move {
            let mut served = self.served.lock().map_err(|_| poisoned())?;
            if serve {
                served.insert(home.clone());
            } else {
                served.remove(home);
            }
            Ok(())
        })
    }
}
