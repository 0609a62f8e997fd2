//! Transaction version 2 (KIP-890 part 2) on the wire, as a Java 4.x
//! producer speaks it once ApiVersions finalizes `transaction.version` 2:
//! no AddPartitionsToTxn and no AddOffsetsToTxn (Produce v12 and
//! TxnOffsetCommit v5 add the partition and the group's offsets), EndTxn v5
//! bumps the epoch and answers the new one, the next transaction starts at
//! that epoch with sequence 0.

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;

use super::{fetched, latest, name, one_broker, txn_id};
use crate::broker::Broker;
use crate::storage::batch::tests::encode_txn_batch;

const ID: &str = "tv2";
const GROUP: &str = "tv2-group";

async fn call(broker: &Arc<Broker>, version: i16, req: RequestKind) -> ResponseKind {
    super::call_at(broker, version, req).await
}

async fn produce(broker: &Arc<Broker>, version: i16, pid: i64, epoch: i16, seq: i32) -> i16 {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_transactional_id(Some(txn_id(ID)))
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(name("t"))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(encode_txn_batch(pid, epoch, seq, 2).into())),
            ])]);
    let ResponseKind::Produce(r) = call(broker, version, RequestKind::Produce(req)).await else {
        panic!("not a produce response")
    };
    r.responses[0].partition_responses[0].error_code
}

async fn end_txn(
    broker: &Arc<Broker>,
    version: i16,
    pid: i64,
    epoch: i16,
    committed: bool,
) -> (i16, i64, i16) {
    let req = EndTxnRequest::default()
        .with_transactional_id(txn_id(ID))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_committed(committed);
    let ResponseKind::EndTxn(r) = call(broker, version, RequestKind::EndTxn(req)).await else {
        panic!("not an EndTxn response")
    };
    (r.error_code, r.producer_id.0, r.producer_epoch)
}

async fn txn_offset_commit(
    broker: &Arc<Broker>,
    version: i16,
    pid: i64,
    epoch: i16,
    offset: i64,
) -> i16 {
    use txn_offset_commit_request::*;
    let req = TxnOffsetCommitRequest::default()
        .with_transactional_id(txn_id(ID))
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_producer_id(ProducerId(pid))
        .with_producer_epoch(epoch)
        .with_generation_id(-1)
        .with_topics(vec![TxnOffsetCommitRequestTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let ResponseKind::TxnOffsetCommit(r) =
        call(broker, version, RequestKind::TxnOffsetCommit(req)).await
    else {
        panic!("not a TxnOffsetCommit response")
    };
    r.topics[0].partitions[0].error_code
}

/// The group's committed offset for `t`-0 (require_stable), or its error.
async fn committed(broker: &Arc<Broker>) -> Result<i64, i16> {
    use offset_fetch_request::*;
    let req = OffsetFetchRequest::default()
        .with_require_stable(true)
        .with_groups(vec![OffsetFetchRequestGroup::default()
            .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
            .with_topics(Some(vec![OffsetFetchRequestTopics::default()
                .with_name(name("t"))
                .with_partition_indexes(vec![0])]))]);
    let ResponseKind::OffsetFetch(r) = call(broker, 9, RequestKind::OffsetFetch(req)).await else {
        panic!("not an OffsetFetch response")
    };
    let p = &r.groups[0].topics[0].partitions[0];
    match p.error_code {
        0 => Ok(p.committed_offset),
        e => Err(e),
    }
}

#[tokio::test]
async fn api_versions_finalizes_transaction_version_2() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let versions = |v: i16| {
        let broker = broker.clone();
        async move {
            let req = ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("test"))
                .with_client_software_version(StrBytes::from_static_str("1"));
            let ResponseKind::ApiVersions(r) =
                call(&broker, v, RequestKind::ApiVersions(req)).await
            else {
                panic!("not an ApiVersions response")
            };
            r
        }
    };
    let finalized = |r: &ApiVersionsResponse| {
        r.finalized_features
            .iter()
            .map(|f| (f.name.to_string(), f.min_version_level, f.max_version_level))
            .collect::<Vec<_>>()
    };
    let supported = |r: &ApiVersionsResponse| {
        r.supported_features
            .iter()
            .map(|f| (f.name.to_string(), f.min_version, f.max_version))
            .collect::<Vec<_>>()
    };
    let tv = "transaction.version".to_string();
    let v4 = versions(4).await;
    assert_eq!(finalized(&v4), [(tv.clone(), 2, 2)]);
    assert_eq!(supported(&v4), [(tv.clone(), 0, 2)]);
    assert!(v4.finalized_features_epoch >= 0, "a known epoch");
    let end_txn = v4
        .api_keys
        .iter()
        .find(|k| k.api_key == ApiKey::EndTxn as i16)
        .unwrap();
    assert_eq!(end_txn.max_version, 5);
    // Below v4 a supported range starting at 0 is left out, as Apache does.
    let v3 = versions(3).await;
    assert_eq!(finalized(&v3), [(tv, 2, 2)]);
    assert!(supported(&v3).is_empty());
}

/// TransactionsTest's testBumpTransactionalEpochWithTV2Enabled, in raw
/// requests on one broker (the coordinator, the leader and the group's
/// coordinator in one): committed and aborted transactions with no
/// AddPartitionsToTxn or AddOffsetsToTxn, an EndTxn retry, and the zombie.
#[tokio::test]
async fn a_transaction_version_2_producer_adds_partitions_and_offsets_by_writing_them() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let Ok(crate::txn::core::TxnAnswer::InitProducerId {
        producer_id: pid,
        producer_epoch: 0,
        error: 0,
    }) = broker.txns.init_producer_id(ID, 60_000, None).await
    else {
        panic!("init refused")
    };

    // Produce v12 adds the partition: appended, undecided.
    assert_eq!(produce(&broker, 12, pid, 0, 0).await, 0);
    assert_eq!(latest(&broker, 0).await, 2, "read_uncommitted sees it");
    assert_eq!(latest(&broker, 1).await, 0, "the transaction holds the LSO");
    let described = broker.txns.describe(ID).await.unwrap().unwrap();
    assert_eq!(described.state, crate::txn::core::TxnState::Ongoing);
    // TxnOffsetCommit v5 adds the group's offsets: staged, not visible.
    assert_eq!(txn_offset_commit(&broker, 5, pid, 0, 2).await, 0);
    assert_eq!(
        committed(&broker).await,
        Err(E::UnstableOffsetCommit.code())
    );

    // EndTxn v5 bumps the epoch and answers it.
    assert_eq!(end_txn(&broker, 5, pid, 0, true).await, (0, pid, 1));
    assert_eq!(latest(&broker, 1).await, 3, "records and marker committed");
    assert_eq!(committed(&broker).await, Ok(2));
    // A retry of that EndTxn (epoch one below) is answered as done.
    assert_eq!(end_txn(&broker, 5, pid, 0, true).await, (0, pid, 1));
    // Aborting it now, at the old epoch, is not.
    assert_eq!(
        end_txn(&broker, 5, pid, 0, false).await.0,
        E::InvalidTxnState.code()
    );

    // The next transaction: epoch 1, sequence 0; aborted, with its offsets.
    assert_eq!(produce(&broker, 12, pid, 1, 0).await, 0);
    assert_eq!(txn_offset_commit(&broker, 5, pid, 1, 5).await, 0);
    assert_eq!(end_txn(&broker, 5, pid, 1, false).await, (0, pid, 2));
    assert_eq!(committed(&broker).await, Ok(2), "aborted offsets dropped");
    let read = fetched(&broker, 1).await;
    assert_eq!(read.last_stable_offset, 6);
    let aborted: Vec<(i64, i64)> = read
        .aborted_transactions
        .unwrap_or_default()
        .iter()
        .map(|a| (a.producer_id.0, a.first_offset))
        .collect();
    assert_eq!(aborted, [(pid, 3)]);

    // The zombie at epoch 1 writes nothing.
    assert_eq!(
        produce(&broker, 12, pid, 1, 2).await,
        E::InvalidProducerEpoch.code()
    );
    assert_eq!(
        txn_offset_commit(&broker, 5, pid, 1, 9).await,
        E::InvalidProducerEpoch.code()
    );
    assert_eq!(latest(&broker, 0).await, 6, "nothing appended");
}

/// A client before transaction version 2 still adds its partitions and
/// its group itself: Produce v11 and TxnOffsetCommit v4 only verify, and
/// answer TRANSACTION_ABORTABLE (INVALID_TXN_STATE before v11 and v4) for
/// what the transaction does not hold.
#[tokio::test]
async fn before_transaction_version_2_writes_only_verify() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let Ok(crate::txn::core::TxnAnswer::InitProducerId {
        producer_id: pid, ..
    }) = broker.txns.init_producer_id(ID, 60_000, None).await
    else {
        panic!("init refused")
    };
    assert_eq!(
        produce(&broker, 10, pid, 0, 0).await,
        E::InvalidTxnState.code()
    );
    assert_eq!(
        produce(&broker, 11, pid, 0, 0).await,
        E::TransactionAbortable.code()
    );
    assert_eq!(
        txn_offset_commit(&broker, 3, pid, 0, 1).await,
        E::InvalidTxnState.code()
    );
    assert_eq!(
        txn_offset_commit(&broker, 4, pid, 0, 1).await,
        E::TransactionAbortable.code()
    );
    assert_eq!(latest(&broker, 0).await, 0, "nothing appended");
    assert_eq!(committed(&broker).await, Ok(-1), "nothing staged");
}
