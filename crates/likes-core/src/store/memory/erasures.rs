//! Pending erasures in memory, with the conditions the DynamoDB store puts on each write.

use std::collections::HashMap;
use std::sync::Mutex;

use super::poisoned;
use crate::erase_job::{Call, ErasureRequests, Pending};
use crate::ids::UserId;

#[derive(Debug, Default)]
pub struct MemoryErasureRequests {
    pending: Mutex<HashMap<UserId, Pending>>,
}

impl MemoryErasureRequests {
    /// The user's pending job, if any.
    pub fn pending(&self, user: &UserId) -> Option<Pending> {
        self.pending.lock().ok()?.get(user).cloned()
    }
}

impl ErasureRequests for MemoryErasureRequests {
    fn request<'a>(&'a self, user: &'a UserId, offered: &'a str, at: &'a str) -> Call<'a, Pending> {
        Box::pin(async move {
            let mut all = self.pending.lock().map_err(|_| poisoned())?;
            let p = all.entry(user.clone()).or_insert_with(|| Pending {
                job_id: offered.to_owned(),
                requested_at: at.to_owned(),
                sent_at: None,
            });
            if p.requested_at.as_str() < at {
                p.requested_at = at.to_owned();
            }
            Ok(p.clone())
        })
    }

    fn read<'a>(&'a self, user: &'a UserId) -> Call<'a, Option<Pending>> {
        Box::pin(async move { Ok(self.pending(user)) })
    }

    fn sent<'a>(&'a self, user: &'a UserId, job_id: &'a str, at: &'a str) -> Call<'a, ()> {
        Box::pin(async move {
            let mut all = self.pending.lock().map_err(|_| poisoned())?;
            if let Some(p) = all.get_mut(user).filter(|p| p.job_id == job_id) {
                p.sent_at = Some(at.to_owned());
            }
            Ok(())
        })
    }

    fn finish<'a>(
        &'a self,
        user: &'a UserId,
        job_id: &'a str,
        erased_to: &'a str,
    ) -> Call<'a, Option<String>> {
        Box::pin(async move {
            let mut all = self.pending.lock().map_err(|_| poisoned())?;
            match all.get(user) {
                Some(p) if p.job_id == job_id && p.requested_at.as_str() > erased_to => {
                    Ok(Some(p.requested_at.clone()))
                }
                Some(p) if p.job_id == job_id => {
                    all.remove(user);
                    Ok(None)
                }
                // Finished by another delivery of its message, or another job's: nothing to do.
                _ => Ok(None),
            }
        })
    }
}
