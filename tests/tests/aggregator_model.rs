//! The aggregator's delivery property (`likes_integration_tests::props`) against an in-memory
//! Counts store with DynamoDB's condition semantics: many cases, no emulator (`make unit`).

use likes_integration_tests::props::{case, run_case};
use likes_integration_tests::stream::MemoryCounts;
use proptest::prelude::*;

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]
    #[test]
    fn in_memory_counts_converge_under_any_delivery(c in case(80)) {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(run_case(MemoryCounts::default(), &c))?;
    }
}
