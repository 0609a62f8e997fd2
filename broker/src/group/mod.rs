//! The consumer-group coordinator: a sans-IO core (`core`) driven by an
//! injected clock, and the shell that feeds it requests, timers and storage;
//! `assignor` and `consumer` hold the consumer protocol's (KIP-848)
//! server-side assignors and member reconciliation; `store` is the port to
//! storage (implemented on the volume's group logs by `log_stores::group`).

pub mod assignor;
pub mod configs;
pub mod consumer;
pub mod core;
pub mod manager;
pub mod store;
