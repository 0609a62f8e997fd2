//! The coordinators' ports implemented on the shared volume's logs: the
//! adapters between a coordinator and storage, above both, so neither
//! imports the other (the group coordinator owns `group::store`, the
//! transaction coordinator `txn::store`; storage knows neither).
//!
//! - [`group`]: `GroupStore` on `storage::group_log::GroupLogStore`.
//! - [`txn`]: `TxnStore` on `storage::txn_log::TxnLogStore`, and a
//!   transaction's state to and from the log's `TxnBody`.

pub mod group;
pub mod txn;
