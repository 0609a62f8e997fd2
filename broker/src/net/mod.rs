//! The network side: framing, one task pair per connection, the listener.

pub mod connection;
pub mod quotas;
pub mod server;
