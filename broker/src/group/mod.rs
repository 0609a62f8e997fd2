//! The consumer-group coordinator: a sans-IO core (`core`) driven by an
//! injected clock, and the shell that feeds it requests, timers and storage;
//! `assignor` holds the consumer protocol's server-side assignors (KIP-848).

pub mod assignor;
pub mod core;
pub mod manager;
pub mod store;
