//! The network side: the listeners, TLS, one task per connection, SASL,
//! connection quotas, and connections to the other brokers.
//! Framing is `kaas_client::frame`, shared with the clients.

pub mod connection;
pub mod listener;
pub mod ordering;
pub mod peers;
pub mod quotas;
pub mod sasl;
pub mod server;
pub mod sockets;
pub mod tls;
