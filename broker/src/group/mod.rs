//! The consumer-group coordinator: a sans-IO core (`core`) driven by an
//! injected clock, and the shell that feeds it requests, timers and storage.

pub mod core;
pub mod manager;
pub mod store;
