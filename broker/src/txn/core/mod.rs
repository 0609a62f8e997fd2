//! Sans-IO core of the transaction coordinator: the states of a
//! transactional id ([`state`]), its metadata and transitions
//! ([`metadata`], Apache's `TransactionMetadata`) and the coordinator's
//! decisions on InitProducerId, AddPartitionsToTxn, EndTxn, timeouts and
//! expiry ([`coordinator`], Apache's `TransactionCoordinator`). No I/O, no
//! clock, no threads: the shell passes `now_ms`, hands out producer ids and
//! carries out the [`TxnEffect`]s.

pub mod coordinator;
mod end_txn;
pub mod metadata;
pub mod state;

#[cfg(test)]
mod tests;

pub use coordinator::{
    code, ProducerIdSource, RequestToken, TxnAnswer, TxnCoordinator, TxnCoordinatorConfig,
    TxnEffect, TxnResult, WriteToken,
};
pub use metadata::{TopicPartition, TransitionError, TxnMetadata, TxnTransit};
pub use state::{TxnState, TxnVersion, FINALIZED_TXN_VERSION};
