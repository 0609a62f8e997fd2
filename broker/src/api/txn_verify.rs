//! Transactional writes checked with the transaction's coordinator before
//! they land (KIP-890). A partition leader asks before the first batch of
//! a transaction reaches its partition, and a group coordinator before a
//! TxnOffsetCommit stages offsets: here if this broker coordinates the id,
//! else by AddPartitionsToTxn v5 to the coordinator's broker. Clients of
//! transaction version 2 (Produce v12+, TxnOffsetCommit v5+) send no
//! AddPartitionsToTxn or AddOffsetsToTxn: the ask adds the partition
//! (`verify_only` false); older clients added it themselves, and the ask
//! only verifies.

use std::collections::BTreeSet;
use std::time::Duration;

use kafka_protocol::messages::add_partitions_to_txn_request::{
    AddPartitionsToTxnTopic, AddPartitionsToTxnTransaction,
};
use kafka_protocol::messages::{AddPartitionsToTxnRequest, ProducerId, TopicName, TransactionalId};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as Err;
use tracing::debug;

use super::RequestContext;
use crate::txn::core::{TopicPartition, TxnVersion};

/// What a request's version lets the leader do and tell its client
/// (Apache's `AddPartitionsToTxnManager.TransactionSupportedOperation`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Supported {
    /// The client knows neither TRANSACTION_ABORTABLE nor implicit adds.
    DefaultError,
    /// The client handles TRANSACTION_ABORTABLE.
    GenericError,
    /// Transaction version 2: the ask adds the partition.
    AddPartition,
}

impl Supported {
    /// `produceRequestVersionToTransactionSupportedOperation`.
    pub fn of_produce(version: i16) -> Supported {
        match version {
            v if v > 11 => Supported::AddPartition,
            v if v > 10 => Supported::GenericError,
            _ => Supported::DefaultError,
        }
    }

    /// `txnOffsetCommitRequestVersionToTransactionSupportedOperation`.
    pub fn of_txn_offset_commit(version: i16) -> Supported {
        match version {
            v if v > 4 => Supported::AddPartition,
            v if v > 3 => Supported::GenericError,
            _ => Supported::DefaultError,
        }
    }

    fn adds(self) -> bool {
        self == Supported::AddPartition
    }
}

/// The coordinator's answer for a partition as the asking broker passes
/// it on (`AddPartitionsToTxnHandler.onComplete`): producers expect
/// INVALID_PRODUCER_EPOCH for a fenced epoch, old clients INVALID_TXN_STATE
/// for a partition not in the transaction, and a refused broker-to-broker
/// call must not reach the client as an authorization failure.
pub fn asker_code(supported: Supported, code: i16) -> i16 {
    match code {
        c if c == Err::ProducerFenced.code() => Err::InvalidProducerEpoch.code(),
        c if c == Err::TransactionAbortable.code() && supported == Supported::DefaultError => {
            Err::InvalidTxnState.code()
        }
        c if c == Err::ClusterAuthorizationFailed.code() => Err::InvalidTxnState.code(),
        c => c,
    }
}

/// What a producer is answered for a failed ask
/// (`ReplicaManager.handleProduceAppend`): errors older clients may not
/// retry become NOT_ENOUGH_REPLICAS, which they retry without a metadata
/// refresh; transaction version 2 clients retry CONCURRENT_TRANSACTIONS.
pub fn produce_code(supported: Supported, code: i16) -> i16 {
    let retriable = [
        Err::NetworkException.code(),
        Err::CoordinatorLoadInProgress.code(),
        Err::CoordinatorNotAvailable.code(),
        Err::NotCoordinator.code(),
    ];
    if retriable.contains(&code)
        || (code == Err::ConcurrentTransactions.code() && !supported.adds())
    {
        Err::NotEnoughReplicas.code()
    } else {
        code
    }
}

/// What a TxnOffsetCommit is answered for a failed ask (the group
/// coordinator's `handleOperationException`): errors a committer retries
/// after the same coordinator, or after finding it again.
pub fn txn_offset_commit_code(code: i16) -> i16 {
    match code {
        c if c == Err::NetworkException.code() => Err::CoordinatorLoadInProgress.code(),
        c if c == Err::NotEnoughReplicas.code()
            || c == Err::UnknownTopicOrPartition.code()
            || c == Err::RequestTimedOut.code() =>
        {
            Err::CoordinatorNotAvailable.code()
        }
        c if c == Err::NotLeaderOrFollower.code() || c == Err::KafkaStorageError.code() => {
            Err::NotCoordinator.code()
        }
        c => c,
    }
}

/// How long a partition leader retries CONCURRENT_TRANSACTIONS for a
/// transaction version 2 producer before answering it
/// (`add.partitions.to.txn.retry.backoff.ms`, `...backoff.max.ms`).
const CONCURRENT_RETRY_BACKOFF: Duration = Duration::from_millis(20);
const CONCURRENT_RETRY_MAX: Duration = Duration::from_millis(100);

/// The produce path's ask: NONE when the batch may be appended, else the
/// producer's error.
pub async fn check_produce(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partition: TopicPartition,
) -> i16 {
    let supported = Supported::of_produce(ctx.api_version);
    let deadline = tokio::time::Instant::now() + CONCURRENT_RETRY_MAX;
    loop {
        let code = ask(
            ctx,
            transactional_id,
            producer_id,
            producer_epoch,
            &partition,
            supported,
        )
        .await;
        // Only a version 2 producer's add is retried here; before it the
        // producer retries NOT_ENOUGH_REPLICAS itself.
        let again = supported.adds()
            && code == Err::ConcurrentTransactions.code()
            && tokio::time::Instant::now() + CONCURRENT_RETRY_BACKOFF < deadline;
        if !again {
            return produce_code(supported, code);
        }
        tokio::time::sleep(CONCURRENT_RETRY_BACKOFF).await;
    }
}

/// The TxnOffsetCommit path's ask for the group's offsets: NONE when the
/// offsets may be staged, else the committer's error.
pub async fn check_txn_offset_commit(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    group_id: &str,
) -> i16 {
    let supported = Supported::of_txn_offset_commit(ctx.api_version);
    let code = ask(
        ctx,
        transactional_id,
        producer_id,
        producer_epoch,
        &TopicPartition::offsets_of(group_id),
        supported,
    )
    .await;
    txn_offset_commit_code(code)
}

/// One ask of the coordinator: its answer for the partition (after
/// [`asker_code`]), or NETWORK_EXCEPTION / COORDINATOR_NOT_AVAILABLE when
/// it cannot be asked.
async fn ask(
    ctx: &RequestContext,
    transactional_id: &str,
    producer_id: i64,
    producer_epoch: i16,
    partition: &TopicPartition,
    supported: Supported,
) -> i16 {
    let broker = &ctx.broker;
    let Some(routing) = broker.routing() else {
        return Err::CoordinatorNotAvailable.code();
    };
    let Some(coordinator) = routing.owner_of_transaction(transactional_id) else {
        return Err::CoordinatorNotAvailable.code();
    };
    if coordinator == broker.id() {
        let asked: BTreeSet<TopicPartition> = [partition.clone()].into();
        let code = if supported.adds() {
            match broker
                .txns
                .add_partitions(
                    transactional_id,
                    producer_id,
                    producer_epoch,
                    &asked,
                    TxnVersion::V2,
                )
                .await
            {
                Ok(answer) => answer.error(),
                Err(e) => e.0,
            }
        } else {
            match broker
                .txns
                .verify_partitions(transactional_id, producer_id, producer_epoch, &asked)
                .await
            {
                Ok(answers) => answers
                    .first()
                    .map_or(Err::UnknownServerError.code(), |a| a.1),
                Err(e) => e.0,
            }
        };
        return asker_code(supported, code);
    }
    let Some(b) = routing.broker(coordinator) else {
        return Err::CoordinatorNotAvailable.code();
    };
    let req = AddPartitionsToTxnRequest::default().with_transactions(vec![
        AddPartitionsToTxnTransaction::default()
            .with_transactional_id(TransactionalId(StrBytes::from_string(
                transactional_id.to_string(),
            )))
            .with_producer_id(ProducerId(producer_id))
            .with_producer_epoch(producer_epoch)
            .with_verify_only(!supported.adds())
            .with_topics(vec![AddPartitionsToTxnTopic::default()
                .with_name(TopicName(StrBytes::from_string(partition.topic.clone())))
                .with_partitions(vec![partition.partition])]),
    ]);
    let coordinator_addr = format!("{}:{}", b.host, b.port);
    let code = match broker.peers.send(&coordinator_addr, &req, 5).await {
        Ok(resp) if resp.error_code != 0 => resp.error_code,
        Ok(resp) => resp
            .results_by_transaction
            .first()
            .and_then(|t| t.topic_results.first())
            .and_then(|t| t.results_by_partition.first())
            .map_or(Err::UnknownServerError.code(), |p| p.partition_error_code),
        Err(e) => {
            debug!(coordinator, error = %e, "cannot ask the transaction coordinator");
            Err::NetworkException.code()
        }
    };
    asker_code(supported, code)
}

#[cfg(test)]
mod tests;
