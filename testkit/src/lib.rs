//! Test support shared by the broker's integration tests and the soak run
//! (one copy): clusters of real `kaas-broker` processes to kill -9.
//! Raw protocol requests go through `kaas-client`; `pki` makes TLS
//! certificates, `records` record batches.

mod cluster;

pub use cluster::{free_port, free_ports, ClusterOptions, ProcessCluster};
pub mod gluster;
pub mod pki;
pub mod records;
mod retry;
pub use retry::{retry, retry_blocking};
