//! Transactions on the wire: read_committed fetches, unverified batches,
//! Apache's errors of the transaction APIs, the authorizer asked first,
//! ListTransactions' filters.

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::storage::batch::tests::encode_batch;

#[tokio::test]
async fn read_committed_fetch_and_list_offsets_stop_at_the_last_stable_offset() {
    use crate::storage::batch::{tests::encode_txn_batch, ControlMarker};
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker(dir.path()).await;
    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    partition.append(encode_batch(2, 1000), 0).await.unwrap(); // 0..=1
                                                               // What a transaction's producer wrote once its coordinator added the
                                                               // partition (no coordinator serves yet: written below the API).
    partition
        .append(encode_txn_batch(7, 0, 0, 3), 0)
        .await
        .unwrap(); // 2..=4
    partition.append(encode_batch(1, 2000), 0).await.unwrap(); // 5

    let committed = fetched(&broker, 1).await;
    assert_eq!(
        (committed.high_watermark, committed.last_stable_offset),
        (6, 2)
    );
    assert_eq!(
        batch_offsets(&committed.records),
        [0],
        "nothing past the open transaction"
    );
    assert_eq!(committed.aborted_transactions, Some(vec![]));
    let uncommitted = fetched(&broker, 0).await;
    assert_eq!(uncommitted.last_stable_offset, 2);
    assert_eq!(batch_offsets(&uncommitted.records), [0, 2, 5]);
    assert_eq!(uncommitted.aborted_transactions, None);
    assert_eq!((latest(&broker, 1).await, latest(&broker, 0).await), (2, 6));

    let marker = ControlMarker {
        commit: false,
        coordinator_epoch: 0,
    };
    let at = partition
        .append_marker(7, 0, marker, 3000, 0)
        .await
        .unwrap();
    assert_eq!(at, 6);
    let committed = fetched(&broker, 1).await;
    assert_eq!(committed.last_stable_offset, 7);
    assert_eq!(batch_offsets(&committed.records), [0, 2, 5, 6]);
    assert_eq!(
        committed.aborted_transactions,
        Some(vec![fetch_response::AbortedTransaction::default()
            .with_producer_id(ProducerId(7))
            .with_first_offset(2)])
    );
    assert_eq!(latest(&broker, 1).await, 7);
}

#[tokio::test]
async fn an_unverified_transactional_batch_is_refused_and_nothing_is_appended() {
    use crate::storage::batch::tests::encode_txn_batch;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let produce = |transactional_id: Option<&'static str>| {
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_transactional_id(
                transactional_id.map(|t| TransactionalId(StrBytes::from_static_str(t))),
            )
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(name("t"))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(encode_txn_batch(7, 0, 0, 2).into())),
                ])]);
        let broker = broker.clone();
        async move {
            let Some(ResponseKind::Produce(resp)) =
                handle(context(broker, 9), RequestKind::Produce(req)).await
            else {
                panic!("not a produce response")
            };
            resp.responses[0].partition_responses[0].error_code
        }
    };
    use kafka_protocol::ResponseError as E;
    assert_eq!(
        produce(None).await,
        E::TransactionalIdAuthorizationFailed.code()
    );
    // The coordinator (this broker) never heard of the transaction.
    assert_eq!(
        produce(Some("unknown-txn")).await,
        E::InvalidProducerIdMapping.code()
    );
    assert_eq!(latest(&broker, 0).await, 0, "nothing appended");
}

/// The transaction APIs' error answers, as the feature matrix states them.
#[tokio::test]
async fn transaction_apis_answer_apaches_errors() {
    use crate::storage::batch::tests::encode_txn_batch;
    use kafka_protocol::ResponseError as E;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let call = |version: i16, req: RequestKind| call_at(&broker, version, req);

    // DescribeTransactions: "" and an unknown id.
    let ResponseKind::DescribeTransactions(d) = call(
        0,
        RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![txn_id(""), txn_id("nobody")]),
        ),
    )
    .await
    else {
        panic!()
    };
    let codes: Vec<i16> = d.transaction_states.iter().map(|s| s.error_code).collect();
    assert_eq!(
        codes,
        [E::InvalidRequest.code(), E::TransactionalIdNotFound.code()]
    );

    // ListTransactions: a bad pattern; an unknown state name echoed.
    let list = |req| call(2, RequestKind::ListTransactions(req));
    let ResponseKind::ListTransactions(l) = list(
        ListTransactionsRequest::default()
            .with_transactional_id_pattern(Some(StrBytes::from_static_str("(ab(cd"))),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(l.error_code, E::InvalidRegularExpression.code());
    let ResponseKind::ListTransactions(l) = list(
        ListTransactionsRequest::default()
            .with_state_filters(vec![StrBytes::from_static_str("Sleeping")]),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        l.unknown_state_filters,
        [StrBytes::from_static_str("Sleeping")]
    );

    // A transactional producer, then its requests.
    let Ok(crate::txn::core::TxnAnswer::InitProducerId {
        producer_id,
        error: 0,
        ..
    }) = broker.txns.init_producer_id("t-1", 60_000, None).await
    else {
        panic!("init refused")
    };
    use add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let add = |version: i16, topic: &'static str, epoch: i16| {
        call(
            version,
            RequestKind::AddPartitionsToTxn(
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(txn_id("t-1"))
                    .with_v3_and_below_producer_id(ProducerId(producer_id))
                    .with_v3_and_below_producer_epoch(epoch)
                    .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                        .with_name(name(topic))
                        .with_partitions(vec![0])]),
            ),
        )
    };
    let code = |r: ResponseKind| match r {
        ResponseKind::AddPartitionsToTxn(r) => {
            r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code
        }
        ResponseKind::EndTxn(r) => r.error_code,
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        other => panic!("{other:?}"),
    };
    assert_eq!(
        code(add(3, "no-such-topic", 0).await),
        E::UnknownTopicOrPartition.code()
    );
    // A stale epoch: PRODUCER_FENCED, INVALID_PRODUCER_EPOCH before v2.
    assert_eq!(code(add(1, "t", 7).await), E::InvalidProducerEpoch.code());
    assert_eq!(code(add(3, "t", 7).await), E::ProducerFenced.code());
    let end = |version: i16, epoch: i16| {
        call(
            version,
            RequestKind::EndTxn(
                EndTxnRequest::default()
                    .with_transactional_id(txn_id("t-1"))
                    .with_producer_id(ProducerId(producer_id))
                    .with_producer_epoch(epoch)
                    .with_committed(true),
            ),
        )
    };
    assert_eq!(code(end(1, 7).await), E::InvalidProducerEpoch.code());
    assert_eq!(code(end(3, 7).await), E::ProducerFenced.code());

    // A transactional batch to a partition its transaction never added.
    let produce = ProduceRequest::default()
        .with_acks(-1)
        .with_transactional_id(Some(txn_id("t-1")))
        .with_topic_data(vec![produce_request::TopicProduceData::default()
            .with_name(name("t"))
            .with_partition_data(vec![
                produce_request::PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(encode_txn_batch(producer_id, 0, 0, 1).into())),
            ])]);
    assert_eq!(
        code(call(9, RequestKind::Produce(produce.clone())).await),
        E::InvalidTxnState.code()
    );
    assert_eq!(
        code(call(11, RequestKind::Produce(produce)).await),
        E::TransactionAbortable.code()
    );
    assert_eq!(latest(&broker, 0).await, 0, "nothing appended");
}

/// The authorization hook of the transaction APIs, in KafkaApis' order and
/// with its answers: Write on the transactional id
/// (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), Read on the group
/// (GROUP_AUTHORIZATION_FAILED), the topic's Write or Read
/// (TOPIC_AUTHORIZATION_FAILED, the partitions that passed
/// OPERATION_NOT_ATTEMPTED), ClusterAction for the broker-to-broker calls
/// and IdempotentWrite or some topic's Write for an idempotent producer
/// (CLUSTER_AUTHORIZATION_FAILED), Describe on the transactional id for
/// DescribeTransactions and ListTransactions.
#[tokio::test]
async fn transaction_apis_ask_the_authorizer_first() {
    use crate::auth::tests::DenyOnly;
    use crate::auth::{Operation as Op, ResourceType as R, CLUSTER_NAME};
    use crate::storage::batch::tests::encode_txn_batch;
    use kafka_protocol::ResponseError as E;
    let dir = tempfile::tempdir().unwrap();
    let authorizer = DenyOnly::new(&[
        (Op::Write, R::TransactionalId, "denied-txn"),
        (Op::Describe, R::TransactionalId, "hidden-txn"),
        (Op::Read, R::Group, "denied-group"),
        (Op::Write, R::Topic, "secret"),
        (Op::Read, R::Topic, "secret"),
        (Op::ClusterAction, R::Cluster, CLUSTER_NAME),
        (Op::IdempotentWrite, R::Cluster, CLUSTER_NAME),
    ]);
    let (broker, _) = one_broker_with(dir.path(), Arc::new(authorizer)).await;
    broker
        .storage
        .topics
        .create_blocking("secret", 1, Default::default(), false)
        .unwrap();
    let call = |version: i16, req: RequestKind| call_at(&broker, version, req);
    let init = |id: Option<&'static str>| {
        call(
            4,
            RequestKind::InitProducerId(
                InitProducerIdRequest::default()
                    .with_transactional_id(id.map(txn_id))
                    .with_transaction_timeout_ms(60_000)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
            ),
        )
    };
    let init_code = |r: ResponseKind| match r {
        ResponseKind::InitProducerId(r) => r.error_code,
        other => panic!("{other:?}"),
    };
    let denied_txn = E::TransactionalIdAuthorizationFailed.code();
    assert_eq!(init_code(init(Some("denied-txn")).await), denied_txn);
    // Neither IdempotentWrite nor Write on every topic: no idempotent id.
    assert_eq!(
        init_code(init(None).await),
        E::ClusterAuthorizationFailed.code()
    );
    let ResponseKind::InitProducerId(ok) = init(Some("txn-ok")).await else {
        panic!()
    };
    assert_eq!(ok.error_code, 0);
    assert_eq!(init_code(init(Some("hidden-txn")).await), 0);

    // AddPartitionsToTxn v3: the id first, then each topic.
    use add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let add = |id: &'static str, topics: &[&'static str]| {
        call(
            3,
            RequestKind::AddPartitionsToTxn(
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(txn_id(id))
                    .with_v3_and_below_producer_id(ok.producer_id)
                    .with_v3_and_below_producer_epoch(ok.producer_epoch)
                    .with_v3_and_below_topics(
                        topics
                            .iter()
                            .map(|t| {
                                AddPartitionsToTxnTopic::default()
                                    .with_name(name(t))
                                    .with_partitions(vec![0])
                            })
                            .collect(),
                    ),
            ),
        )
    };
    let add_codes = |r: ResponseKind| match r {
        ResponseKind::AddPartitionsToTxn(r) => r
            .results_by_topic_v3_and_below
            .iter()
            .map(|t| {
                (
                    t.name.0.to_string(),
                    t.results_by_partition[0].partition_error_code,
                )
            })
            .collect::<Vec<_>>(),
        other => panic!("{other:?}"),
    };
    assert_eq!(
        add_codes(add("denied-txn", &["t"]).await),
        [("t".to_string(), denied_txn)]
    );
    assert_eq!(
        add_codes(add("txn-ok", &["t", "secret"]).await),
        [
            ("t".to_string(), E::OperationNotAttempted.code()),
            ("secret".to_string(), E::TopicAuthorizationFailed.code())
        ]
    );
    // v4+ is for brokers: ClusterAction.
    let ResponseKind::AddPartitionsToTxn(r) = call(
        4,
        RequestKind::AddPartitionsToTxn(AddPartitionsToTxnRequest::default()),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, E::ClusterAuthorizationFailed.code());

    // AddOffsetsToTxn: the id, then Read on the group.
    let add_offsets = |id: &'static str, g: &'static str| {
        call(
            3,
            RequestKind::AddOffsetsToTxn(
                AddOffsetsToTxnRequest::default()
                    .with_transactional_id(txn_id(id))
                    .with_producer_id(ok.producer_id)
                    .with_producer_epoch(ok.producer_epoch)
                    .with_group_id(group(g)),
            ),
        )
    };
    let single = |r: ResponseKind| match r {
        ResponseKind::AddOffsetsToTxn(r) => r.error_code,
        ResponseKind::EndTxn(r) => r.error_code,
        ResponseKind::Produce(r) => r.responses[0].partition_responses[0].error_code,
        ResponseKind::TxnOffsetCommit(r) => r.topics[0].partitions[0].error_code,
        ResponseKind::OffsetCommit(r) => r.topics[0].partitions[0].error_code,
        ResponseKind::DescribeProducers(r) => r.topics[0].partitions[0].error_code,
        ResponseKind::WriteTxnMarkers(r) => r.markers[0].topics[0].partitions[0].error_code,
        other => panic!("{other:?}"),
    };
    assert_eq!(single(add_offsets("denied-txn", OURS).await), denied_txn);
    assert_eq!(
        single(add_offsets("txn-ok", "denied-group").await),
        E::GroupAuthorizationFailed.code()
    );

    // EndTxn.
    let end = EndTxnRequest::default()
        .with_transactional_id(txn_id("denied-txn"))
        .with_producer_id(ok.producer_id)
        .with_producer_epoch(ok.producer_epoch)
        .with_committed(true);
    assert_eq!(single(call(3, RequestKind::EndTxn(end)).await), denied_txn);

    // TxnOffsetCommit: the id, the group, then each topic's Read.
    let txn_commit = |id: &'static str, g: &'static str, topic: &'static str| {
        use txn_offset_commit_request::*;
        call(
            3,
            RequestKind::TxnOffsetCommit(
                TxnOffsetCommitRequest::default()
                    .with_transactional_id(txn_id(id))
                    .with_group_id(group(g))
                    .with_producer_id(ok.producer_id)
                    .with_producer_epoch(ok.producer_epoch)
                    .with_generation_id(-1)
                    .with_topics(vec![TxnOffsetCommitRequestTopic::default()
                        .with_name(name(topic))
                        .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(1)])]),
            ),
        )
    };
    assert_eq!(
        single(txn_commit("denied-txn", OURS, "t").await),
        denied_txn
    );
    assert_eq!(
        single(txn_commit("txn-ok", "denied-group", "t").await),
        E::GroupAuthorizationFailed.code()
    );
    assert_eq!(
        single(txn_commit("txn-ok", OURS, "secret").await),
        E::TopicAuthorizationFailed.code()
    );

    // OffsetCommit: the group, then each topic's Read.
    let commit = |g: &'static str, topic: &'static str| {
        call(
            8,
            RequestKind::OffsetCommit(
                OffsetCommitRequest::default()
                    .with_group_id(group(g))
                    .with_generation_id_or_member_epoch(-1)
                    .with_topics(vec![commit_topic(topic, &[0])]),
            ),
        )
    };
    assert_eq!(
        single(commit("denied-group", "t").await),
        E::GroupAuthorizationFailed.code()
    );
    assert_eq!(
        single(commit(OURS, "secret").await),
        E::TopicAuthorizationFailed.code()
    );
    assert_eq!(single(commit(OURS, "t").await), 0);

    // Produce of a transactional batch under a denied id.
    use produce_request::*;
    let produce = ProduceRequest::default()
        .with_acks(-1)
        .with_transactional_id(Some(txn_id("denied-txn")))
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name("t"))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(
                    encode_txn_batch(ok.producer_id.0, ok.producer_epoch, 0, 1).into(),
                ))])]);
    assert_eq!(
        single(call(9, RequestKind::Produce(produce)).await),
        denied_txn
    );

    // DescribeProducers: the topic's Read.
    let describe_producers = DescribeProducersRequest::default().with_topics(vec![
        describe_producers_request::TopicRequest::default()
            .with_name(name("secret"))
            .with_partition_indexes(vec![0]),
    ]);
    assert_eq!(
        single(call(0, RequestKind::DescribeProducers(describe_producers)).await),
        E::TopicAuthorizationFailed.code()
    );

    // WriteTxnMarkers: ClusterAction, for every partition.
    use write_txn_markers_request::*;
    let markers =
        WriteTxnMarkersRequest::default().with_markers(vec![WritableTxnMarker::default()
            .with_producer_id(ok.producer_id)
            .with_producer_epoch(ok.producer_epoch)
            .with_transaction_result(true)
            .with_topics(vec![WritableTxnMarkerTopic::default()
                .with_name(name("t"))
                .with_partition_indexes(vec![0])])]);
    assert_eq!(
        single(call(1, RequestKind::WriteTxnMarkers(markers)).await),
        E::ClusterAuthorizationFailed.code()
    );

    // Describe on the id: DescribeTransactions refuses it, ListTransactions
    // leaves it out.
    let ResponseKind::DescribeTransactions(d) = call(
        0,
        RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![txn_id("hidden-txn"), txn_id("txn-ok")]),
        ),
    )
    .await
    else {
        panic!()
    };
    let codes: Vec<i16> = d.transaction_states.iter().map(|s| s.error_code).collect();
    assert_eq!(codes, [denied_txn, 0]);
    let ResponseKind::ListTransactions(l) = call(
        1,
        RequestKind::ListTransactions(ListTransactionsRequest::default()),
    )
    .await
    else {
        panic!()
    };
    let listed: Vec<String> = l
        .transaction_states
        .iter()
        .map(|s| s.transactional_id.0.to_string())
        .collect();
    assert_eq!(listed, ["txn-ok"]);
}

/// ListTransactions' producer-id and duration filters, as Apache's
/// `TransactionStateManager.listTransactionStates` applies them: only the
/// ids of the listed producers; only transactions running longer than the
/// duration (an id with no transaction started counts from -1, as Apache's
/// start timestamp, so it passes).
#[tokio::test]
async fn list_transactions_filters_by_producer_id_and_duration() {
    use add_partitions_to_txn_request::AddPartitionsToTxnTopic;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let call = |version: i16, req: RequestKind| call_at(&broker, version, req);
    let mut producers = Vec::new();
    for id in ["idle", "busy"] {
        let ResponseKind::InitProducerId(r) = call(
            4,
            RequestKind::InitProducerId(
                InitProducerIdRequest::default()
                    .with_transactional_id(Some(txn_id(id)))
                    .with_transaction_timeout_ms(60_000)
                    .with_producer_id(ProducerId(-1))
                    .with_producer_epoch(-1),
            ),
        )
        .await
        else {
            panic!()
        };
        assert_eq!(r.error_code, 0);
        producers.push((r.producer_id, r.producer_epoch));
    }
    let (busy_id, busy_epoch) = producers[1];
    let ResponseKind::AddPartitionsToTxn(r) = call(
        3,
        RequestKind::AddPartitionsToTxn(
            AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(txn_id("busy"))
                .with_v3_and_below_producer_id(busy_id)
                .with_v3_and_below_producer_epoch(busy_epoch)
                .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![0])]),
        ),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(
        r.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    let list = |req: ListTransactionsRequest| {
        let call = &call;
        async move {
            let ResponseKind::ListTransactions(l) =
                call(1, RequestKind::ListTransactions(req)).await
            else {
                panic!()
            };
            let mut ids: Vec<String> = l
                .transaction_states
                .iter()
                .map(|s| s.transactional_id.0.to_string())
                .collect();
            ids.sort();
            ids
        }
    };
    assert_eq!(
        list(ListTransactionsRequest::default()).await,
        ["busy", "idle"]
    );
    assert_eq!(
        list(ListTransactionsRequest::default().with_producer_id_filters(vec![busy_id])).await,
        ["busy"]
    );
    assert_eq!(
        list(
            ListTransactionsRequest::default().with_producer_id_filters(vec![ProducerId(999_999)])
        )
        .await,
        Vec::<String>::new()
    );
    // Running for less than an hour: "busy" is left out.
    assert_eq!(
        list(ListTransactionsRequest::default().with_duration_filter(3_600_000)).await,
        ["idle"]
    );
}
