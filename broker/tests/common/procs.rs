//! The process clusters of kill -9 tests: `kaas_testkit::ProcessCluster`
//! on this crate's binary, with a short initial rebalance delay.

use std::time::Duration;

use kaas_testkit::ClusterOptions;
pub use kaas_testkit::ProcessCluster;

const BIN: &str = env!("CARGO_BIN_EXE_kaas-broker");

/// How long a test waits for the controller to publish a change.
pub const PUBLISHED_WITHIN: Duration = Duration::from_secs(20);

/// The options of [`start`]: `n` brokers of this crate's binary with a
/// short initial rebalance delay.
pub fn options(n: usize) -> ClusterOptions {
    ClusterOptions::new(BIN, n).serve_arg("--group-initial-rebalance-delay-ms", 200)
}

/// Starts `n` brokers and a controller in a temporary folder.
pub async fn start(n: usize) -> ProcessCluster {
    ProcessCluster::start(None, options(n))
        .await
        .expect("the cluster starts")
}

/// [`start`] with more `serve` flags.
pub async fn start_with(n: usize, flags: &[(&str, &str)]) -> ProcessCluster {
    let mut opts = options(n);
    for (flag, value) in flags {
        opts = opts.serve_arg(flag, value);
    }
    ProcessCluster::start(None, opts)
        .await
        .expect("the cluster starts")
}
