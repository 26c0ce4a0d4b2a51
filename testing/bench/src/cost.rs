//! The cost model: measured request and unit counts × list prices (us-east-1, on-demand, when
//! written; an estimate, not a bill).

/// $ per million DynamoDB write request units, and read request units.
const WRU: f64 = 0.625;
const RRU: f64 = 0.125;
/// $ per million API Gateway HTTP API requests.
const API_GATEWAY: f64 = 1.00;
/// Lambda arm64: $ per GB-second, and per million requests.
const LAMBDA_GB_S: f64 = 0.000_013_333_4;
const LAMBDA_REQUESTS: f64 = 0.20;

/// $ per million invocations of `mb` MB running `ms` each.
fn lambda(mb: f64, ms: f64) -> f64 {
    1e6 * (mb / 1024.0) * (ms / 1000.0) * LAMBDA_GB_S + LAMBDA_REQUESTS
}

/// Lines of the cost table. `counts_writes_per_like` and `batches_per_like` come from the
/// coalescing simulation.
pub fn table(counts_writes_per_like: f64, batches_per_like: f64) -> Vec<String> {
    let api_lambda = lambda(256.0, 10.0);
    // A like: 1 write of the item (~200 B, under 1 KB) + 1 to the LSI + 1 to the GSI.
    let likes_writes = 3.0 * WRU;
    let counts = counts_writes_per_like * WRU;
    // One aggregator invocation per batch, ~50 ms.
    let aggregator = batches_per_like * lambda(256.0, 50.0);
    let per_like = API_GATEWAY + api_lambda + likes_writes + counts + aggregator;
    let count_read = API_GATEWAY + api_lambda + 0.5 * RRU;
    // 100 counts (eventually consistent, ≤ 4 KB each: 0.5 RRU) + 100 liked-by-me keys
    // (strongly consistent: 1 RRU each).
    let summary = API_GATEWAY + api_lambda + (100.0 * 0.5 + 100.0) * RRU;
    vec![
        format!("per million likes: ${per_like:.2} = API Gateway ${API_GATEWAY:.2} + likes-api λ ${api_lambda:.2} + Likes writes (3 WRU) ${likes_writes:.2} + Counts writes ({counts_writes_per_like:.3} WRU) ${counts:.2} + aggregator λ ${aggregator:.3}"),
        format!("  without API Gateway (direct Lambda invoke): ${:.2}", per_like - API_GATEWAY),
        format!("per million count reads: ${count_read:.2} (0.5 RRU ${:.4}; the count cache cuts the RRU further)", 0.5 * RRU),
        format!("per million summaries of 100: ${summary:.2} (150 RRU ${:.2}: 50 counts + 100 strongly consistent liked-by-me)", 150.0 * RRU),
    ]
}
