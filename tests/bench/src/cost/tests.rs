use super::lean::{lean_break_even_utilisation, LEAN_TARGET};
use super::*;

fn measured() -> Measured {
    Measured::nominal()
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

#[test]
fn the_default_profile_keeps_its_published_figure() {
    let like = Profile::default_profile().like(&measured());
    assert!((like.total() - 3.26).abs() < 0.005, "{like:?}");
    assert!(close(like.front_door, API_GATEWAY));
    assert!(close(like.writes, (3.0 + 0.235) * WRU));
}

#[test]
fn provisioned_writes_are_priced_per_capacity_hour_at_the_utilisation() {
    let m = measured();
    let lean = Profile::lean(m.jwt_ms, 0.7);
    let like = lean.like(&m);
    // 3.235 units a like; a WCU-hour serves 3,600 units, 70 % of them used.
    let per_unit = WCU_HOUR / (3600.0 * 0.7);
    assert!(close(like.writes, 3.235 * per_unit * 1e6), "{like:?}");
    assert!(
        !close(like.writes, 3.235 * WRU),
        "provisioned priced as on-demand"
    );
    assert!(
        !close(like.writes, 3.235 * WCU_HOUR * 1e6),
        "a WCU-hour is not a unit"
    );
    // Reads likewise, from the RCU-hour.
    let summary = lean.summary(150.0);
    assert!(close(
        summary.reads,
        150.0 * RCU_HOUR / (3600.0 * 0.7) * 1e6
    ));
    assert!(!close(summary.reads, 150.0 * RRU));
    // Lower utilisation, dearer units.
    assert!(Profile::lean(0.0, 0.5).like(&m).writes > like.writes);
}

#[test]
fn the_function_url_costs_nothing_per_request_but_the_jwt_check_adds_duration() {
    let m = measured();
    let default = Profile::default_profile().like(&m);
    let lean = Profile::lean(m.jwt_ms, 0.7).like(&m);
    assert!(close(lean.front_door, 0.0));
    assert!(lean.api_lambda > default.api_lambda);
    // 0.03 ms on a full core is 0.03 × 1769 / 256 ms at 256 MB's CPU share.
    let extra = lean.api_lambda - default.api_lambda;
    let at_256 = 0.03 * 1769.0 / 256.0;
    assert!(close(extra, 1e6 * 0.25 * (at_256 / 1000.0) * LAMBDA_GB_S));
    assert!(
        close(cpu_ms(0.03, 4096.0), 0.03),
        "never faster than a full core"
    );
}

#[test]
fn the_break_even_utilisation_prices_a_like_at_the_target() {
    let m = measured();
    let u = lean_break_even_utilisation(&m).unwrap();
    assert!(u > 0.0 && u < 1.0, "{u}");
    let at = Profile::lean(m.jwt_ms, u).like(&m).total();
    assert!((at - LEAN_TARGET).abs() < 1e-9, "{at}");
}

#[test]
fn the_count_cache_only_lowers_reads_of_hot_posts() {
    let m = measured();
    let reads = Profile::default_profile().count_read(&m).reads;
    let uncached = COUNT_READ_UNITS * RRU;
    assert!(reads < uncached && reads > uncached * (1.0 - CACHED_COUNT_READ_SHARE));
}
