//! The values the coordinators' logs hold, as plain data (Apache's
//! generated `*Key`/`*Value` record classes): below the coordinators that
//! compute and replay them and below the storage that writes them, so
//! neither imports the other for them. No I/O, and nothing of the broker
//! above.
//!
//! - [`offsets`]: a group's offsets and the one replay of its offset
//!   records, live and at load.
//! - [`classic`]: a classic group's metadata record.
//! - [`consumer`]: a consumer group's records and how its log compacts
//!   them by key.

pub mod classic;
pub mod consumer;
pub mod offsets;
pub mod vecmap;
