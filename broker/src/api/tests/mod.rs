//! Dispatch tests: every advertised API and version reaches a handler and
//! its response encodes at that version, on the paths that fill in
//! version-specific fields (data, errors, another broker leading).

use std::sync::Arc;

use kaas_shared::{Assignment, BrokerInfo};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::broker::{Broker, BrokerConfig};
use crate::storage::batch::tests::encode_batch;

const PARTITIONS: i32 = 4;
/// Group ids broker 0 does and does not coordinate under the test assignment.
const OURS: &str = "group-a";
const THEIRS: &str = "group-b";

fn group(s: &str) -> GroupId {
    GroupId(StrBytes::from_string(s.to_string()))
}

pub(in crate::api) fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn request(
    key: ApiKey,
    version: i16,
    topic_id: uuid::Uuid,
    routing: &kaas_shared::Routing,
) -> RequestKind {
    let partitions = 0..PARTITIONS + 1; // the last one does not exist
    match key {
        ApiKey::Produce => {
            use produce_request::*;
            let data = TopicProduceData::default()
                .with_name(if version < 13 { name("t") } else { name("") })
                .with_topic_id(if version >= 13 {
                    topic_id
                } else {
                    uuid::Uuid::nil()
                })
                .with_partition_data(
                    partitions
                        .map(|p| {
                            PartitionProduceData::default()
                                .with_index(p)
                                .with_records(Some(encode_batch(2, 1000).into()))
                        })
                        .collect(),
                );
            RequestKind::Produce(
                ProduceRequest::default()
                    .with_acks(-1)
                    .with_topic_data(vec![data]),
            )
        }
        ApiKey::Fetch => {
            use fetch_request::*;
            let topic = FetchTopic::default()
                .with_topic(if version < 13 { name("t") } else { name("") })
                .with_topic_id(if version >= 13 {
                    topic_id
                } else {
                    uuid::Uuid::nil()
                })
                .with_partitions(
                    partitions
                        .map(|p| {
                            FetchPartition::default()
                                .with_partition(p)
                                .with_partition_max_bytes(1 << 20)
                        })
                        .collect(),
                );
            RequestKind::Fetch(
                FetchRequest::default()
                    .with_max_wait_ms(0)
                    .with_max_bytes(1 << 20)
                    .with_isolation_level(if version >= 4 { 1 } else { 0 })
                    .with_topics(vec![topic]),
            )
        }
        ApiKey::ListOffsets => {
            use list_offsets_request::*;
            let parts = [-1i64, -2, -3, 1000, 5000]
                .iter()
                .flat_map(|ts| {
                    (0..PARTITIONS + 1).map(move |p| {
                        ListOffsetsPartition::default()
                            .with_partition_index(p)
                            .with_timestamp(*ts)
                    })
                })
                .collect();
            RequestKind::ListOffsets(ListOffsetsRequest::default().with_topics(vec![
                ListOffsetsTopic::default().with_name(name("t")).with_partitions(parts),
            ]))
        }
        ApiKey::OffsetForLeaderEpoch => {
            use offset_for_leader_epoch_request::*;
            let parts = (0..PARTITIONS + 1)
                .map(|p| {
                    OffsetForLeaderPartition::default()
                        .with_partition(p)
                        .with_current_leader_epoch(routing.leader_epoch())
                        .with_leader_epoch(0)
                })
                .collect();
            RequestKind::OffsetForLeaderEpoch(OffsetForLeaderEpochRequest::default().with_topics(
                vec![OffsetForLeaderTopic::default()
                    .with_topic(name("t"))
                    .with_partitions(parts)],
            ))
        }
        ApiKey::Metadata => {
            RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(name("t"))),
                metadata_request::MetadataRequestTopic::default().with_name(Some(name("bad/name"))),
            ])))
        }
        ApiKey::ApiVersions => RequestKind::ApiVersions(
            ApiVersionsRequest::default()
                .with_client_software_name(StrBytes::from_static_str("test"))
                .with_client_software_version(StrBytes::from_static_str("1.0")),
        ),
        ApiKey::CreateTopics => {
            use create_topics_request::*;
            let topic = |n: &str| {
                CreatableTopic::default()
                    .with_name(name(n))
                    .with_num_partitions(1)
                    .with_replication_factor(-1)
                    .with_configs(vec![CreatableTopicConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("1000")))])
            };
            RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(vec![
                topic(&format!("new-{version}")),
                topic("t"),
                topic("bad/name"),
            ]))
        }
        ApiKey::DeleteTopics => {
            let n = format!("new-{version}");
            let mut req = DeleteTopicsRequest::default();
            if version >= 6 {
                req.topics = vec![
                    delete_topics_request::DeleteTopicState::default().with_name(Some(name(&n))),
                    delete_topics_request::DeleteTopicState::default()
                        .with_name(None)
                        .with_topic_id(uuid::Uuid::new_v4()),
                ];
            } else {
                req.topic_names = vec![name(&n), name("missing")];
            }
            RequestKind::DeleteTopics(req)
        }
        ApiKey::FindCoordinator => RequestKind::FindCoordinator(if version >= 4 {
            FindCoordinatorRequest::default().with_coordinator_keys(vec![
                StrBytes::from_static_str(OURS),
                StrBytes::from_static_str(THEIRS),
            ])
        } else {
            FindCoordinatorRequest::default().with_key(StrBytes::from_static_str(OURS))
        }),
        // A fresh group per version, so no join waits for earlier members.
        ApiKey::JoinGroup => RequestKind::JoinGroup(
            JoinGroupRequest::default()
                .with_group_id(group(
                    &(0..)
                        .map(|i| format!("join-{version}-{i}"))
                        .find(|g| routing.owner_of_group(g) == Some(0))
                        .unwrap(),
                ))
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(1_000)
                .with_protocol_type(StrBytes::from_static_str("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
                )
                .with_name(StrBytes::from_static_str("range"))
                .with_metadata(bytes::Bytes::from_static(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0]))]),
        ),
        ApiKey::SyncGroup => RequestKind::SyncGroup(
            SyncGroupRequest::default()
                .with_group_id(group(OURS))
                .with_member_id(StrBytes::from_static_str("nobody")),
        ),
        ApiKey::Heartbeat => RequestKind::Heartbeat(
            HeartbeatRequest::default()
                .with_group_id(group(OURS))
                .with_member_id(StrBytes::from_static_str("nobody")),
        ),
        ApiKey::LeaveGroup => {
            let mut r = LeaveGroupRequest::default().with_group_id(group(OURS));
            if version >= 3 {
                r.members = vec![leave_group_request::MemberIdentity::default()
                    .with_member_id(StrBytes::from_static_str("nobody"))];
            } else {
                r.member_id = StrBytes::from_static_str("nobody");
            }
            RequestKind::LeaveGroup(r)
        }
        ApiKey::OffsetCommit => {
            use offset_commit_request::*;
            RequestKind::OffsetCommit(
                OffsetCommitRequest::default()
                    .with_group_id(group("solo"))
                    .with_generation_id_or_member_epoch(-1)
                    .with_topics(vec![OffsetCommitRequestTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![OffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(5)
                            .with_committed_leader_epoch(if version >= 6 { 0 } else { -1 })
                            .with_committed_metadata(Some(StrBytes::from_static_str("m")))])]),
            )
        }
        ApiKey::OffsetFetch => {
            use offset_fetch_request::*;
            let mut r = OffsetFetchRequest::default();
            if version >= 8 {
                r.groups = [OURS, THEIRS, "solo"]
                    .iter()
                    .map(|g| {
                        OffsetFetchRequestGroup::default()
                            .with_group_id(group(g))
                            .with_topics(None)
                    })
                    .collect();
            } else {
                r.group_id = group("solo");
                r.topics = if version >= 2 {
                    None
                } else {
                    Some(vec![OffsetFetchRequestTopic::default()
                        .with_name(name("t"))
                        .with_partition_indexes(vec![0, 1])])
                };
            }
            RequestKind::OffsetFetch(r)
        }
        ApiKey::DescribeGroups => RequestKind::DescribeGroups(
            DescribeGroupsRequest::default()
                .with_groups(vec![group(OURS), group(THEIRS), group("solo")])
                .with_include_authorized_operations(version >= 3),
        ),
        ApiKey::ListGroups => RequestKind::ListGroups(ListGroupsRequest::default()),
        ApiKey::DeleteGroups => {
            RequestKind::DeleteGroups(DeleteGroupsRequest::default().with_groups_names(vec![
                group(OURS),
                group(THEIRS),
                group("none"),
            ]))
        }
        ApiKey::OffsetDelete => {
            use offset_delete_request::*;
            RequestKind::OffsetDelete(
                OffsetDeleteRequest::default()
                    .with_group_id(group("solo"))
                    .with_topics(vec![OffsetDeleteRequestTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![
                            OffsetDeleteRequestPartition::default().with_partition_index(1)
                        ])]),
            )
        }
        ApiKey::InitProducerId => RequestKind::InitProducerId(InitProducerIdRequest::default()),
        ApiKey::AddPartitionsToTxn => {
            use add_partitions_to_txn_request::*;
            let topics = vec![AddPartitionsToTxnTopic::default()
                .with_name(name("t"))
                .with_partitions(partitions.collect())];
            let id = TransactionalId(StrBytes::from_static_str("txn-x"));
            RequestKind::AddPartitionsToTxn(if version <= 3 {
                AddPartitionsToTxnRequest::default()
                    .with_v3_and_below_transactional_id(id)
                    .with_v3_and_below_producer_id(ProducerId(5))
                    .with_v3_and_below_topics(topics)
            } else {
                AddPartitionsToTxnRequest::default().with_transactions(vec![
                    AddPartitionsToTxnTransaction::default()
                        .with_transactional_id(id)
                        .with_producer_id(ProducerId(5))
                        .with_verify_only(true)
                        .with_topics(topics),
                ])
            })
        }
        ApiKey::EndTxn => RequestKind::EndTxn(
            EndTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_static_str("txn-x")))
                .with_producer_id(ProducerId(5))
                .with_committed(true),
        ),
        ApiKey::WriteTxnMarkers => {
            use write_txn_markers_request::*;
            RequestKind::WriteTxnMarkers(WriteTxnMarkersRequest::default().with_markers(vec![
                WritableTxnMarker::default()
                    .with_producer_id(ProducerId(5))
                    .with_transaction_result(false)
                    .with_topics(vec![WritableTxnMarkerTopic::default()
                        .with_name(name("t"))
                        .with_partition_indexes(partitions.collect())]),
            ]))
        }
        ApiKey::AddOffsetsToTxn => RequestKind::AddOffsetsToTxn(
            AddOffsetsToTxnRequest::default()
                .with_transactional_id(TransactionalId(StrBytes::from_static_str("txn-x")))
                .with_producer_id(ProducerId(5))
                .with_group_id(group(OURS)),
        ),
        ApiKey::TxnOffsetCommit => {
            use txn_offset_commit_request::*;
            RequestKind::TxnOffsetCommit(
                TxnOffsetCommitRequest::default()
                    .with_transactional_id(TransactionalId(StrBytes::from_static_str("txn-x")))
                    .with_group_id(group(OURS))
                    .with_producer_id(ProducerId(5))
                    .with_generation_id(-1)
                    .with_topics(vec![TxnOffsetCommitRequestTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![TxnOffsetCommitRequestPartition::default()
                            .with_partition_index(0)
                            .with_committed_offset(3)])]),
            )
        }
        ApiKey::DescribeProducers => {
            use describe_producers_request::*;
            RequestKind::DescribeProducers(DescribeProducersRequest::default().with_topics(vec![
                TopicRequest::default()
                    .with_name(name("t"))
                    .with_partition_indexes(partitions.collect()),
            ]))
        }
        ApiKey::DescribeTransactions => RequestKind::DescribeTransactions(
            DescribeTransactionsRequest::default().with_transactional_ids(vec![
                TransactionalId(StrBytes::from_static_str("txn-x")),
                TransactionalId(StrBytes::from_static_str("")),
            ]),
        ),
        ApiKey::ListTransactions => RequestKind::ListTransactions(
            ListTransactionsRequest::default()
                .with_state_filters(vec![StrBytes::from_static_str("Ongoing")]),
        ),
        // The broker under test has no authorizer: SECURITY_DISABLED.
        ApiKey::DescribeAcls => RequestKind::DescribeAcls(
            DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1),
        ),
        ApiKey::CreateAcls => RequestKind::CreateAcls(CreateAclsRequest::default().with_creations(
            vec![create_acls_request::AclCreation::default()
                .with_resource_type(2)
                .with_resource_name(StrBytes::from_static_str("t"))
                .with_resource_pattern_type(3)
                .with_principal(StrBytes::from_static_str("User:alice"))
                .with_host(StrBytes::from_static_str("*"))
                .with_operation(3)
                .with_permission_type(3)],
        )),
        ApiKey::DeleteAcls => RequestKind::DeleteAcls(DeleteAclsRequest::default().with_filters(
            vec![delete_acls_request::DeleteAclsFilter::default()
                .with_resource_type_filter(1)
                .with_pattern_type_filter(1)
                .with_operation(1)
                .with_permission_type(1)],
        )),
        ApiKey::SaslHandshake => RequestKind::SaslHandshake(
            SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str("PLAIN")),
        ),
        ApiKey::SaslAuthenticate => {
            RequestKind::SaslAuthenticate(SaslAuthenticateRequest::default())
        }
        ApiKey::DescribeUserScramCredentials => {
            RequestKind::DescribeUserScramCredentials(DescribeUserScramCredentialsRequest::default())
        }
        ApiKey::AlterUserScramCredentials => RequestKind::AlterUserScramCredentials(
            AlterUserScramCredentialsRequest::default().with_deletions(vec![
                alter_user_scram_credentials_request::ScramCredentialDeletion::default()
                    .with_name(StrBytes::from_static_str("nobody"))
                    .with_mechanism(1),
            ]),
        ),
        ApiKey::ConsumerGroupHeartbeat => RequestKind::ConsumerGroupHeartbeat(
            ConsumerGroupHeartbeatRequest::default()
                .with_group_id(group("consumer-a"))
                .with_member_id(StrBytes::from_static_str("m-1"))
                .with_member_epoch(0)
                .with_rebalance_timeout_ms(5000)
                .with_subscribed_topic_names(Some(vec![name("t")]))
                .with_topic_partitions(Some(Vec::new())),
        ),
        ApiKey::ConsumerGroupDescribe => RequestKind::ConsumerGroupDescribe(
            ConsumerGroupDescribeRequest::default()
                .with_group_ids(vec![group("consumer-a"), group(OURS), group(THEIRS)])
                .with_include_authorized_operations(true),
        ),
        ApiKey::DescribeConfigs => RequestKind::DescribeConfigs(
            DescribeConfigsRequest::default()
                .with_resources(vec![
                    describe_configs_request::DescribeConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(StrBytes::from_static_str("t")),
                ])
                .with_include_synonyms(true),
        ),
        ApiKey::DescribeTopicPartitions => RequestKind::DescribeTopicPartitions(
            DescribeTopicPartitionsRequest::default()
                .with_topics(vec![
                    describe_topic_partitions_request::TopicRequest::default().with_name(name("t")),
                ])
                .with_response_partition_limit(2000),
        ),
        ApiKey::DescribeLogDirs => {
            RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None))
        }
        ApiKey::DescribeCluster => RequestKind::DescribeCluster(
            DescribeClusterRequest::default()
                .with_endpoint_type(1)
                .with_include_cluster_authorized_operations(true),
        ),
        ApiKey::CreatePartitions => {
            use create_partitions_request::*;
            RequestKind::CreatePartitions(
                CreatePartitionsRequest::default()
                    .with_topics(vec![CreatePartitionsTopic::default()
                        .with_name(name("t"))
                        .with_count(PARTITIONS + 1)])
                    .with_validate_only(true),
            )
        }
        ApiKey::DeleteRecords => {
            use delete_records_request::*;
            RequestKind::DeleteRecords(DeleteRecordsRequest::default().with_topics(vec![
                DeleteRecordsTopic::default()
                    .with_name(name("t"))
                    .with_partitions(
                        (0..PARTITIONS + 1)
                            .map(|p| {
                                DeleteRecordsPartition::default()
                                    .with_partition_index(p)
                                    .with_offset(-1)
                            })
                            .collect(),
                    ),
            ]))
        }
        ApiKey::IncrementalAlterConfigs => {
            use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
            RequestKind::IncrementalAlterConfigs(
                IncrementalAlterConfigsRequest::default().with_resources(vec![
                    AlterConfigsResource::default()
                        .with_resource_type(2)
                        .with_resource_name(StrBytes::from_static_str("t"))
                        .with_configs(vec![AlterableConfig::default()
                            .with_name(StrBytes::from_static_str("retention.ms"))
                            .with_value(Some(StrBytes::from_static_str("3600000")))]),
                ]),
            )
        }
        ApiKey::AlterConfigs => {
            use alter_configs_request::{AlterConfigsResource, AlterableConfig};
            RequestKind::AlterConfigs(AlterConfigsRequest::default().with_resources(vec![
                AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("t"))
                    .with_configs(vec![AlterableConfig::default()
                        .with_name(StrBytes::from_static_str("retention.ms"))
                        .with_value(Some(StrBytes::from_static_str("3600000")))]),
            ]))
        }
        ApiKey::ListConfigResources => {
            RequestKind::ListConfigResources(ListConfigResourcesRequest::default())
        }
        ApiKey::ListPartitionReassignments => RequestKind::ListPartitionReassignments(
            ListPartitionReassignmentsRequest::default().with_topics(None),
        ),
        ApiKey::AlterPartitionReassignments => {
            use alter_partition_reassignments_request::*;
            RequestKind::AlterPartitionReassignments(
                AlterPartitionReassignmentsRequest::default().with_topics(vec![
                    ReassignableTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![ReassignablePartition::default()
                            .with_partition_index(0)
                            .with_replicas(Some(vec![BrokerId(0)]))]),
                ]),
            )
        }
        ApiKey::AlterReplicaLogDirs => {
            use alter_replica_log_dirs_request::*;
            RequestKind::AlterReplicaLogDirs(AlterReplicaLogDirsRequest::default().with_dirs(vec![
                AlterReplicaLogDir::default()
                    .with_path(StrBytes::from_static_str("/elsewhere"))
                    .with_topics(vec![AlterReplicaLogDirTopic::default()
                        .with_name(name("t"))
                        .with_partitions(vec![0])]),
            ]))
        }
        ApiKey::DescribeQuorum => {
            use describe_quorum_request::*;
            RequestKind::DescribeQuorum(DescribeQuorumRequest::default().with_topics(vec![
                TopicData::default()
                    .with_topic_name(name("__cluster_metadata"))
                    .with_partitions(vec![PartitionData::default()]),
            ]))
        }
        ApiKey::ElectLeaders => RequestKind::ElectLeaders(
            ElectLeadersRequest::default()
                .with_election_type(if version == 0 { 0 } else { 1 })
                .with_topic_partitions(Some(vec![
                    elect_leaders_request::TopicPartitions::default()
                        .with_topic(name("t"))
                        .with_partitions(vec![0]),
                ])),
        ),
        ApiKey::AlterClientQuotas => {
            use alter_client_quotas_request::*;
            RequestKind::AlterClientQuotas(AlterClientQuotasRequest::default().with_entries(vec![
                EntryData::default()
                    .with_entity(vec![EntityData::default()
                        .with_entity_type(StrBytes::from_static_str("user"))
                        .with_entity_name(Some(StrBytes::from_static_str("alice")))])
                    .with_ops(vec![OpData::default()
                        .with_key(StrBytes::from_static_str("producer_byte_rate"))
                        .with_value(1e9)]),
            ]))
        }
        ApiKey::DescribeClientQuotas => {
            use describe_client_quotas_request::*;
            RequestKind::DescribeClientQuotas(
                DescribeClientQuotasRequest::default().with_components(vec![
                    ComponentData::default()
                        .with_entity_type(StrBytes::from_static_str("user"))
                        .with_match_type(2),
                ]),
            )
        }
        other => panic!("the test does not know how to build a {other:?} request: add it"),
    }
}

/// One request to `broker` at `version`: its answer.
pub(in crate::api) async fn call_at(
    broker: &Arc<Broker>,
    version: i16,
    req: RequestKind,
) -> ResponseKind {
    handle(context(broker.clone(), version), req)
        .await
        .expect("a response")
}

pub(in crate::api) fn txn_id(s: &'static str) -> TransactionalId {
    TransactionalId(StrBytes::from_static_str(s))
}

fn context(broker: Arc<Broker>, version: i16) -> RequestContext {
    RequestContext {
        listener: broker.listeners[0].clone(),
        broker,
        api_version: version,
        client_id: "test".into(),
        client_addr: "127.0.0.1:1".parse().unwrap(),
        principal: crate::auth::Principal::anonymous(),
        applied: Default::default(),
    }
}

fn two_broker_assignment() -> Assignment {
    let b = |id, port| BrokerInfo::alive(id, "127.0.0.1", port);
    Assignment {
        version: 1,
        brokers: vec![b(0, 9092), b(1, 9093)],
        ..Default::default()
    }
}

#[tokio::test]
async fn every_advertised_version_reaches_a_handler_and_encodes() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = BrokerConfig::new(0, dir.path().into(), "127.0.0.1", 9092);
    config.groups.core.initial_rebalance_delay_ms = 0;
    let broker = crate::serve::open(config).unwrap();
    broker.apply_assignment(two_broker_assignment());
    let stop = tokio_util::sync::CancellationToken::new();
    tokio::spawn(broker.groups.clone().run_timers(stop.clone()));
    let routing = broker.routing().unwrap();
    assert_eq!(routing.owner_of_group(OURS), Some(0));
    assert_eq!(routing.owner_of_group(THEIRS), Some(1));
    assert_eq!(routing.owner_of_group("solo"), Some(0));
    let led: Vec<i32> = (0..PARTITIONS)
        .filter(|p| routing.owner_of_partition("t", *p) == Some(0))
        .collect();
    assert!(
        !led.is_empty() && led.len() < PARTITIONS as usize,
        "the test wants both kinds"
    );
    let topic = broker
        .storage
        .topics
        .create_blocking("t", PARTITIONS, Default::default(), false)
        .unwrap();
    let advertised = api_versions::advertised();
    assert_eq!(advertised.api_keys.len(), SUPPORTED.len());
    for v in &advertised.api_keys {
        let key = ApiKey::try_from(v.api_key).unwrap();
        assert!(v.min_version <= v.max_version);
        let codec = key.valid_versions();
        assert!(
            codec.min <= v.min_version && v.max_version <= codec.max,
            "{key:?} beyond the codec"
        );
        for version in v.min_version..=v.max_version {
            let req = request(key, version, topic.id, &routing);
            let resp = handle(context(broker.clone(), version), req)
                .await
                .unwrap_or_else(|| panic!("{key:?} v{version} has no handler"));
            encode_response(key, version, 1, &resp)
                .unwrap_or_else(|e| panic!("{key:?} v{version} does not encode: {e:#}"));
        }
    }
    stop.cancel();
}

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

#[tokio::test]
async fn a_broker_without_the_requests_listener_is_left_out_as_apache_does() {
    let dir = tempfile::tempdir().unwrap();
    let broker =
        crate::serve::open(BrokerConfig::new(0, dir.path().into(), "127.0.0.1", 9092)).unwrap();
    let endpoint = |name: &str, host: &str, port| kaas_shared::Endpoint {
        name: name.into(),
        host: host.into(),
        port,
    };
    // Broker 1 has no PLAINTEXT listener, the one these requests come in on.
    let mut assignment = two_broker_assignment();
    assignment.brokers[0].listeners = vec![
        endpoint("PLAINTEXT", "127.0.0.1", 9092),
        endpoint("CLIENT", "b0.example.com", 19092),
    ];
    assignment.brokers[1].listeners = vec![endpoint("CLIENT", "b1.example.com", 19093)];
    broker.apply_assignment(assignment);
    broker
        .storage
        .topics
        .create_blocking("t", PARTITIONS, Default::default(), false)
        .unwrap();
    let routing = broker.routing().unwrap();
    let metadata = |version| {
        let ctx = context(broker.clone(), version);
        async move {
            let req = MetadataRequest::default().with_topics(Some(vec![
                metadata_request::MetadataRequestTopic::default().with_name(Some(name("t"))),
            ]));
            match handle(ctx, RequestKind::Metadata(req)).await.unwrap() {
                ResponseKind::Metadata(m) => m,
                other => panic!("{other:?}"),
            }
        }
    };
    for (version, missing) in [(12, Err::ListenerNotFound), (5, Err::LeaderNotAvailable)] {
        let md = metadata(version).await;
        let brokers: Vec<(i32, &str, i32)> = md
            .brokers
            .iter()
            .map(|b| (b.node_id.0, b.host.as_str(), b.port))
            .collect();
        assert_eq!(brokers, [(0, "127.0.0.1", 9092)], "v{version}");
        for p in &md.topics[0].partitions {
            let leader = routing.owner_of_partition("t", p.partition_index).unwrap();
            match leader {
                0 => assert_eq!((p.error_code, p.leader_id.0), (0, 0)),
                _ => assert_eq!(
                    (p.error_code, p.leader_id.0),
                    (missing.code(), -1),
                    "v{version}"
                ),
            }
        }
    }
    let find = |group: &str| {
        let req = FindCoordinatorRequest::default()
            .with_coordinator_keys(vec![StrBytes::from_string(group.into())]);
        handle(
            context(broker.clone(), 4),
            RequestKind::FindCoordinator(req),
        )
    };
    let ResponseKind::FindCoordinator(ours) = find(OURS).await.unwrap() else {
        panic!()
    };
    assert_eq!(
        (
            ours.coordinators[0].host.as_str(),
            ours.coordinators[0].port
        ),
        ("127.0.0.1", 9092)
    );
    let ResponseKind::FindCoordinator(theirs) = find(THEIRS).await.unwrap() else {
        panic!()
    };
    assert_eq!(
        theirs.coordinators[0].error_code,
        Err::CoordinatorNotAvailable.code()
    );
}

#[test]
fn unknown_keys_and_versions_are_refused() {
    let frame = |key: i16, version: i16| {
        let mut b = Vec::new();
        b.extend_from_slice(&key.to_be_bytes());
        b.extend_from_slice(&version.to_be_bytes());
        b.extend_from_slice(&7i32.to_be_bytes());
        b.extend_from_slice(&(-1i16).to_be_bytes());
        bytes::Bytes::from(b)
    };
    assert!(matches!(
        decode(frame(9999, 0)),
        Err(RequestError::UnknownApiKey(9999))
    ));
    // A key Kafka knows but this broker does not serve.
    assert!(matches!(
        decode(frame(ApiKey::CreateDelegationToken as i16, 0)),
        Err(RequestError::UnknownApiKey(_))
    ));
    assert!(matches!(
        decode(frame(ApiKey::Metadata as i16, 99)),
        Err(RequestError::UnsupportedVersion { .. })
    ));
    assert!(matches!(
        decode(frame(ApiKey::ApiVersions as i16, 99)),
        Ok(Incoming::UnsupportedApiVersions { correlation_id: 7 })
    ));
    assert!(matches!(
        decode(bytes::Bytes::from_static(&[0, 3])),
        Err(RequestError::TooShort(2))
    ));
}

/// A one-broker broker with topic `t` of one partition.
pub(in crate::api) async fn one_broker(
    dir: &std::path::Path,
) -> (Arc<Broker>, Arc<crate::storage::TopicMeta>) {
    one_broker_with(dir, Arc::new(crate::auth::AllowAll)).await
}

pub(in crate::api) async fn one_broker_with(
    dir: &std::path::Path,
    authorizer: Arc<dyn crate::auth::Authorizer>,
) -> (Arc<Broker>, Arc<crate::storage::TopicMeta>) {
    let mut config = BrokerConfig::new(0, dir.into(), "127.0.0.1", 9092);
    config.authorizer = authorizer;
    let broker = crate::serve::open(config).unwrap();
    broker.apply_assignment(Assignment {
        version: 1,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    let topic = broker
        .storage
        .topics
        .create_blocking("t", 1, Default::default(), false)
        .unwrap();
    (broker, topic)
}

fn fetch_t(isolation: i8) -> RequestKind {
    use fetch_request::*;
    RequestKind::Fetch(
        FetchRequest::default()
            .with_max_wait_ms(0)
            .with_isolation_level(isolation)
            .with_topics(vec![FetchTopic::default()
                .with_topic(name("t"))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_partition_max_bytes(1 << 20)])]),
    )
}

pub(in crate::api) async fn fetched(
    broker: &Arc<Broker>,
    isolation: i8,
) -> fetch_response::PartitionData {
    let Some(ResponseKind::Fetch(resp)) =
        handle(context(broker.clone(), 11), fetch_t(isolation)).await
    else {
        panic!("not a fetch response")
    };
    resp.responses[0].partitions[0].clone()
}

pub(in crate::api) async fn latest(broker: &Arc<Broker>, isolation: i8) -> i64 {
    use list_offsets_request::*;
    let req = ListOffsetsRequest::default()
        .with_isolation_level(isolation)
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name("t"))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(0)
                .with_timestamp(-1)])]);
    let Some(ResponseKind::ListOffsets(resp)) =
        handle(context(broker.clone(), 5), RequestKind::ListOffsets(req)).await
    else {
        panic!("not a list offsets response")
    };
    resp.topics[0].partitions[0].offset
}

/// Offsets of the batches in a fetch's records.
fn batch_offsets(records: &Option<bytes::Bytes>) -> Vec<i64> {
    let records = records.clone().unwrap_or_default();
    crate::storage::batch::split_batches(&records)
        .unwrap()
        .iter()
        .map(|(_, h)| h.base_offset)
        .collect()
}

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

fn commit_topic(
    topic: &str,
    partitions: &[i32],
) -> offset_commit_request::OffsetCommitRequestTopic {
    use offset_commit_request::*;
    OffsetCommitRequestTopic::default()
        .with_name(name(topic))
        .with_partitions(
            partitions
                .iter()
                .map(|&p| {
                    OffsetCommitRequestPartition::default()
                        .with_partition_index(p)
                        .with_committed_offset(5)
                })
                .collect(),
        )
}

/// (topic, partition, error code) of every partition answered.
fn commit_codes(topics: Vec<(TopicName, Vec<(i32, i16)>)>) -> Vec<(String, i32, i16)> {
    let mut codes: Vec<_> = topics
        .into_iter()
        .flat_map(|(t, ps)| ps.into_iter().map(move |(p, c)| (t.0.to_string(), p, c)))
        .collect();
    codes.sort();
    codes
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

/// CreateTopics checks a new topic's configs as Apache does (nothing
/// created on INVALID_CONFIG), answers v5+ with every config of the
/// topic; DescribeConfigs describes them, filtered by key, with synonyms
/// and documentation only when asked.
#[tokio::test]
async fn topic_configs_are_checked_stored_and_described() {
    use create_topics_request::{CreatableTopic, CreatableTopicConfig};
    use describe_configs_request::DescribeConfigsResource;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker_with(dir.path(), Arc::new(crate::auth::AllowAll)).await;
    let create = |topic: &'static str, configs: &[(&'static str, Option<&'static str>)]| {
        RequestKind::CreateTopics(CreateTopicsRequest::default().with_topics(
            vec![CreatableTopic::default()
                .with_name(name(topic))
                .with_num_partitions(2)
                .with_replication_factor(-1)
                .with_configs(
                    configs
                        .iter()
                        .map(|(k, v)| {
                            CreatableTopicConfig::default()
                                .with_name(StrBytes::from_static_str(k))
                                .with_value(v.map(StrBytes::from_static_str))
                        })
                        .collect(),
                )],
        ))
    };
    let created = |r: ResponseKind| match r {
        ResponseKind::CreateTopics(r) => r.topics.into_iter().next().unwrap(),
        other => panic!("{other:?}"),
    };
    for (configs, message) in [
        (
            vec![("dummy.doesntexist", Some("1"))],
            "Unknown topic config name: dummy.doesntexist",
        ),
        (
            vec![("retention.ms", Some("abc"))],
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            vec![("segment.bytes", None), ("retention.ms", None)],
            "Null value not supported for topic configs: segment.bytes,retention.ms",
        ),
    ] {
        let r = created(call_at(&broker, 7, create("bad", &configs)).await);
        assert_eq!(r.error_code, Err::InvalidConfig.code(), "{configs:?}");
        assert_eq!(r.error_message.as_deref(), Some(message));
    }
    assert!(
        broker.storage.topics.get("bad").is_none(),
        "nothing created"
    );

    let r = created(
        call_at(
            &broker,
            7,
            create(
                "c",
                &[
                    ("min.cleanable.dirty.ratio", Some("1")),
                    ("retention.ms", Some("1000")),
                ],
            ),
        )
        .await,
    );
    assert_eq!(r.error_code, 0);
    let configs = r.configs.unwrap();
    assert_eq!(
        configs.len(),
        crate::storage::topic_config::TOPIC_CONFIGS.len()
    );
    let ratio = configs
        .iter()
        .find(|c| c.name.as_str() == "min.cleanable.dirty.ratio")
        .unwrap();
    assert_eq!(
        (ratio.value.as_deref(), ratio.config_source),
        (Some("1.0"), 1)
    );

    let describe = |keys: Option<Vec<&'static str>>, synonyms: bool, docs: bool| {
        RequestKind::DescribeConfigs(
            DescribeConfigsRequest::default()
                .with_resources(vec![DescribeConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(StrBytes::from_static_str("c"))
                    .with_configuration_keys(
                        keys.map(|k| k.into_iter().map(StrBytes::from_static_str).collect()),
                    )])
                .with_include_synonyms(synonyms)
                .with_include_documentation(docs),
        )
    };
    let described = |r: ResponseKind| match r {
        ResponseKind::DescribeConfigs(r) => r.results.into_iter().next().unwrap(),
        other => panic!("{other:?}"),
    };
    let r = described(
        call_at(
            &broker,
            4,
            describe(Some(vec!["retention.ms", "no.such"]), true, true),
        )
        .await,
    );
    assert_eq!(r.error_code, 0);
    assert_eq!(r.configs.len(), 1, "a name that is no config is left out");
    let retention = &r.configs[0];
    assert_eq!(
        (
            retention.value.as_deref(),
            retention.config_source,
            retention.config_type,
            retention.read_only,
            retention.is_sensitive
        ),
        (Some("1000"), 1, 5, false, false)
    );
    assert_eq!(retention.synonyms.len(), 1);
    assert!(retention
        .documentation
        .as_deref()
        .unwrap()
        .starts_with("This configuration controls the maximum time"));
    let r = described(call_at(&broker, 4, describe(None, false, false)).await);
    assert_eq!(
        r.configs.len(),
        crate::storage::topic_config::TOPIC_CONFIGS.len()
    );
    assert!(r
        .configs
        .iter()
        .all(|c| c.synonyms.is_empty() && c.documentation.is_none()));

    // A topic that does not exist: no message, as Apache.
    let missing =
        RequestKind::DescribeConfigs(DescribeConfigsRequest::default().with_resources(vec![
        DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(StrBytes::from_static_str("missing")),
        DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("7")),
        DescribeConfigsResource::default()
            .with_resource_type(4)
            .with_resource_name(StrBytes::from_static_str("0")),
        DescribeConfigsResource::default()
            .with_resource_type(8)
            .with_resource_name(StrBytes::from_static_str("0")),
    ]));
    let ResponseKind::DescribeConfigs(r) = call_at(&broker, 4, missing).await else {
        panic!("not a DescribeConfigs answer");
    };
    assert_eq!(
        (
            r.results[0].error_code,
            r.results[0].error_message.is_none()
        ),
        (Err::UnknownTopicOrPartition.code(), true)
    );
    assert_eq!(r.results[1].error_code, Err::InvalidRequest.code());
    assert_eq!(
        r.results[1].error_message.as_deref(),
        Some("Unexpected broker id, expected 0 or empty string, but received 7")
    );
    let own = &r.results[2];
    assert_eq!(own.error_code, 0);
    let partitions = own
        .configs
        .iter()
        .find(|c| c.name.as_str() == "num.partitions")
        .unwrap();
    assert_eq!(
        (
            partitions.value.as_deref(),
            partitions.read_only,
            partitions.config_source
        ),
        (Some("1"), true, 5)
    );
    assert_eq!(
        (
            r.results[3].error_code,
            r.results[3].error_message.as_deref()
        ),
        (
            Err::InvalidRequest.code(),
            Some("Unsupported resource type: BROKER_LOGGER")
        ),
        "kaas has no broker loggers to describe"
    );
}

/// A topic's retention.ms and segment.bytes act on its partitions: after
/// a retention pass a fetch from the old start is out of range, ListOffsets
/// earliest and Fetch name the new log start offset, and the log goes on.
#[tokio::test]
async fn retention_moves_the_log_start_offset_that_fetch_and_list_offsets_answer() {
    use list_offsets_request::*;
    let dir = tempfile::tempdir().unwrap();
    let broker =
        crate::serve::open(BrokerConfig::new(0, dir.path().into(), "127.0.0.1", 9092)).unwrap();
    broker.apply_assignment(Assignment {
        version: 1,
        brokers: vec![BrokerInfo::alive(0, "127.0.0.1", 9092)],
        ..Default::default()
    });
    let configs = [("segment.bytes", "300"), ("retention.ms", "60000")]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    let topic = broker
        .storage
        .topics
        .create_blocking("t", 1, configs, false)
        .unwrap();
    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    for i in 0..6 {
        partition
            .append(encode_batch(3, 1_000 * i), 0)
            .await
            .unwrap();
    }
    let segments = crate::storage::count_segment_files;
    let log_dir = broker.storage.topics.topic_dir("t").join("0");
    assert!(segments(&log_dir) > 1, "segment.bytes=300 rolled the log");
    assert_eq!(fetched(&broker, 0).await.error_code, 0);

    // A minute after the newest record: everything is past retention.ms.
    let (deleted, bytes) = broker.storage.enforce_retention(5_002 + 60_001).await;
    assert!(deleted > 1 && bytes > 0);
    assert_eq!(segments(&log_dir), 1, "an empty segment at the end stays");
    let fetch = fetched(&broker, 0).await;
    assert_eq!(fetch.error_code, Err::OffsetOutOfRange.code());
    assert_eq!((fetch.log_start_offset, fetch.high_watermark), (18, 18));
    let earliest = ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
        .with_name(name("t"))
        .with_partitions(vec![ListOffsetsPartition::default()
            .with_partition_index(0)
            .with_timestamp(-2)])]);
    let Some(ResponseKind::ListOffsets(r)) = handle(
        context(broker.clone(), 5),
        RequestKind::ListOffsets(earliest),
    )
    .await
    else {
        panic!("not a list offsets response")
    };
    assert_eq!(r.topics[0].partitions[0].offset, 18);
    assert_eq!(latest(&broker, 0).await, 18);
    let next = partition.append(encode_batch(1, 70_000), 0).await.unwrap();
    assert_eq!(next.base_offset, 18, "the log goes on where it was");
}

/// IncrementalAlterConfigs' four operations on a topic and AlterConfigs'
/// replacement, each refusal with Apache's code and message, nothing
/// stored by a refused or validate-only change, and the result seen by
/// another broker's registry and by the open partition's next roll.
#[tokio::test]
async fn topic_configs_are_altered_incrementally_and_wholesale_as_apache_answers() {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker_with(dir.path(), Arc::new(crate::auth::AllowAll)).await;
    let resource = |kind: i8, name: &str, ops: &[(&str, i8, Option<&str>)]| {
        AlterConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(StrBytes::from_string(name.to_string()))
            .with_configs(
                ops.iter()
                    .map(|(k, op, v)| {
                        AlterableConfig::default()
                            .with_name(StrBytes::from_string(k.to_string()))
                            .with_config_operation(*op)
                            .with_value(v.map(|v| StrBytes::from_string(v.to_string())))
                    })
                    .collect(),
            )
    };
    let alter = |resources: Vec<AlterConfigsResource>, validate_only: bool| {
        let broker = broker.clone();
        async move {
            let req = IncrementalAlterConfigsRequest::default()
                .with_resources(resources)
                .with_validate_only(validate_only);
            match call_at(&broker, 1, RequestKind::IncrementalAlterConfigs(req)).await {
                ResponseKind::IncrementalAlterConfigs(r) => r
                    .responses
                    .into_iter()
                    .map(|r| (r.error_code, r.error_message.map(|m| m.to_string())))
                    .collect::<Vec<_>>(),
                other => panic!("{other:?}"),
            }
        }
    };
    let on_t = |ops: &[(&str, i8, Option<&str>)]| vec![resource(2, "t", ops)];
    let stored = || broker.storage.topics.get("t").unwrap().configs.clone();
    let configs = |pairs: &[(&str, &str)]| -> std::collections::BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    };
    const SET: i8 = 0;
    const DELETE: i8 = 1;
    const APPEND: i8 = 2;
    const SUBTRACT: i8 = 3;
    let ok = vec![(0, None)];

    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    let set = on_t(&[
        ("retention.ms", SET, Some("1000")),
        ("segment.bytes", SET, Some("1048576")),
    ]);
    assert_eq!(alter(set, false).await, ok);
    assert_eq!(
        stored(),
        configs(&[("retention.ms", "1000"), ("segment.bytes", "1048576")])
    );
    let segments =
        || crate::storage::count_segment_files(&broker.storage.topics.topic_dir("t").join("0"));
    // About 2 MiB: past the new segment size, far below kaas's 256 MiB.
    for _ in 0..64 {
        partition.append(encode_batch(2_000, 0), 0).await.unwrap();
    }
    assert!(
        segments() > 1,
        "the open partition rolls at the new segment.bytes"
    );

    assert_eq!(
        alter(on_t(&[("cleanup.policy", APPEND, Some("compact"))]), false).await,
        ok
    );
    assert_eq!(
        stored()["cleanup.policy"],
        "delete,compact",
        "from the default"
    );
    assert_eq!(
        alter(on_t(&[("cleanup.policy", SUBTRACT, Some("delete"))]), false).await,
        ok
    );
    assert_eq!(stored()["cleanup.policy"], "compact");
    assert_eq!(
        alter(on_t(&[("retention.ms", DELETE, None)]), false).await,
        ok
    );
    assert!(!stored().contains_key("retention.ms"));

    let before = stored();
    for (ops, code, message) in [
        (
            vec![("retention.ms", APPEND, Some("5"))],
            Err::InvalidConfig,
            "Can't APPEND to key retention.ms because its type is not LIST.",
        ),
        (
            vec![("retention.ms", SET, Some("abc"))],
            Err::InvalidConfig,
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        (
            vec![("no.such.config", SET, Some("1"))],
            Err::InvalidConfig,
            "Unknown topic config name: no.such.config",
        ),
        (
            vec![
                ("retention.ms", SET, Some("5")),
                ("retention.ms", DELETE, None),
            ],
            Err::InvalidRequest,
            "Error due to duplicate config keys",
        ),
        (
            vec![("retention.ms", SET, None), ("segment.ms", APPEND, None)],
            Err::InvalidRequest,
            "Null value not supported for : retention.ms, segment.ms",
        ),
        (
            vec![("retention.ms", 9, Some("5"))],
            Err::InvalidRequest,
            "Unknown operations type 9",
        ),
    ] {
        assert_eq!(
            alter(on_t(&ops), false).await,
            [(code.code(), Some(message.to_string()))],
            "{ops:?}"
        );
    }
    assert_eq!(
        alter(on_t(&[("retention.bytes", SET, Some("5"))]), true).await,
        ok,
        "validate_only"
    );
    assert_eq!(
        stored(),
        before,
        "nothing refused or only validated was stored"
    );

    let nope = |ops: &[(&str, i8, Option<&str>)]| vec![resource(2, "nope", ops)];
    assert_eq!(
        alter(nope(&[("retention.ms", SET, Some("5"))]), false).await,
        [(
            Err::UnknownTopicOrPartition.code(),
            Some("The topic 'nope' does not exist.".to_string())
        )]
    );
    assert_eq!(
        alter(nope(&[("retention.ms", SET, Some("x"))]), false).await[0].0,
        Err::InvalidConfig.code(),
        "the configs are checked before the topic's existence"
    );
    let twice = vec![resource(2, "t", &[]), resource(2, "t", &[])];
    let dup = (
        Err::InvalidRequest.code(),
        Some("Each resource must appear at most once.".to_string()),
    );
    assert_eq!(alter(twice, false).await, [dup.clone(), dup]);
    assert_eq!(
        alter(vec![resource(4, "7", &[])], false).await,
        [(
            Err::InvalidRequest.code(),
            Some("Unexpected broker id, expected 0, but received 7".to_string())
        )]
    );

    // AlterConfigs replaces the whole set.
    use alter_configs_request::{AlterConfigsResource as Whole, AlterableConfig as Entry};
    let req = AlterConfigsRequest::default().with_resources(vec![Whole::default()
        .with_resource_type(2)
        .with_resource_name(name("t").0)
        .with_configs(vec![Entry::default()
            .with_name(StrBytes::from_static_str("min.cleanable.dirty.ratio"))
            .with_value(Some(StrBytes::from_static_str("1")))])]);
    let ResponseKind::AlterConfigs(r) = call_at(&broker, 2, RequestKind::AlterConfigs(req)).await
    else {
        panic!("not an AlterConfigs response")
    };
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(stored(), configs(&[("min.cleanable.dirty.ratio", "1.0")]));
    let other_broker = crate::storage::TopicRegistry::new(dir.path().into());
    assert_eq!(other_broker.get("t").unwrap().configs, stored());
}

/// DeleteRecords' answers: the new low watermark, durable and seen by
/// Fetch and ListOffsets; OFFSET_OUT_OF_RANGE past the high watermark;
/// POLICY_VIOLATION on a compacted topic; UNKNOWN_TOPIC_OR_PARTITION for a
/// partition that does not exist.
#[tokio::test]
async fn delete_records_answers_as_apache_does() {
    use delete_records_request::*;
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker(dir.path()).await;
    broker
        .storage
        .topics
        .create_blocking(
            "compacted",
            1,
            [("cleanup.policy".to_string(), "compact".to_string())].into(),
            false,
        )
        .unwrap();
    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    for i in 0..4 {
        partition.append(encode_batch(5, i), 0).await.unwrap();
    }
    let delete = |topic: &'static str, partition: i32, offset: i64| {
        let broker = broker.clone();
        async move {
            let req =
                DeleteRecordsRequest::default().with_topics(vec![DeleteRecordsTopic::default()
                    .with_name(name(topic))
                    .with_partitions(vec![DeleteRecordsPartition::default()
                        .with_partition_index(partition)
                        .with_offset(offset)])]);
            let ResponseKind::DeleteRecords(r) =
                call_at(&broker, 2, RequestKind::DeleteRecords(req)).await
            else {
                panic!("not a DeleteRecords response")
            };
            let p = &r.topics[0].partitions[0];
            (p.error_code, p.low_watermark)
        }
    };
    assert_eq!(delete("t", 0, 7).await, (0, 7));
    let fetch = fetched(&broker, 0).await;
    assert_eq!(
        (fetch.error_code, fetch.log_start_offset),
        (Err::OffsetOutOfRange.code(), 7),
        "a fetch from 0 is below the start now"
    );
    assert_eq!(delete("t", 0, 21).await, (Err::OffsetOutOfRange.code(), -1));
    assert_eq!(delete("t", 0, 3).await, (0, 7), "never backwards");
    assert_eq!(delete("t", 0, -1).await, (0, 20), "-1: the high watermark");
    assert_eq!(
        delete("t", 1, 0).await,
        (Err::UnknownTopicOrPartition.code(), -1)
    );
    assert_eq!(
        delete("nope", 0, 0).await,
        (Err::UnknownTopicOrPartition.code(), -1)
    );
    assert_eq!(
        delete("compacted", 0, 0).await,
        (Err::PolicyViolation.code(), -1)
    );
    drop(partition);
    broker.storage.retain_partitions(|_, _| false);
    let reopened = broker.storage.partition(&topic, 0).await.unwrap();
    assert_eq!(reopened.log_start_offset(), 20, "durable across a reopen");
}

/// CreatePartitions' answers with Apache's messages; a validate-only or
/// refused request changes nothing; the new partitions are in Metadata and
/// take records at their leader; another broker's registry sees them.
#[tokio::test]
async fn create_partitions_answers_as_apache_does() {
    use create_partitions_request::*;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let request = |topics: Vec<(&'static str, i32, Option<usize>)>, validate_only: bool| {
        let broker = broker.clone();
        async move {
            let req = CreatePartitionsRequest::default()
                .with_validate_only(validate_only)
                .with_topics(
                    topics
                        .into_iter()
                        .map(|(t, count, assignments)| {
                            CreatePartitionsTopic::default()
                                .with_name(name(t))
                                .with_count(count)
                                .with_assignments(assignments.map(|n| {
                                    let on_0 = CreatePartitionsAssignment::default()
                                        .with_broker_ids(vec![BrokerId(0)]);
                                    vec![on_0; n]
                                }))
                        })
                        .collect(),
                );
            let ResponseKind::CreatePartitions(r) =
                call_at(&broker, 3, RequestKind::CreatePartitions(req)).await
            else {
                panic!("not a CreatePartitions response")
            };
            r.results
                .into_iter()
                .map(|r| {
                    (
                        r.name.to_string(),
                        r.error_code,
                        r.error_message.map(|m| m.to_string()),
                    )
                })
                .collect::<Vec<_>>()
        }
    };
    let partitions = || broker.storage.topics.get("t").unwrap().partitions;
    let refused =
        |code: Err, message: &str| vec![("t".to_string(), code.code(), Some(message.to_string()))];
    assert_eq!(
        request(vec![("t", 3, None)], true).await,
        [("t".to_string(), 0, None)]
    );
    assert_eq!(partitions(), 1, "validate only");
    assert_eq!(
        request(vec![("t", 1, None)], false).await,
        refused(Err::InvalidPartitions, "Topic already has 1 partition(s).")
    );
    assert_eq!(
        request(vec![("t", 0, None)], false).await,
        refused(
            Err::InvalidPartitions,
            "The topic t currently has 1 partition(s); 0 would not be an increase."
        )
    );
    assert_eq!(
        request(vec![("t", 3, Some(1))], false).await,
        refused(
            Err::InvalidReplicaAssignment,
            "Attempted to add 2 additional partition(s), but only 1 assignment(s) were specified."
        )
    );
    assert_eq!(
        request(vec![("t", 3, None), ("t", 4, None)], false).await,
        refused(Err::InvalidRequest, "Duplicate topic name.")
    );
    assert_eq!(
        request(vec![("nope", 3, None)], false).await,
        [(
            "nope".to_string(),
            Err::UnknownTopicOrPartition.code(),
            None
        )]
    );
    assert_eq!(partitions(), 1, "nothing refused was stored");

    assert_eq!(
        request(vec![("t", 3, Some(2))], false).await,
        [("t".to_string(), 0, None)]
    );
    assert_eq!(partitions(), 3);
    let other_broker = crate::storage::TopicRegistry::new(dir.path().into());
    assert_eq!(other_broker.get("t").unwrap().partitions, 3);
    let Some(ResponseKind::Metadata(m)) = handle(
        context(broker.clone(), 12),
        RequestKind::Metadata(MetadataRequest::default().with_topics(Some(vec![
            metadata_request::MetadataRequestTopic::default().with_name(Some(name("t"))),
        ]))),
    )
    .await
    else {
        panic!("not a metadata response")
    };
    assert_eq!(m.topics[0].partitions.len(), 3);
    let topic = broker.storage.topics.get("t").unwrap();
    let new = broker.storage.partition(&topic, 2).await.unwrap();
    assert_eq!(
        new.append(encode_batch(2, 0), 0).await.unwrap().base_offset,
        0
    );
}

/// DescribeCluster names the cluster and the brokers on the request's
/// listener (fenced ones only when asked), refuses a controller endpoint
/// as Apache's broker does; DescribeLogDirs lists the partitions this
/// broker leads with their bytes on the volume and the volume's space.
#[tokio::test]
async fn describe_cluster_and_log_dirs_answer_as_apache_does() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker(dir.path()).await;
    let cluster = |endpoint_type: i8, version: i16| {
        let broker = broker.clone();
        async move {
            let req = DescribeClusterRequest::default()
                .with_endpoint_type(endpoint_type)
                .with_include_cluster_authorized_operations(true);
            match call_at(&broker, version, RequestKind::DescribeCluster(req)).await {
                ResponseKind::DescribeCluster(r) => r,
                other => panic!("{other:?}"),
            }
        }
    };
    let r = cluster(1, 1).await;
    assert_eq!(r.error_code, 0);
    assert_eq!(r.cluster_id.as_str(), broker.cluster_id);
    assert_eq!(r.controller_id.0, 0);
    let brokers: Vec<(i32, String, i32, bool)> = r
        .brokers
        .iter()
        .map(|b| (b.broker_id.0, b.host.to_string(), b.port, b.is_fenced))
        .collect();
    assert_eq!(brokers, [(0, "127.0.0.1".to_string(), 9092, false)]);
    assert_ne!(r.cluster_authorized_operations, i32::MIN, "asked for");
    let r = cluster(2, 1).await;
    assert_eq!(r.error_code, Err::MismatchedEndpointType.code());
    assert_eq!(
        r.error_message.as_deref(),
        Some("The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER")
    );
    assert_eq!(
        cluster(7, 1).await.error_code,
        Err::UnsupportedEndpointType.code()
    );
    assert_eq!(cluster(7, 0).await.error_code, Err::InvalidRequest.code());

    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    partition.append(encode_batch(10, 0), 0).await.unwrap();
    let ResponseKind::DescribeLogDirs(r) = call_at(
        &broker,
        4,
        RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None)),
    )
    .await
    else {
        panic!("not a DescribeLogDirs response")
    };
    assert_eq!((r.error_code, r.results.len()), (0, 1));
    let d = &r.results[0];
    assert_eq!(d.log_dir.as_str(), dir.path().display().to_string());
    assert!(d.total_bytes > 0 && (0..=d.total_bytes).contains(&d.usable_bytes));
    assert_eq!(d.topics.len(), 1);
    assert_eq!(d.topics[0].name.0.as_str(), "t");
    let p = &d.topics[0].partitions[0];
    let on_disk =
        crate::storage::log::size_on_disk(&broker.storage.topics.topic_dir("t").join("0")).unwrap();
    assert_eq!(
        (p.partition_index, p.partition_size, p.offset_lag),
        (0, on_disk as i64, 0)
    );
    assert!(on_disk > 0);
    let named = DescribeLogDirsRequest::default().with_topics(Some(vec![
        describe_log_dirs_request::DescribableLogDirTopic::default()
            .with_topic(name("nope"))
            .with_partitions(vec![0]),
    ]));
    let ResponseKind::DescribeLogDirs(r) =
        call_at(&broker, 4, RequestKind::DescribeLogDirs(named)).await
    else {
        panic!("not a DescribeLogDirs response")
    };
    assert!(
        r.results[0].topics.is_empty(),
        "a topic that does not exist is not listed"
    );
}

/// A batch above the topic's max.message.bytes is refused with
/// MESSAGE_TOO_LARGE and Apache's message, nothing appended; the limit
/// changed through another broker applies once this one follows the
/// topics (every second in a running broker).
#[tokio::test]
async fn a_batch_above_max_message_bytes_is_refused_as_apache_refuses_it() {
    use produce_request::*;
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let set_max = |value: &str| {
        // Another broker's registry: this one learns of it by following.
        let other = crate::storage::TopicRegistry::new(dir.path().into());
        let value = value.to_string();
        other
            .update_blocking("t", false, |meta| {
                meta.configs.insert("max.message.bytes".into(), value);
                Ok::<(), ()>(())
            })
            .unwrap()
            .unwrap();
    };
    let produce = |n: usize| {
        let broker = broker.clone();
        async move {
            let data = TopicProduceData::default()
                .with_name(name("t"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(0)
                    .with_records(Some(encode_batch(n, 1000).into()))]);
            let req = ProduceRequest::default()
                .with_acks(-1)
                .with_topic_data(vec![data]);
            let Some(ResponseKind::Produce(r)) =
                handle(context(broker.clone(), 9), RequestKind::Produce(req)).await
            else {
                panic!("not a produce response")
            };
            let p = &r.responses[0].partition_responses[0];
            (
                p.error_code,
                p.error_message.as_ref().map(|m| m.to_string()),
            )
        }
    };
    assert_eq!(produce(50).await.0, 0);
    set_max("200");
    assert_eq!(produce(50).await.0, 0, "not followed yet");
    let seen = broker.storage.follow_topic_configs(None);
    let size = encode_batch(50, 1000).len();
    assert_eq!(
        produce(50).await,
        (
            Err::MessageTooLarge.code(),
            Some(format!(
                "The record batch size in the append to t-0 is {size} bytes which exceeds the maximum configured value of 200."
            ))
        )
    );
    assert_eq!(produce(2).await.0, 0, "a small batch still goes");
    assert_eq!(
        latest(&broker, 0).await,
        102,
        "nothing of the refused batch"
    );
    assert_eq!(
        broker.storage.follow_topic_configs(seen),
        seen,
        "unchanged: nothing to do"
    );
}

/// DescribeTopicPartitions pages through the topics in name order with a
/// cursor, answers unknown and invalid names as Apache does, and refuses a
/// cursor outside the named topics.
#[tokio::test]
async fn describe_topic_partitions_pages_with_a_cursor() {
    use describe_topic_partitions_request::{Cursor, TopicRequest};
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    broker
        .storage
        .topics
        .create_blocking("u", 5, Default::default(), false)
        .unwrap();
    let describe = |topics: &[&str], limit: i32, cursor: Option<(&str, i32)>| {
        let req = DescribeTopicPartitionsRequest::default()
            .with_topics(
                topics
                    .iter()
                    .map(|t| TopicRequest::default().with_name(name(t)))
                    .collect(),
            )
            .with_response_partition_limit(limit)
            .with_cursor(cursor.map(|(t, p)| {
                Cursor::default()
                    .with_topic_name(name(t))
                    .with_partition_index(p)
            }));
        let broker = broker.clone();
        async move {
            let ResponseKind::DescribeTopicPartitions(r) =
                call_at(&broker, 0, RequestKind::DescribeTopicPartitions(req)).await
            else {
                panic!("not a DescribeTopicPartitions response")
            };
            let topics: Vec<(String, i16, Vec<i32>)> = r
                .topics
                .iter()
                .map(|t| {
                    (
                        t.name.as_ref().unwrap().to_string(),
                        t.error_code,
                        t.partitions.iter().map(|p| p.partition_index).collect(),
                    )
                })
                .collect();
            let next = r
                .next_cursor
                .map(|c| (c.topic_name.to_string(), c.partition_index));
            (topics, next)
        }
    };
    let (topics, next) = describe(&[], 3, None).await;
    assert_eq!(
        topics,
        [
            ("t".to_string(), 0, vec![0]),
            ("u".to_string(), 0, vec![0, 1])
        ]
    );
    assert_eq!(next, Some(("u".to_string(), 2)));
    let (topics, next) = describe(&[], 3, Some(("u", 2))).await;
    assert_eq!(topics, [("u".to_string(), 0, vec![2, 3, 4])]);
    assert_eq!(next, None);
    let (topics, next) = describe(&["t"], 1, None).await;
    assert_eq!(
        (topics.len(), next),
        (1, None),
        "a page that ends with the last topic"
    );
    let (topics, next) = describe(&["t", "u"], 1, None).await;
    assert_eq!(topics, [("t".to_string(), 0, vec![0])]);
    assert_eq!(
        next,
        Some(("u".to_string(), 0)),
        "the next page starts at the next topic"
    );
    let (topics, _) = describe(&["nope", "bad/name"], 10, None).await;
    assert_eq!(
        topics,
        [
            (
                "bad/name".to_string(),
                Err::InvalidTopicException.code(),
                vec![]
            ),
            (
                "nope".to_string(),
                Err::UnknownTopicOrPartition.code(),
                vec![]
            )
        ]
    );
    let (topics, _) = describe(&["t"], 10, Some(("u", 0))).await;
    assert_eq!(
        topics,
        [("t".to_string(), Err::InvalidRequest.code(), vec![])]
    );
}

pub(in crate::api) mod acl;
pub(in crate::api) mod authz;
pub(in crate::api) mod broker_configs;
pub(in crate::api) mod group_configs;
pub(in crate::api) mod produce;
pub(in crate::api) mod replica;
pub(in crate::api) mod txn_v2;
pub(in crate::api) mod volume;
