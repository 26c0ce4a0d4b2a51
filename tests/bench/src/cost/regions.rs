//! Two regions (docs/regions.md#cost): each like is written in both regions' replicas — its
//! item and its LSI and GSI entries, one replicated write unit each per replica, priced as a
//! write unit (*Understanding DynamoDB billing for global tables*) — and counted by both
//! regions' aggregators into their own Counts tables. The request itself (front door, the
//! API function) and every read are paid once, in the region that serves them.

use super::{Measured, Profile, LIKES_PER_S};

/// What replication carries per like: the item (~200 B).
const ITEM_BYTES: f64 = 200.0;
/// Data transfer out of us-east-1 to another region, $ per GB: assumed (EC2's inter-region
/// rate, which DynamoDB's pricing page defers to); not checked offline.
/// <https://aws.amazon.com/dynamodb/pricing/on-demand/>
const INTER_REGION_GB: f64 = 0.02;

/// $ per million likes that the second region adds: its replica's writes and Counts writes,
/// its aggregator, and the transfer.
pub fn second_region(p: &Profile, m: &Measured) -> f64 {
    let like = p.like(m);
    like.writes + like.aggregator + 1e6 * ITEM_BYTES / 1e9 * INTER_REGION_GB
}

pub fn lines(m: &Measured, profiles: &[Profile]) -> Vec<String> {
    let likes_per_day_m = LIKES_PER_S * 86_400.0 / 1e6;
    profiles
        .iter()
        .map(|p| {
            let one = p.like(m).total();
            let more = second_region(p, m);
            format!(
                "two regions (RegionRole=global), {}: per million likes ${:.2} (one region ${one:.2}): the second region writes the like's 3 + {:.3} units and aggregates it again, plus ${:.3} of transfer; a day at the design load: +${:.0}",
                p.name,
                one + more,
                m.counts_units_per_like,
                1e6 * ITEM_BYTES / 1e9 * INTER_REGION_GB,
                likes_per_day_m * more
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_region_pays_the_writes_again_and_not_the_request() {
        let m = Measured::nominal();
        for p in [Profile::default_profile(), Profile::lean(m.jwt_ms, 0.8)] {
            let like = p.like(&m);
            let more = second_region(&p, &m);
            assert!(
                more > like.writes && more < like.writes * 1.1,
                "{more} vs {like:?}"
            );
            assert!(
                more < like.total(),
                "the front door and the API are not paid twice"
            );
        }
    }
}
