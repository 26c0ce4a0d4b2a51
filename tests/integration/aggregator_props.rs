//! The aggregator's delivery property (`likes_harness::props`) against the emulator:
//! each case creates its own tables and writes for real.

use likes_harness::props::{case, run_case};
use likes_harness::Tables;
use proptest::prelude::*;

proptest! {
    // Each case creates its own tables on the emulator and writes for real.
    #![proptest_config(ProptestConfig { cases: 24, max_shrink_iters: 64, ..ProptestConfig::default() })]
    #[test]
    fn emulator_counts_converge_under_any_delivery(c in case(50)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async {
            let t = Tables::new().await;
            run_case(t.counts(), &c).await
        })?;
    }
}
