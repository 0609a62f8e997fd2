//! Group APIs on the wire: a consumer-protocol member across a restart,
//! OffsetCommit's per-partition errors as Apache answers them.

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::broker::BrokerConfig;

/// A consumer-protocol member over the wire: it joins, gets every
/// partition of its topic by id, commits with its member epoch (a stale
/// epoch is refused) and reads the offset back; its group survives a
/// restart of the broker with its epochs.
#[tokio::test]
async fn a_consumer_protocol_member_joins_commits_and_survives_a_restart() {
    use kafka_protocol::messages::offset_commit_request::*;
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let broker =
            crate::serve::open(BrokerConfig::new(0, dir.path().into(), "127.0.0.1", 9092)).unwrap();
        broker.apply_assignment(two_broker_assignment());
        broker
    };
    let broker = open();
    let group_id = "solo";
    assert_eq!(broker.routing().unwrap().owner_of_group(group_id), Some(0));
    let topic = broker
        .storage
        .topics
        .create_blocking("t", 3, Default::default(), false)
        .unwrap();
    let heartbeat = |epoch: i32, full: bool| {
        let r = ConsumerGroupHeartbeatRequest::default()
            .with_group_id(group(group_id))
            .with_member_id(StrBytes::from_static_str("m-1"))
            .with_member_epoch(epoch);
        RequestKind::ConsumerGroupHeartbeat(if full {
            r.with_rebalance_timeout_ms(5000)
                .with_subscribed_topic_names(Some(vec![name("t")]))
                .with_topic_partitions(Some(Vec::new()))
        } else {
            r.with_rebalance_timeout_ms(-1)
        })
    };
    let ResponseKind::ConsumerGroupHeartbeat(joined) =
        call_at(&broker, 0, heartbeat(0, true)).await
    else {
        panic!("not a heartbeat answer")
    };
    assert_eq!(joined.error_code, 0, "{:?}", joined.error_message);
    assert_eq!(joined.member_epoch, 1);
    assert_eq!(joined.heartbeat_interval_ms, 5000);
    let assigned = joined.assignment.expect("an assignment").topic_partitions;
    assert_eq!(assigned.len(), 1);
    assert_eq!(assigned[0].topic_id, topic.id);
    assert_eq!(assigned[0].partitions, vec![0, 1, 2]);

    // ConsumerGroupDescribe: the group as its coordinator holds it; a
    // group that does not exist is GROUP_ID_NOT_FOUND with Apache's message.
    let routing = broker.routing().unwrap();
    let nothing = (0..)
        .map(|i| format!("nothing-{i}"))
        .find(|g| routing.owner_of_group(g) == Some(0))
        .unwrap();
    let described = call_at(
        &broker,
        1,
        RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![group(group_id), group(&nothing)]),
        ),
    )
    .await;
    let ResponseKind::ConsumerGroupDescribe(described) = described else {
        panic!("not a describe answer")
    };
    let g = &described.groups[0];
    assert_eq!(g.error_code, 0);
    assert_eq!(
        (
            g.group_state.as_str(),
            g.group_epoch,
            g.assignment_epoch,
            g.assignor_name.as_str()
        ),
        ("Stable", 1, 1, "uniform")
    );
    let m = &g.members[0];
    assert_eq!(
        (m.member_id.as_str(), m.member_epoch, m.member_type),
        ("m-1", 1, 1)
    );
    assert_eq!(m.client_host.as_str(), "/127.0.0.1");
    assert_eq!(m.subscribed_topic_names, vec![name("t")]);
    let tp = &m.assignment.topic_partitions[0];
    assert_eq!(
        (tp.topic_id, tp.topic_name.0.as_str(), tp.partitions.clone()),
        (topic.id, "t", vec![0, 1, 2])
    );
    assert_eq!(m.target_assignment, m.assignment);
    let missing = &described.groups[1];
    assert_eq!(missing.error_code, Err::GroupIdNotFound.code());
    assert_eq!(
        missing.error_message.as_deref(),
        Some(format!("Group {nothing} not found.").as_str())
    );

    let commit = |epoch: i32| {
        RequestKind::OffsetCommit(
            OffsetCommitRequest::default()
                .with_group_id(group(group_id))
                .with_generation_id_or_member_epoch(epoch)
                .with_member_id(StrBytes::from_static_str("m-1"))
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(1)
                        .with_committed_offset(17)])]),
        )
    };
    let code_of = |r: ResponseKind| match r {
        ResponseKind::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        other => panic!("not a commit answer: {other:?}"),
    };
    assert_eq!(
        code_of(call_at(&broker, 9, commit(7)).await),
        Err::StaleMemberEpoch.code()
    );
    assert_eq!(code_of(call_at(&broker, 9, commit(1)).await), 0);
    drop(broker);

    // A new broker process on the same volume: same member, same epoch.
    let broker = open();
    let ResponseKind::ConsumerGroupHeartbeat(again) =
        call_at(&broker, 0, heartbeat(1, false)).await
    else {
        panic!("not a heartbeat answer")
    };
    assert_eq!((again.error_code, again.member_epoch), (0, 1));
    assert!(again.assignment.is_none(), "nothing changed");
    let fetched = call_at(
        &broker,
        8,
        RequestKind::OffsetFetch(OffsetFetchRequest::default().with_groups(vec![
                kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(group(group_id))
                    .with_topics(None),
            ])),
    )
    .await;
    let ResponseKind::OffsetFetch(fetched) = fetched else {
        panic!("not a fetch answer")
    };
    let partitions = &fetched.groups[0].topics[0].partitions;
    assert_eq!(
        (
            partitions[0].partition_index,
            partitions[0].committed_offset
        ),
        (1, 17)
    );
}

/// KafkaApisTest's testOffsetCommitWithInvalidPartition and
/// testTxnOffsetCommitWithInvalidPartition, and librdkafka's 0030
/// `do_nonexist_commit`: a partition the topic does not have, or a topic that
/// does not exist, answers UNKNOWN_TOPIC_OR_PARTITION and nothing of it is
/// stored; the rest of the request is committed.
#[tokio::test]
async fn offset_commit_for_an_unknown_topic_or_partition_answers_unknown_topic_or_partition() {
    use kafka_protocol::ResponseError as E;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let unknown = E::UnknownTopicOrPartition.code();
    let commit = |generation: i32, topics| {
        let broker = broker.clone();
        async move {
            let req = OffsetCommitRequest::default()
                .with_group_id(group("solo"))
                .with_generation_id_or_member_epoch(generation)
                .with_topics(topics);
            let Some(ResponseKind::OffsetCommit(r)) =
                handle(context(broker, 9), RequestKind::OffsetCommit(req)).await
            else {
                panic!("not an OffsetCommit response")
            };
            commit_codes(
                r.topics
                    .into_iter()
                    .map(|t| {
                        let ps = t
                            .partitions
                            .iter()
                            .map(|p| (p.partition_index, p.error_code))
                            .collect();
                        (t.name, ps)
                    })
                    .collect(),
            )
        }
    };

    let codes = commit(
        -1,
        vec![commit_topic("t", &[0, 1, -1]), commit_topic("nope", &[0])],
    )
    .await;
    assert_eq!(
        codes,
        [
            ("nope".to_string(), 0, unknown),
            ("t".to_string(), -1, unknown),
            ("t".to_string(), 0, 0),
            ("t".to_string(), 1, unknown),
        ]
    );
    // Only the partition that exists was stored.
    let fetch = OffsetFetchRequest::default()
        .with_group_id(group("solo"))
        .with_topics(None);
    let Some(ResponseKind::OffsetFetch(f)) =
        handle(context(broker.clone(), 7), RequestKind::OffsetFetch(fetch)).await
    else {
        panic!("not an OffsetFetch response")
    };
    let stored: Vec<(String, i32, i64)> = f
        .topics
        .iter()
        .flat_map(|t| {
            t.partitions
                .iter()
                .map(|p| (t.name.0.to_string(), p.partition_index, p.committed_offset))
        })
        .collect();
    assert_eq!(stored, [("t".to_string(), 0, 5)]);

    // Nothing valid: the coordinator is not asked, so a bad generation of a
    // group that does not exist still answers per partition as Apache does.
    let codes = commit(7, vec![commit_topic("nope", &[0, 1])]).await;
    assert_eq!(
        codes,
        [
            ("nope".to_string(), 0, unknown),
            ("nope".to_string(), 1, unknown)
        ]
    );

    // TxnOffsetCommit: the same split before the coordinator.
    let txn = TxnOffsetCommitRequest::default()
        .with_transactional_id(TransactionalId(StrBytes::from_static_str("txn-x")))
        .with_group_id(group("solo"))
        .with_producer_id(ProducerId(5))
        .with_generation_id(-1)
        .with_topics(
            [("t", 1), ("nope", 0)]
                .iter()
                .map(|&(t, p)| {
                    txn_offset_commit_request::TxnOffsetCommitRequestTopic::default()
                        .with_name(name(t))
                        .with_partitions(vec![
                            txn_offset_commit_request::TxnOffsetCommitRequestPartition::default()
                                .with_partition_index(p)
                                .with_committed_offset(3),
                        ])
                })
                .collect(),
        );
    let Some(ResponseKind::TxnOffsetCommit(r)) = handle(
        context(broker.clone(), 5),
        RequestKind::TxnOffsetCommit(txn),
    )
    .await
    else {
        panic!("not a TxnOffsetCommit response")
    };
    let codes = commit_codes(
        r.topics
            .into_iter()
            .map(|t| {
                let ps = t
                    .partitions
                    .iter()
                    .map(|p| (p.partition_index, p.error_code))
                    .collect();
                (t.name, ps)
            })
            .collect(),
    );
    assert_eq!(
        codes,
        [
            ("nope".to_string(), 0, unknown),
            ("t".to_string(), 1, unknown)
        ]
    );
}
