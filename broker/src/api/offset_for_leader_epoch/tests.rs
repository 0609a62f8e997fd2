//! Leader epochs on the wire: batches stamped with the assignment's
//! version, OffsetForLeaderEpoch's answers (Apache's
//! OffsetsForLeaderEpochRequestTest and `Partition.lastOffsetForLeaderEpoch`),
//! and the epoch checks of Fetch, ListOffsets and OffsetForLeaderEpoch.

use std::sync::Arc;

use kaas_shared::{Assignment, BrokerInfo, BrokerState};
use kafka_protocol::messages::*;

use crate::api::tests::{call_at, name, one_broker};
use crate::api::{Err, RequestKind, ResponseKind};
use crate::broker::Broker;
use crate::storage::batch::{self, tests::encode_batch};
use crate::storage::leader_epochs::checkpoint_path;

/// (error, leader epoch, end offset) for `epoch` of `topic`/`partition`.
async fn end_offset(
    broker: &Arc<Broker>,
    topic: &str,
    partition: i32,
    current: i32,
    epoch: i32,
) -> (i16, i32, i64) {
    use offset_for_leader_epoch_request::*;
    let req = OffsetForLeaderEpochRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![OffsetForLeaderTopic::default()
            .with_topic(name(topic))
            .with_partitions(vec![OffsetForLeaderPartition::default()
                .with_partition(partition)
                .with_current_leader_epoch(current)
                .with_leader_epoch(epoch)])]);
    let ResponseKind::OffsetForLeaderEpoch(r) =
        call_at(broker, 4, RequestKind::OffsetForLeaderEpoch(req)).await
    else {
        panic!("not an OffsetForLeaderEpoch response")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.leader_epoch, p.end_offset)
}

async fn produce(broker: &Arc<Broker>, records: usize) -> i16 {
    use produce_request::*;
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name("t"))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(encode_batch(records, 1000).into()))])]);
    let ResponseKind::Produce(r) = call_at(broker, 9, RequestKind::Produce(req)).await else {
        panic!("not a produce response")
    };
    r.responses[0].partition_responses[0].error_code
}

/// A v12 Fetch of t/0 from 0 with the client's `current` epoch.
async fn fetch(broker: &Arc<Broker>, current: i32) -> fetch_response::PartitionData {
    use fetch_request::*;
    let req = FetchRequest::default()
        .with_max_wait_ms(0)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name("t"))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_current_leader_epoch(current)
                .with_partition_max_bytes(1 << 20)])]);
    let ResponseKind::Fetch(r) = call_at(broker, 12, RequestKind::Fetch(req)).await else {
        panic!("not a fetch response")
    };
    r.responses[0].partitions[0].clone()
}

/// (error, offset, leader epoch) of a v7 ListOffsets of t/0.
async fn list_offset(broker: &Arc<Broker>, timestamp: i64, current: i32) -> (i16, i64, i32) {
    use list_offsets_request::*;
    let req = ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
        .with_name(name("t"))
        .with_partitions(vec![ListOffsetsPartition::default()
            .with_partition_index(0)
            .with_current_leader_epoch(current)
            .with_timestamp(timestamp)])]);
    let ResponseKind::ListOffsets(r) = call_at(broker, 7, RequestKind::ListOffsets(req)).await
    else {
        panic!("not a list offsets response")
    };
    let p = &r.topics[0].partitions[0];
    (p.error_code, p.offset, p.leader_epoch)
}

fn assignment(version: u64, broker_0: BrokerState) -> Assignment {
    let mut zero = BrokerInfo::alive(0, "127.0.0.1", 9092);
    zero.state = broker_0;
    Assignment {
        version,
        brokers: vec![zero, BrokerInfo::alive(1, "127.0.0.1", 9093)],
        ..Default::default()
    }
}

#[tokio::test]
async fn leader_epochs_are_the_assignment_version_recorded_where_they_start() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker(dir.path()).await;
    // Epoch 1 (the assignment's version, standing in for a partitions version) writes 0..3, epoch 4 writes 3..5.
    assert_eq!(produce(&broker, 3).await, 0);
    broker.apply_assignment(Assignment {
        version: 4,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    assert_eq!(produce(&broker, 2).await, 0);

    // Each batch carries the epoch that wrote it.
    let data = fetch(&broker, 4).await;
    assert_eq!(data.error_code, 0);
    let records = data.records.unwrap();
    let epochs: Vec<(i64, i32)> = batch::split_batches(&records)
        .unwrap()
        .into_iter()
        .map(|(range, h)| {
            let at = range.start + 12;
            (
                h.base_offset,
                i32::from_be_bytes(records[at..at + 4].try_into().unwrap()),
            )
        })
        .collect();
    assert_eq!(epochs, [(0, 1), (3, 4)]);

    // shouldGetFirstOffsetOfSubsequentEpochWhenOffsetRequestedForPreviousEpoch
    assert_eq!(end_offset(&broker, "t", 0, 4, 1).await, (0, 1, 3));
    // The latest epoch ends at the log's end.
    assert_eq!(end_offset(&broker, "t", 0, 4, 4).await, (0, 4, 5));
    // An epoch between two known ones ended where the next began.
    assert_eq!(end_offset(&broker, "t", 0, -1, 2).await, (0, 1, 3));
    // Below the first: the requested epoch, ending at the first's start.
    assert_eq!(end_offset(&broker, "t", 0, 4, 0).await, (0, 0, 0));
    // Above every epoch: unknown.
    assert_eq!(end_offset(&broker, "t", 0, 4, 7).await, (0, -1, -1));

    // testCurrentEpochValidation: an older current epoch is fenced, a
    // newer one unknown, on every API that carries one.
    let fenced = Err::FencedLeaderEpoch.code();
    let unknown = Err::UnknownLeaderEpoch.code();
    assert_eq!(end_offset(&broker, "t", 0, 3, 1).await, (fenced, -1, -1));
    assert_eq!(end_offset(&broker, "t", 0, 5, 1).await, (unknown, -1, -1));
    let stale = fetch(&broker, 3).await;
    assert_eq!(stale.error_code, fenced);
    assert_eq!(
        (
            stale.current_leader.leader_id.0,
            stale.current_leader.leader_epoch
        ),
        (0, 4),
        "KIP-951: a fenced fetch learns the leader and its epoch"
    );
    assert_eq!(fetch(&broker, 5).await.error_code, unknown);
    assert_eq!(fetch(&broker, -1).await.error_code, 0);
    assert_eq!(list_offset(&broker, -1, 3).await.0, fenced);
    assert_eq!(list_offset(&broker, -1, 5).await.0, unknown);

    // ListOffsets answers the epoch that wrote the offset, the latest for
    // the end; Metadata the partition's epoch.
    assert_eq!(list_offset(&broker, -1, 4).await, (0, 5, 4));
    assert_eq!(list_offset(&broker, -2, -1).await, (0, 0, 1));
    let ResponseKind::Metadata(md) = call_at(
        &broker,
        12,
        RequestKind::Metadata(MetadataRequest::default().with_topics(None)),
    )
    .await
    else {
        panic!("not a metadata response")
    };
    assert_eq!(md.topics[0].partitions[0].leader_epoch, 4);

    // Unknown topics and partitions.
    let unknown_tp = Err::UnknownTopicOrPartition.code();
    assert_eq!(
        end_offset(&broker, "t", 1, 4, 1).await,
        (unknown_tp, -1, -1)
    );
    assert_eq!(
        end_offset(&broker, "nope", 0, 4, 1).await,
        (unknown_tp, -1, -1)
    );

    // The epochs are on the volume in Apache's format (in the checkpoint
    // of the generation that led, the first) and survive a reopen.
    assert_eq!(
        std::fs::read_to_string(checkpoint_path(
            &broker.storage.topics.topic_dir("t").join("0"),
            1
        ))
        .unwrap(),
        "0\n2\n1 0\n4 3\n"
    );
    broker.storage.retain_partitions(|_, _| false);
    drop(broker.storage.partition(&topic, 0).await.unwrap());
    assert_eq!(end_offset(&broker, "t", 0, 4, 1).await, (0, 1, 3));

    // After DeleteRecords the first epoch starts at the log start offset.
    let p = broker.storage.partition(&topic, 0).await.unwrap();
    p.delete_records(4).await.unwrap();
    assert_eq!(end_offset(&broker, "t", 0, 4, 0).await, (0, 0, 4));
    assert_eq!(list_offset(&broker, -2, -1).await, (0, 4, 4));
    drop(p);

    // A broker that no longer leads the partition says so.
    broker.apply_assignment(assignment(6, BrokerState::Dead));
    let now = end_offset(&broker, "t", 0, 6, 4).await;
    assert_eq!(now.0, Err::NotLeaderOrFollower.code());
}

#[tokio::test]
async fn an_assignment_version_that_went_back_never_lowers_the_epoch_batches_carry() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker(dir.path()).await;
    broker.apply_assignment(assignment(9, BrokerState::Alive));
    // Partition t/0 may now be led by broker 1: lead it with broker 0 only.
    broker.apply_assignment(Assignment {
        version: 10,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    let p = broker.storage.partition(&topic, 0).await.unwrap();
    p.append(encode_batch(1, 0), 10).await.unwrap();
    // A controller that lost its document starts again at version 2.
    p.append(encode_batch(1, 0), 2).await.unwrap();
    assert_eq!(p.latest_epoch(), 10);
    assert_eq!(p.end_offset_for_epoch(10), (10, 2));
}
