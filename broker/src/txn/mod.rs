//! Transactions: the coordinator of a transactional id (routed like a
//! group: FNV-1a of the id over the full broker set). [`core`] decides;
//! [`store`] is its port to the id's log (`storage::txn_log` on the
//! shared volume). The shell that runs the core against the store and
//! writes markers to partitions comes next.

pub mod core;
pub mod manager;
pub mod markers;
pub mod store;
pub mod verify;
