//! What the per-caller limits cost a request: one `admit` (a lock, a hash lookup, a little
//! arithmetic) with the standard limits and many callers remembered. No AWS request at all;
//! this is the whole price (docs/limits.md).

use std::time::Instant;

use likes_api::limits::{Class, Limiter};
use likes_aws::env::CallerLimits;
use likes_core::UserId;

pub struct Figures {
    pub ns_per_admit: f64,
    pub callers: usize,
}

pub fn measure() -> Figures {
    let limiter = Limiter::new(CallerLimits::STANDARD);
    let callers = 10_000;
    let users: Vec<UserId> = (0..callers)
        .map(|n| UserId::parse(&format!("auth0|user-{n}")).expect("a user id"))
        .collect();
    // Warm: every caller has a bucket, as in a busy environment.
    for u in &users {
        let _ = limiter.admit(Class::Reads, u, None);
    }
    let rounds = 1_000_000;
    let started = Instant::now();
    for i in 0..rounds {
        let _ = std::hint::black_box(limiter.admit(Class::Reads, &users[i % callers], None));
    }
    Figures {
        ns_per_admit: started.elapsed().as_nanos() as f64 / rounds as f64,
        callers,
    }
}
