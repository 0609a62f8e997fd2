//! kaas-broker: a Kafka-protocol broker whose state lives on a shared
//! volume. The architecture: docs/design/architecture.md.

pub mod acls;
pub mod api;
pub mod auth;
pub mod broker;
pub mod cli;
pub mod client_quotas;
pub mod cluster;
pub mod coordinator;
pub mod followed;
#[doc(hidden)]
pub mod fuzzing;
pub mod group;
pub mod http;
pub mod lag;
pub mod local;
pub mod log_stores;
pub mod metrics;
pub mod net;
pub mod records;
pub mod serve;
pub mod settings;
pub mod storage;
pub mod store;
pub mod txn;
pub mod volume;

pub use broker::{Broker, BrokerConfig};
