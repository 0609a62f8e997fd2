//! kaas-client: the Kafka wire framing ([`frame`]), a minimal client that
//! sends one request at a time over one connection ([`KafkaClient`]), and
//! the probe the controller asks every broker ([`probe`]). The broker reads
//! its requests with the same framing, so writer and reader cannot drift.

pub mod client;
pub mod frame;
pub mod probe;
pub mod scram;
pub mod tls;

pub use client::{KafkaClient, SaslCredentials, Security};
pub use tls::ClientTls;
