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

pub(in crate::api) mod acl;
pub(in crate::api) mod authz;
pub(in crate::api) mod broker_configs;
pub(in crate::api) mod group_configs;
pub(in crate::api) mod groups;
pub(in crate::api) mod produce;
pub(in crate::api) mod replica;
pub(in crate::api) mod topics;
pub(in crate::api) mod txn;
pub(in crate::api) mod txn_v2;
pub(in crate::api) mod volume;
