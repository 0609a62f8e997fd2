//! The network side: the listener, one task per connection, connection quotas.
//! Framing is `kaas_client::frame`, shared with the clients.

pub mod connection;
pub mod quotas;
pub mod sasl;
pub mod server;
