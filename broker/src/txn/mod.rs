//! Transactions: the coordinator of a transactional id (routed like a
//! group: FNV-1a of the id over the full broker set). [`core`] decides;
//! [`store`] is its port to the id's log (implemented on the shared
//! volume's logs by `log_stores::txn`); [`manager`] runs the core against
//! the store. What
//! writes markers to partitions and verifies a transaction's partitions
//! for Produce and TxnOffsetCommit is the API's (`api::txn_markers`,
//! `api::txn_verify`): it reaches partitions, groups and peers.

pub mod core;
pub mod manager;
pub mod store;
