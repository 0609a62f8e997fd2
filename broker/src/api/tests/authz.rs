//! Every served API that names a resource, under Apache's StandardAuthorizer
//! and each kind of ACL: none, an ALLOW of what the API needs (literal),
//! the same under a DENY that wins, a PREFIXED ALLOW, a wildcard ALLOW for
//! `User:*`, and a super user with no ACL. Each API must answer Apache's
//! authorization error exactly when KafkaApis would, before it looks at
//! anything else (AuthorizerIntegrationTest's shape: one request per API,
//! with and without its ACLs).

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;

use super::acl::{broker, call_as};
use crate::api::*;
use crate::auth::acl::{AclBinding, AclFilter, PatternType, Permission};
use crate::auth::{Operation, Operation::*, ResourceType, CLUSTER_NAME};
use crate::broker::Broker;

/// The resources one scenario's requests name.
struct Names {
    topic: String,
    group: String,
    txn: String,
}

impl Names {
    fn of(scenario: &str) -> Names {
        Names {
            topic: format!("tx-{scenario}"),
            group: format!("gx-{scenario}"),
            txn: format!("ix-{scenario}"),
        }
    }

    fn name(&self, t: ResourceType) -> &str {
        match t {
            ResourceType::Topic => &self.topic,
            ResourceType::Group => &self.group,
            ResourceType::TransactionalId => &self.txn,
            _ => CLUSTER_NAME,
        }
    }

    /// What a PREFIXED ACL of the scenario names.
    fn prefix(t: ResourceType) -> &'static str {
        match t {
            ResourceType::Topic => "tx-",
            ResourceType::Group => "gx-",
            ResourceType::TransactionalId => "ix-",
            _ => CLUSTER_NAME,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    FindGroupCoordinator,
    FindTxnCoordinator,
    JoinGroup,
    SyncGroup,
    Heartbeat,
    LeaveGroup,
    OffsetCommit,
    OffsetFetch,
    DescribeGroups,
    ListGroups,
    OffsetDelete,
    Produce,
    Fetch,
    ListOffsets,
    OffsetForLeaderEpoch,
    Metadata,
    InitProducerId,
    DescribeTransactions,
    DescribeAcls,
    DescribeTopicConfigs,
    DescribeBrokerConfigs,
    IncrementalAlterTopicConfigs,
    AlterTopicConfigs,
    IncrementalAlterBrokerConfigs,
    DescribeGroupConfigs,
    IncrementalAlterGroupConfigs,
    DeleteRecords,
    CreatePartitions,
    DescribeLogDirs,
    ListConfigResources,
    DescribeClientQuotas,
    AlterClientQuotas,
    ListPartitionReassignments,
    DescribeQuorum,
    AlterPartitionReassignments,
    ElectLeaders,
    AlterReplicaLogDirs,
    DescribeTopicPartitions,
    CreateTopics,
    DeleteGroups,
    DeleteTopics,
}

use ResourceType::{Cluster, Group, Topic, TransactionalId};

impl Api {
    /// What the API asks, in KafkaApis' order, and the error of the first.
    fn needs(self) -> (Vec<(Operation, ResourceType)>, E) {
        use Api::*;
        match self {
            FindGroupCoordinator => (vec![(Describe, Group)], E::GroupAuthorizationFailed),
            FindTxnCoordinator => (
                vec![(Describe, TransactionalId)],
                E::TransactionalIdAuthorizationFailed,
            ),
            JoinGroup | SyncGroup | Heartbeat | LeaveGroup => {
                (vec![(Read, Group)], E::GroupAuthorizationFailed)
            }
            OffsetCommit => (
                vec![(Read, Group), (Read, Topic)],
                E::GroupAuthorizationFailed,
            ),
            OffsetFetch | DescribeGroups | ListGroups => {
                (vec![(Describe, Group)], E::GroupAuthorizationFailed)
            }
            OffsetDelete => (
                vec![(Delete, Group), (Read, Topic)],
                E::GroupAuthorizationFailed,
            ),
            DeleteGroups => (vec![(Delete, Group)], E::GroupAuthorizationFailed),
            Produce => (vec![(Write, Topic)], E::TopicAuthorizationFailed),
            Fetch => (vec![(Read, Topic)], E::TopicAuthorizationFailed),
            // OffsetForLeaderEpoch: or Cluster CLUSTER_ACTION, which brokers have.
            ListOffsets | OffsetForLeaderEpoch | Metadata => {
                (vec![(Describe, Topic)], E::TopicAuthorizationFailed)
            }
            CreateTopics => (vec![(Create, Topic)], E::TopicAuthorizationFailed),
            DeleteTopics => (
                vec![(Describe, Topic), (Delete, Topic)],
                E::TopicAuthorizationFailed,
            ),
            InitProducerId => (
                vec![(Write, TransactionalId)],
                E::TransactionalIdAuthorizationFailed,
            ),
            DescribeTransactions => (
                vec![(Describe, TransactionalId)],
                E::TransactionalIdAuthorizationFailed,
            ),
            DescribeAcls => (vec![(Describe, Cluster)], E::ClusterAuthorizationFailed),
            DescribeTopicConfigs => (vec![(DescribeConfigs, Topic)], E::TopicAuthorizationFailed),
            DescribeBrokerConfigs => (
                vec![(DescribeConfigs, Cluster)],
                E::ClusterAuthorizationFailed,
            ),
            IncrementalAlterTopicConfigs | AlterTopicConfigs => {
                (vec![(AlterConfigs, Topic)], E::TopicAuthorizationFailed)
            }
            IncrementalAlterBrokerConfigs => {
                (vec![(AlterConfigs, Cluster)], E::ClusterAuthorizationFailed)
            }
            DescribeGroupConfigs => (vec![(DescribeConfigs, Group)], E::GroupAuthorizationFailed),
            IncrementalAlterGroupConfigs => {
                (vec![(AlterConfigs, Group)], E::GroupAuthorizationFailed)
            }
            DeleteRecords => (vec![(Delete, Topic)], E::TopicAuthorizationFailed),
            CreatePartitions => (vec![(Alter, Topic)], E::TopicAuthorizationFailed),
            DescribeLogDirs => (vec![(Describe, Cluster)], E::ClusterAuthorizationFailed),
            ListConfigResources | DescribeClientQuotas => (
                vec![(DescribeConfigs, Cluster)],
                E::ClusterAuthorizationFailed,
            ),
            AlterClientQuotas => (vec![(AlterConfigs, Cluster)], E::ClusterAuthorizationFailed),
            ListPartitionReassignments | DescribeQuorum => {
                (vec![(Describe, Cluster)], E::ClusterAuthorizationFailed)
            }
            AlterPartitionReassignments | ElectLeaders | AlterReplicaLogDirs => {
                (vec![(Alter, Cluster)], E::ClusterAuthorizationFailed)
            }
            DescribeTopicPartitions => (vec![(Describe, Topic)], E::TopicAuthorizationFailed),
        }
    }
}

const APIS: [Api; 41] = [
    Api::FindGroupCoordinator,
    Api::FindTxnCoordinator,
    Api::JoinGroup,
    Api::SyncGroup,
    Api::Heartbeat,
    Api::LeaveGroup,
    Api::OffsetCommit,
    Api::OffsetFetch,
    Api::DescribeGroups,
    Api::ListGroups,
    Api::OffsetDelete,
    Api::Produce,
    Api::Fetch,
    Api::ListOffsets,
    Api::OffsetForLeaderEpoch,
    Api::Metadata,
    Api::InitProducerId,
    Api::DescribeTransactions,
    Api::DescribeAcls,
    Api::DescribeTopicConfigs,
    Api::DescribeBrokerConfigs,
    Api::IncrementalAlterTopicConfigs,
    Api::AlterTopicConfigs,
    Api::IncrementalAlterBrokerConfigs,
    Api::DescribeGroupConfigs,
    Api::IncrementalAlterGroupConfigs,
    Api::DeleteRecords,
    Api::CreatePartitions,
    Api::DescribeLogDirs,
    Api::ListConfigResources,
    Api::DescribeClientQuotas,
    Api::AlterClientQuotas,
    Api::ListPartitionReassignments,
    Api::DescribeQuorum,
    Api::AlterPartitionReassignments,
    Api::ElectLeaders,
    Api::AlterReplicaLogDirs,
    Api::DescribeTopicPartitions,
    Api::CreateTopics,
    // Last: when allowed they remove what the others use.
    Api::DeleteGroups,
    Api::DeleteTopics,
];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Scenario {
    NoAcl,
    Allow,
    DenyWins,
    Prefixed,
    Wildcard,
    SuperUser,
}

impl Scenario {
    fn allowed(self) -> bool {
        !matches!(self, Scenario::NoAcl | Scenario::DenyWins)
    }

    fn user(self) -> &'static str {
        if self == Scenario::SuperUser {
            "admin"
        } else {
            "alice"
        }
    }

    fn acls(self, api: Api, names: &Names) -> Vec<AclBinding> {
        let acl =
            |t: ResourceType, name: &str, pattern, principal: &str, op, permission| AclBinding {
                resource_type: t,
                name: name.to_string(),
                pattern,
                principal: principal.to_string(),
                host: "*".into(),
                operation: op,
                permission,
            };
        let (needs, _) = api.needs();
        let mut out = Vec::new();
        for (op, t) in needs {
            match self {
                Scenario::NoAcl | Scenario::SuperUser => {}
                Scenario::Allow => out.push(acl(
                    t,
                    names.name(t),
                    PatternType::Literal,
                    "User:alice",
                    op,
                    Permission::Allow,
                )),
                Scenario::DenyWins => {
                    out.push(acl(
                        t,
                        "*",
                        PatternType::Literal,
                        "User:*",
                        All,
                        Permission::Allow,
                    ));
                    out.push(acl(
                        t,
                        names.name(t),
                        PatternType::Literal,
                        "User:alice",
                        op,
                        Permission::Deny,
                    ));
                }
                Scenario::Prefixed => out.push(acl(
                    t,
                    Names::prefix(t),
                    PatternType::Prefixed,
                    "User:alice",
                    op,
                    Permission::Allow,
                )),
                Scenario::Wildcard => out.push(acl(
                    t,
                    "*",
                    PatternType::Literal,
                    "User:*",
                    op,
                    Permission::Allow,
                )),
            }
        }
        out
    }
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// The request's error code where an authorization error would show.
async fn run(api: Api, broker: &Arc<Broker>, user: &str, n: &Names) -> i16 {
    let group = || GroupId(s(&n.group));
    let topic = || TopicName(s(&n.topic));
    match api {
        Api::FindGroupCoordinator | Api::FindTxnCoordinator => {
            let (key, key_type) = if api == Api::FindGroupCoordinator {
                (&n.group, 0)
            } else {
                (&n.txn, 1)
            };
            let req = FindCoordinatorRequest::default()
                .with_key(s(key))
                .with_key_type(key_type);
            let ResponseKind::FindCoordinator(r) =
                call_as(broker, user, 3, RequestKind::FindCoordinator(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::JoinGroup => {
            let req = JoinGroupRequest::default()
                .with_group_id(group())
                .with_session_timeout_ms(10_000)
                .with_rebalance_timeout_ms(10_000)
                .with_protocol_type(s("consumer"))
                .with_protocols(vec![join_group_request::JoinGroupRequestProtocol::default(
                )
                .with_name(s("range"))]);
            let ResponseKind::JoinGroup(r) =
                call_as(broker, user, 5, RequestKind::JoinGroup(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::SyncGroup => {
            let req = SyncGroupRequest::default()
                .with_group_id(group())
                .with_member_id(s("m"));
            let ResponseKind::SyncGroup(r) =
                call_as(broker, user, 3, RequestKind::SyncGroup(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::Heartbeat => {
            let req = HeartbeatRequest::default()
                .with_group_id(group())
                .with_member_id(s("m"));
            let ResponseKind::Heartbeat(r) =
                call_as(broker, user, 3, RequestKind::Heartbeat(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::LeaveGroup => {
            let req = LeaveGroupRequest::default()
                .with_group_id(group())
                .with_member_id(s("m"));
            let ResponseKind::LeaveGroup(r) =
                call_as(broker, user, 2, RequestKind::LeaveGroup(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::OffsetCommit => {
            use offset_commit_request::*;
            let req = OffsetCommitRequest::default()
                .with_group_id(group())
                .with_generation_id_or_member_epoch(-1)
                .with_topics(vec![OffsetCommitRequestTopic::default()
                    .with_name(topic())
                    .with_partitions(vec![OffsetCommitRequestPartition::default()
                        .with_partition_index(0)
                        .with_committed_offset(1)])]);
            let ResponseKind::OffsetCommit(r) =
                call_as(broker, user, 8, RequestKind::OffsetCommit(req)).await
            else {
                panic!()
            };
            r.topics[0].partitions[0].error_code
        }
        Api::OffsetFetch => {
            let req = OffsetFetchRequest::default().with_groups(vec![
                offset_fetch_request::OffsetFetchRequestGroup::default()
                    .with_group_id(group())
                    .with_topics(None),
            ]);
            let ResponseKind::OffsetFetch(r) =
                call_as(broker, user, 8, RequestKind::OffsetFetch(req)).await
            else {
                panic!()
            };
            r.groups[0].error_code
        }
        Api::DescribeGroups => {
            let req = DescribeGroupsRequest::default().with_groups(vec![group()]);
            let ResponseKind::DescribeGroups(r) =
                call_as(broker, user, 5, RequestKind::DescribeGroups(req)).await
            else {
                panic!()
            };
            r.groups[0].error_code
        }
        Api::ListGroups => {
            let ResponseKind::ListGroups(r) = call_as(
                broker,
                user,
                4,
                RequestKind::ListGroups(ListGroupsRequest::default()),
            )
            .await
            else {
                panic!()
            };
            if r.groups.iter().any(|g| g.group_id.0.as_str() == n.group) {
                0
            } else {
                E::GroupAuthorizationFailed.code()
            }
        }
        Api::OffsetDelete => {
            use offset_delete_request::*;
            let req = OffsetDeleteRequest::default()
                .with_group_id(group())
                .with_topics(vec![OffsetDeleteRequestTopic::default()
                    .with_name(topic())
                    .with_partitions(vec![
                        OffsetDeleteRequestPartition::default().with_partition_index(0)
                    ])]);
            let ResponseKind::OffsetDelete(r) =
                call_as(broker, user, 0, RequestKind::OffsetDelete(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::DeleteGroups => {
            let req = DeleteGroupsRequest::default().with_groups_names(vec![group()]);
            let ResponseKind::DeleteGroups(r) =
                call_as(broker, user, 2, RequestKind::DeleteGroups(req)).await
            else {
                panic!()
            };
            r.results[0].error_code
        }
        Api::Produce => {
            let req = ProduceRequest::default()
                .with_acks(-1)
                .with_timeout_ms(5_000)
                .with_topic_data(vec![produce_request::TopicProduceData::default()
                    .with_name(topic())
                    .with_partition_data(vec![
                        produce_request::PartitionProduceData::default()
                            .with_index(0)
                            .with_records(Some(
                                crate::storage::batch::tests::encode_batch(1, 0).into(),
                            )),
                    ])]);
            let ResponseKind::Produce(r) =
                call_as(broker, user, 9, RequestKind::Produce(req)).await
            else {
                panic!()
            };
            r.responses[0].partition_responses[0].error_code
        }
        Api::Fetch => {
            use fetch_request::*;
            let req = FetchRequest::default()
                .with_max_wait_ms(0)
                .with_topics(vec![FetchTopic::default()
                    .with_topic(topic())
                    .with_partitions(vec![FetchPartition::default()
                        .with_partition(0)
                        .with_partition_max_bytes(1 << 16)])]);
            let ResponseKind::Fetch(r) = call_as(broker, user, 11, RequestKind::Fetch(req)).await
            else {
                panic!()
            };
            r.responses[0].partitions[0].error_code
        }
        Api::ListOffsets => {
            use list_offsets_request::*;
            let req = ListOffsetsRequest::default().with_topics(vec![ListOffsetsTopic::default()
                .with_name(topic())
                .with_partitions(vec![ListOffsetsPartition::default()
                    .with_partition_index(0)
                    .with_timestamp(-1)])]);
            let ResponseKind::ListOffsets(r) =
                call_as(broker, user, 5, RequestKind::ListOffsets(req)).await
            else {
                panic!()
            };
            r.topics[0].partitions[0].error_code
        }
        Api::OffsetForLeaderEpoch => {
            use offset_for_leader_epoch_request::*;
            let req = OffsetForLeaderEpochRequest::default().with_topics(vec![
                OffsetForLeaderTopic::default()
                    .with_topic(topic())
                    .with_partitions(vec![OffsetForLeaderPartition::default()
                        .with_partition(0)
                        .with_leader_epoch(0)]),
            ]);
            let ResponseKind::OffsetForLeaderEpoch(r) =
                call_as(broker, user, 4, RequestKind::OffsetForLeaderEpoch(req)).await
            else {
                panic!()
            };
            r.topics[0].partitions[0].error_code
        }
        Api::Metadata => {
            let req = MetadataRequest::default()
                .with_allow_auto_topic_creation(false)
                .with_topics(Some(vec![metadata_request::MetadataRequestTopic::default(
                )
                .with_name(Some(topic()))]));
            let ResponseKind::Metadata(r) =
                call_as(broker, user, 9, RequestKind::Metadata(req)).await
            else {
                panic!()
            };
            r.topics[0].error_code
        }
        Api::CreateTopics => {
            let req = CreateTopicsRequest::default().with_topics(vec![
                create_topics_request::CreatableTopic::default()
                    .with_name(topic())
                    .with_num_partitions(1)
                    .with_replication_factor(1),
            ]);
            let ResponseKind::CreateTopics(r) =
                call_as(broker, user, 5, RequestKind::CreateTopics(req)).await
            else {
                panic!()
            };
            r.topics[0].error_code
        }
        Api::DeleteTopics => {
            let req = DeleteTopicsRequest::default().with_topic_names(vec![topic()]);
            let ResponseKind::DeleteTopics(r) =
                call_as(broker, user, 5, RequestKind::DeleteTopics(req)).await
            else {
                panic!()
            };
            r.responses[0].error_code
        }
        Api::InitProducerId => {
            let req = InitProducerIdRequest::default()
                .with_transactional_id(Some(kafka_protocol::messages::TransactionalId(s(&n.txn))))
                .with_transaction_timeout_ms(60_000);
            let ResponseKind::InitProducerId(r) =
                call_as(broker, user, 4, RequestKind::InitProducerId(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::DescribeTransactions => {
            let req = DescribeTransactionsRequest::default()
                .with_transactional_ids(vec![kafka_protocol::messages::TransactionalId(s(&n.txn))]);
            let ResponseKind::DescribeTransactions(r) =
                call_as(broker, user, 0, RequestKind::DescribeTransactions(req)).await
            else {
                panic!()
            };
            r.transaction_states[0].error_code
        }
        Api::DescribeAcls => {
            let req = DescribeAclsRequest::default()
                .with_resource_type_filter(1)
                .with_resource_name_filter(None)
                .with_pattern_type_filter(1)
                .with_principal_filter(None)
                .with_host_filter(None)
                .with_operation(1)
                .with_permission_type(1);
            let ResponseKind::DescribeAcls(r) =
                call_as(broker, user, 2, RequestKind::DescribeAcls(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::DescribeTopicConfigs | Api::DescribeBrokerConfigs | Api::DescribeGroupConfigs => {
            let (resource_type, name) = match api {
                Api::DescribeTopicConfigs => (2, n.topic.clone()),
                Api::DescribeGroupConfigs => (32, n.group.clone()),
                _ => (4, "0".to_string()),
            };
            let req = DescribeConfigsRequest::default().with_resources(vec![
                describe_configs_request::DescribeConfigsResource::default()
                    .with_resource_type(resource_type)
                    .with_resource_name(s(&name)),
            ]);
            let ResponseKind::DescribeConfigs(r) =
                call_as(broker, user, 4, RequestKind::DescribeConfigs(req)).await
            else {
                panic!()
            };
            r.results[0].error_code
        }
        Api::IncrementalAlterTopicConfigs
        | Api::IncrementalAlterBrokerConfigs
        | Api::IncrementalAlterGroupConfigs => {
            use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
            let resource = match api {
                Api::IncrementalAlterTopicConfigs => AlterConfigsResource::default()
                    .with_resource_type(2)
                    .with_resource_name(s(&n.topic))
                    .with_configs(vec![AlterableConfig::default()
                        .with_name(s("retention.ms"))
                        .with_config_operation(0)
                        .with_value(Some(s("3600000")))]),
                Api::IncrementalAlterGroupConfigs => AlterConfigsResource::default()
                    .with_resource_type(32)
                    .with_resource_name(s(&n.group))
                    .with_configs(vec![AlterableConfig::default()
                        .with_name(s("consumer.session.timeout.ms"))
                        .with_config_operation(0)
                        .with_value(Some(s("50000")))]),
                // An empty change: only the authorization is asked.
                _ => AlterConfigsResource::default()
                    .with_resource_type(4)
                    .with_resource_name(s("0")),
            };
            let req = IncrementalAlterConfigsRequest::default().with_resources(vec![resource]);
            let ResponseKind::IncrementalAlterConfigs(r) =
                call_as(broker, user, 1, RequestKind::IncrementalAlterConfigs(req)).await
            else {
                panic!()
            };
            r.responses[0].error_code
        }
        Api::DeleteRecords => {
            use delete_records_request::*;
            // To offset 0: allowed, it moves nothing the other APIs read.
            let req =
                DeleteRecordsRequest::default().with_topics(vec![DeleteRecordsTopic::default()
                    .with_name(topic())
                    .with_partitions(vec![DeleteRecordsPartition::default()
                        .with_partition_index(0)
                        .with_offset(0)])]);
            let ResponseKind::DeleteRecords(r) =
                call_as(broker, user, 2, RequestKind::DeleteRecords(req)).await
            else {
                panic!()
            };
            r.topics[0].partitions[0].error_code
        }
        Api::CreatePartitions => {
            use create_partitions_request::*;
            // Validate only: allowed, it changes nothing the others read.
            let req = CreatePartitionsRequest::default()
                .with_topics(vec![CreatePartitionsTopic::default()
                    .with_name(topic())
                    .with_count(100)])
                .with_validate_only(true);
            let ResponseKind::CreatePartitions(r) =
                call_as(broker, user, 3, RequestKind::CreatePartitions(req)).await
            else {
                panic!()
            };
            r.results[0].error_code
        }
        Api::DescribeTopicPartitions => {
            let req = DescribeTopicPartitionsRequest::default()
                .with_topics(vec![
                    describe_topic_partitions_request::TopicRequest::default().with_name(topic()),
                ])
                .with_response_partition_limit(10);
            let ResponseKind::DescribeTopicPartitions(r) =
                call_as(broker, user, 0, RequestKind::DescribeTopicPartitions(req)).await
            else {
                panic!()
            };
            r.topics[0].error_code
        }
        Api::ListPartitionReassignments => {
            let req = ListPartitionReassignmentsRequest::default().with_topics(None);
            let ResponseKind::ListPartitionReassignments(r) = call_as(
                broker,
                user,
                0,
                RequestKind::ListPartitionReassignments(req),
            )
            .await
            else {
                panic!()
            };
            r.error_code
        }
        Api::DescribeQuorum => {
            use describe_quorum_request::*;
            let req = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
                .with_topic_name(TopicName(s("__cluster_metadata")))
                .with_partitions(vec![PartitionData::default()])]);
            let ResponseKind::DescribeQuorum(r) =
                call_as(broker, user, 2, RequestKind::DescribeQuorum(req)).await
            else {
                panic!()
            };
            r.error_code
        }
        Api::AlterPartitionReassignments => {
            use alter_partition_reassignments_request::*;
            let req = AlterPartitionReassignmentsRequest::default().with_topics(vec![
                ReassignableTopic::default()
                    .with_name(TopicName(s(&n.topic)))
                    .with_partitions(vec![ReassignablePartition::default()
                        .with_partition_index(0)
                        .with_replicas(Some(vec![BrokerId(0)]))]),
            ]);
            let ResponseKind::AlterPartitionReassignments(r) = call_as(
                broker,
                user,
                1,
                RequestKind::AlterPartitionReassignments(req),
            )
            .await
            else {
                panic!()
            };
            r.responses[0].partitions[0].error_code
        }
        Api::ElectLeaders => {
            use elect_leaders_request::TopicPartitions;
            // UNCLEAN: an allowed election needs no controller's move.
            let req = ElectLeadersRequest::default()
                .with_election_type(1)
                .with_topic_partitions(Some(vec![TopicPartitions::default()
                    .with_topic(TopicName(s(&n.topic)))
                    .with_partitions(vec![0])]));
            let ResponseKind::ElectLeaders(r) =
                call_as(broker, user, 2, RequestKind::ElectLeaders(req)).await
            else {
                panic!()
            };
            r.replica_election_results[0].partition_result[0].error_code
        }
        Api::AlterReplicaLogDirs => {
            use alter_replica_log_dirs_request::*;
            let path = broker.storage.data_dir().display().to_string();
            let req =
                AlterReplicaLogDirsRequest::default().with_dirs(vec![AlterReplicaLogDir::default(
                )
                .with_path(s(&path))
                .with_topics(vec![AlterReplicaLogDirTopic::default()
                    .with_name(TopicName(s(&n.topic)))
                    .with_partitions(vec![0])])]);
            let ResponseKind::AlterReplicaLogDirs(r) =
                call_as(broker, user, 2, RequestKind::AlterReplicaLogDirs(req)).await
            else {
                panic!()
            };
            r.results[0].partitions[0].error_code
        }
        Api::DescribeLogDirs => {
            let ResponseKind::DescribeLogDirs(r) = call_as(
                broker,
                user,
                4,
                RequestKind::DescribeLogDirs(DescribeLogDirsRequest::default().with_topics(None)),
            )
            .await
            else {
                panic!()
            };
            r.error_code
        }
        Api::ListConfigResources => {
            let ResponseKind::ListConfigResources(r) = call_as(
                broker,
                user,
                1,
                RequestKind::ListConfigResources(ListConfigResourcesRequest::default()),
            )
            .await
            else {
                panic!()
            };
            r.error_code
        }
        Api::DescribeClientQuotas => {
            let ResponseKind::DescribeClientQuotas(r) = call_as(
                broker,
                user,
                1,
                RequestKind::DescribeClientQuotas(DescribeClientQuotasRequest::default()),
            )
            .await
            else {
                panic!()
            };
            r.error_code
        }
        Api::AlterClientQuotas => {
            use alter_client_quotas_request::{EntityData, EntryData, OpData};
            let req = AlterClientQuotasRequest::default().with_entries(vec![EntryData::default()
                .with_entity(vec![EntityData::default()
                    .with_entity_type(s("client-id"))
                    .with_entity_name(Some(s(&n.group)))])
                .with_ops(vec![OpData::default()
                    .with_key(s("consumer_byte_rate"))
                    .with_value(1e9)])]);
            let ResponseKind::AlterClientQuotas(r) =
                call_as(broker, user, 1, RequestKind::AlterClientQuotas(req)).await
            else {
                panic!()
            };
            r.entries[0].error_code
        }
        Api::AlterTopicConfigs => {
            use alter_configs_request::{AlterConfigsResource, AlterableConfig};
            let req =
                AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default(
                )
                .with_resource_type(2)
                .with_resource_name(s(&n.topic))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(s("retention.ms"))
                    .with_value(Some(s("3600000")))])]);
            let ResponseKind::AlterConfigs(r) =
                call_as(broker, user, 2, RequestKind::AlterConfigs(req)).await
            else {
                panic!()
            };
            r.responses[0].error_code
        }
    }
}

#[tokio::test]
async fn every_api_answers_apaches_authorization_errors_under_each_kind_of_acl() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path(), true);
    let acls = broker.acls.clone().unwrap();
    let mut failures = Vec::new();
    let scenarios = [
        Scenario::NoAcl,
        Scenario::Allow,
        Scenario::DenyWins,
        Scenario::Prefixed,
        Scenario::Wildcard,
        Scenario::SuperUser,
    ];
    for scenario in scenarios {
        let n = Names::of(&format!("{scenario:?}").to_lowercase());
        for api in APIS {
            // Every case starts from the topic and the group existing (the
            // group with a committed offset), made by the super user.
            if broker.storage.topics.get(&n.topic).is_none() {
                broker
                    .storage
                    .topics
                    .create_blocking(&n.topic, 1, Default::default(), false)
                    .unwrap();
            }
            if api != Api::CreateTopics {
                run(Api::OffsetCommit, &broker, "admin", &n).await;
            }
            if api == Api::CreateTopics {
                let topics = broker.storage.topics.clone();
                let name = n.topic.clone();
                let _ = tokio::task::spawn_blocking(move || topics.delete_blocking(&name)).await;
            }
            acls.delete(&[AclFilter::any()]).unwrap();
            acls.create(&scenario.acls(api, &n)).unwrap();
            let code = run(api, &broker, scenario.user(), &n).await;
            let (_, denied) = api.needs();
            let ok = if scenario.allowed() {
                code != denied.code()
            } else {
                code == denied.code()
            };
            if !ok {
                failures.push(format!("{api:?} under {scenario:?}: {code}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

/// The seed's rule, AuthorizerIntegrationTest's
/// testFindCoordinatorWithoutDescribeGroupAcl: without Group DESCRIBE the
/// answer for a group that exists and one that does not is the same, byte
/// for byte.
#[tokio::test]
async fn find_coordinator_without_describe_says_nothing_of_whether_a_group_exists() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path(), true);
    let n = Names::of("exists");
    broker
        .storage
        .topics
        .create_blocking(&n.topic, 1, Default::default(), false)
        .unwrap();
    run(Api::OffsetCommit, &broker, "admin", &n).await;
    let find = |group: &'static str| {
        let broker = broker.clone();
        async move {
            let resp = call_as(
                &broker,
                "alice",
                3,
                RequestKind::FindCoordinator(
                    FindCoordinatorRequest::default()
                        .with_key(s(group))
                        .with_key_type(0),
                ),
            )
            .await;
            encode_response(ApiKey::FindCoordinator, 3, 7, &resp).unwrap()
        }
    };
    let existing = find("gx-exists").await;
    let missing = find("gx-never-was").await;
    assert_eq!(existing, missing);
    let ResponseKind::FindCoordinator(r) = call_as(
        &broker,
        "alice",
        3,
        RequestKind::FindCoordinator(
            FindCoordinatorRequest::default()
                .with_key(s("gx-exists"))
                .with_key_type(0),
        ),
    )
    .await
    else {
        panic!()
    };
    assert_eq!(r.error_code, E::GroupAuthorizationFailed.code());
}
