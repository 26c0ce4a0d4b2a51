//! What the product's decisions refuse before a route runs: a suspended user's writes
//! (`suspended`), a like of a post its author closed (`likes_disabled`) or of one whose author
//! blocks the caller (`blocked`), a list of likers its author keeps private (`likers_private`).
//! Each is free while the product has decided nothing of its kind (`suspended`, `policies`,
//! `blocks`).

use likes_core::{CountsRead, ReactionsStore, UserId};

use crate::routes::Route;
use crate::{ApiError, App, Failure};

impl<L: ReactionsStore, C: CountsRead> App<L, C> {
    /// Refuses `route` for `me` if a decision of the product's says so.
    pub(crate) async fn refusal(&self, route: &Route, me: &UserId) -> Result<(), Failure> {
        if let (
            Route::Like(_) | Route::Unlike(_) | Route::React(..) | Route::Unreact(..),
            Some(gate),
        ) = (route, &self.suspended)
        {
            if gate.refuses(me).await? {
                return Err(ApiError::suspended().into());
            }
        }
        // A post that takes no likes refuses new ones; unlikes still work.
        if let Route::Like(post) | Route::React(post, _) = route {
            let policy = self.policies.in_force(post).await?;
            if !policy.likes_on {
                return Err(ApiError::likes_disabled().into());
            }
            // Nor does a post take likes from those its author blocks.
            if let Some(author) = &policy.author {
                if self.blocks.blocks(author, me).await? {
                    return Err(ApiError::blocked().into());
                }
            }
        }
        // Likers kept private are the author's to see.
        if let Route::Likers(post) | Route::Reactors(post, _) = route {
            if !self.policies.in_force(post).await?.shows_likers_to(me) {
                return Err(ApiError::likers_private().into());
            }
        }
        Ok(())
    }
}
