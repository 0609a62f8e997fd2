//! The KIP-848 consumer group protocol (issue #16), sans-IO as the classic
//! coordinator's core: so far `reconcile`, the reconciliation of one member
//! towards its target assignment (Apache's `CurrentAssignmentBuilder`).

pub mod reconcile;
