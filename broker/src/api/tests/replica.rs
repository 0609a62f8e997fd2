//! Replicas on the wire: CreateTopics and CreatePartitions keep the
//! replicas users assign (checked with Apache's messages) and Metadata
//! reports them; AlterPartitionReassignments changes them at once and
//! ListPartitionReassignments lists the move until the controller has made
//! the first alive replica the leader; ElectLeaders waits for that move.
//! The controller's round is played here by `kaas_shared::recompute_with`
//! over what ListPartitionReassignments answers, as the real one does.

use std::sync::Arc;

use kaas_shared::{recompute_with, Assignment, BrokerInfo, BrokerState, PartitionReplicas};
use kafka_protocol::messages::*;

use crate::api::tests::{call_at, name};
use crate::api::Err;
use crate::broker::{Broker, BrokerConfig};

fn brokers(dead: &[i32]) -> Vec<BrokerInfo> {
    (0..3)
        .map(|id| BrokerInfo {
            state: match dead.contains(&id) {
                true => BrokerState::Dead,
                false => BrokerState::Alive,
            },
            ..BrokerInfo::alive(id, "127.0.0.1", 9092 + id as u16)
        })
        .collect()
}

/// Broker 0 of three alive brokers, following a first assignment.
fn broker(dir: &std::path::Path) -> Arc<Broker> {
    let broker = crate::serve::open(BrokerConfig::new(0, dir.into(), "127.0.0.1", 9092)).unwrap();
    broker.apply_assignment(recompute_with(None, &brokers(&[]), [""; 0], &[]));
    broker
}

/// One round of the controller: the moves ListPartitionReassignments
/// answers, placed; `dead` brokers observed dead.
async fn controller_round(broker: &Arc<Broker>, dead: &[i32]) -> Assignment {
    let moving: Vec<PartitionReplicas> = list(broker, None)
        .await
        .into_iter()
        .map(|(topic, partition, replicas)| PartitionReplicas {
            topic,
            partition,
            replicas,
        })
        .collect();
    let previous = broker.routing().unwrap().assignment().as_ref().clone();
    let next = recompute_with(Some(&previous), &brokers(dead), [""; 0], &moving);
    broker.apply_assignment(next.clone());
    next
}

async fn create(
    broker: &Arc<Broker>,
    topic: &str,
    assignments: &[&[i32]],
) -> (i16, Option<String>, i16) {
    use create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
    let t = CreatableTopic::default()
        .with_name(name(topic))
        .with_num_partitions(-1)
        .with_replication_factor(-1)
        .with_assignments(
            (0..)
                .zip(assignments)
                .map(|(p, brokers)| {
                    CreatableReplicaAssignment::default()
                        .with_partition_index(p)
                        .with_broker_ids(brokers.iter().copied().map(BrokerId).collect())
                })
                .collect(),
        );
    let req = CreateTopicsRequest::default().with_topics(vec![t]);
    match call_at(broker, 7, RequestKind::CreateTopics(req)).await {
        ResponseKind::CreateTopics(r) => {
            let t = &r.topics[0];
            (
                t.error_code,
                t.error_message.as_ref().map(|m| m.to_string()),
                t.replication_factor,
            )
        }
        other => panic!("{other:?}"),
    }
}

/// Each partition of `topic` in Metadata: leader, replicas, in-sync.
async fn metadata(broker: &Arc<Broker>, topic: &str) -> Vec<(i32, Vec<i32>, Vec<i32>)> {
    let req = MetadataRequest::default().with_topics(Some(vec![
        metadata_request::MetadataRequestTopic::default().with_name(Some(name(topic))),
    ]));
    let ResponseKind::Metadata(r) = call_at(broker, 12, RequestKind::Metadata(req)).await else {
        panic!("not Metadata")
    };
    let ids = |v: &[BrokerId]| v.iter().map(|b| b.0).collect();
    r.topics[0]
        .partitions
        .iter()
        .map(|p| (p.leader_id.0, ids(&p.replica_nodes), ids(&p.isr_nodes)))
        .collect()
}

async fn reassign(
    broker: &Arc<Broker>,
    version: i16,
    topic: &str,
    moves: &[(i32, Option<&[i32]>)],
    allow_rf_change: bool,
) -> AlterPartitionReassignmentsResponse {
    use alter_partition_reassignments_request::*;
    let partitions = moves.iter().map(|(p, replicas)| {
        ReassignablePartition::default()
            .with_partition_index(*p)
            .with_replicas(replicas.map(|r| r.iter().copied().map(BrokerId).collect()))
    });
    let req = AlterPartitionReassignmentsRequest::default()
        .with_allow_replication_factor_change(allow_rf_change)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(name(topic))
            .with_partitions(partitions.collect())]);
    match call_at(
        broker,
        version,
        RequestKind::AlterPartitionReassignments(req),
    )
    .await
    {
        ResponseKind::AlterPartitionReassignments(r) => r,
        other => panic!("{other:?}"),
    }
}

fn outcomes(r: &AlterPartitionReassignmentsResponse) -> Vec<(i32, i16, Option<String>)> {
    r.responses[0]
        .partitions
        .iter()
        .map(|p| {
            let message = p.error_message.as_ref().map(|m| m.to_string());
            (p.partition_index, p.error_code, message)
        })
        .collect()
}

/// (topic, partition, replicas) of every reassignment in progress, or of
/// those of `topic`'s `partitions`.
async fn list(broker: &Arc<Broker>, only: Option<(&str, &[i32])>) -> Vec<(String, i32, Vec<i32>)> {
    use list_partition_reassignments_request::ListPartitionReassignmentsTopics;
    let topics = only.map(|(t, ps)| {
        vec![ListPartitionReassignmentsTopics::default()
            .with_name(name(t))
            .with_partition_indexes(ps.to_vec())]
    });
    let req = ListPartitionReassignmentsRequest::default().with_topics(topics);
    let ResponseKind::ListPartitionReassignments(r) =
        call_at(broker, 0, RequestKind::ListPartitionReassignments(req)).await
    else {
        panic!("not ListPartitionReassignments")
    };
    assert_eq!((r.error_code, &r.error_message), (0, &None));
    let mut listed = Vec::new();
    for t in r.topics {
        for p in t.partitions {
            assert!(p.adding_replicas.is_empty() && p.removing_replicas.is_empty());
            let replicas = p.replicas.iter().map(|b| b.0).collect();
            listed.push((t.name.to_string(), p.partition_index, replicas));
        }
    }
    listed
}

async fn elect(
    broker: &Arc<Broker>,
    kind: i8,
    partitions: Option<&[(&str, i32)]>,
    timeout_ms: i32,
) -> (i16, Vec<(String, i32, i16)>) {
    use elect_leaders_request::TopicPartitions;
    let topics = partitions.map(|ps| {
        ps.iter()
            .map(|(t, p)| {
                TopicPartitions::default()
                    .with_topic(name(t))
                    .with_partitions(vec![*p])
            })
            .collect()
    });
    let req = ElectLeadersRequest::default()
        .with_election_type(kind)
        .with_topic_partitions(topics)
        .with_timeout_ms(timeout_ms);
    let ResponseKind::ElectLeaders(r) = call_at(broker, 2, RequestKind::ElectLeaders(req)).await
    else {
        panic!("not ElectLeaders")
    };
    let mut results = Vec::new();
    for t in r.replica_election_results {
        for p in t.partition_result {
            results.push((t.topic.to_string(), p.partition_id, p.error_code));
        }
    }
    (r.error_code, results)
}

/// ReplicationControlManagerTest's manual assignments: refused with
/// Apache's codes and messages (nothing made), else kept with the topic;
/// Metadata reports them and the controller's next round makes each
/// partition's first replica its leader.
#[tokio::test]
async fn topics_keep_the_replicas_users_assign() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let refused = |message: &str| {
        (
            Err::InvalidReplicaAssignment.code(),
            Some(message.to_string()),
            -1,
        )
    };
    assert_eq!(
        create(&broker, "t", &[&[1, 2], &[2]]).await,
        refused("The manual partition assignment includes a partition with 1 replica(s), but this is not consistent with previous partitions, which have 2 replica(s).")
    );
    assert_eq!(
        create(&broker, "t", &[&[1, 5]]).await,
        refused(
            "The manual partition assignment includes broker 5, but no such broker is registered."
        )
    );
    assert_eq!(
        create(&broker, "t", &[&[1, 1]]).await,
        refused("The manual partition assignment includes the broker 1 more than once.")
    );
    assert!(broker.storage.topics.get("t").is_none(), "nothing made");

    assert_eq!(
        create(&broker, "t", &[&[1, 2], &[2, 0], &[0, 1]]).await,
        (0, None, 2)
    );
    let meta = broker.storage.topics.get("t").unwrap();
    assert_eq!(meta.replicas[&1], vec![2, 0]);
    let wanted = [(1, vec![1, 2]), (2, vec![2, 0]), (0, vec![0, 1])];
    let reported: Vec<(Vec<i32>, Vec<i32>)> = metadata(&broker, "t")
        .await
        .into_iter()
        .map(|(_, r, isr)| (r, isr))
        .collect();
    assert_eq!(
        reported,
        wanted
            .iter()
            .map(|(_, r)| (r.clone(), r.clone()))
            .collect::<Vec<_>>()
    );
    controller_round(&broker, &[]).await;
    let led: Vec<i32> = metadata(&broker, "t")
        .await
        .into_iter()
        .map(|(l, _, _)| l)
        .collect();
    assert_eq!(led, [1, 2, 0]);
    assert!(list(&broker, None).await.is_empty(), "every move made");

    // Broker 1 dead: partition 0's next replica leads, 1 is out of sync.
    controller_round(&broker, &[1]).await;
    controller_round(&broker, &[1]).await;
    let p0 = metadata(&broker, "t").await[0].clone();
    assert_eq!(p0, (2, vec![1, 2], vec![2]));
    // Back: the preferred replica leads again.
    controller_round(&broker, &[]).await;
    controller_round(&broker, &[]).await;
    assert_eq!(metadata(&broker, "t").await[0].0, 1);
}

/// AlterPartitionReassignments with Apache's answers: a new replica list
/// is written at once and listed as in progress until the controller's
/// round moves the leader; cancelling one in progress puts back what it
/// had; cancelling none is NO_REASSIGNMENT_IN_PROGRESS; v1 refuses a
/// changed replication factor unless allowed.
#[tokio::test]
async fn reassignments_move_leaders_at_the_controllers_next_round() {
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(create(&broker, "t", &[&[0], &[1]]).await.0, 0);
    controller_round(&broker, &[]).await;

    let r = reassign(
        &broker,
        1,
        "t",
        &[(0, Some(&[2])), (1, Some(&[0, 2])), (5, Some(&[1]))],
        false,
    )
    .await;
    assert_eq!((r.error_code, &r.error_message), (0, &None));
    assert_eq!(
        outcomes(&r),
        [
            (0, 0, None),
            (
                1,
                Err::InvalidReplicationFactor.code(),
                Some("The replication factor is changed from 1 to 2".into())
            ),
            (
                5,
                Err::UnknownTopicOrPartition.code(),
                Some("Unable to find partition t:5.".into())
            ),
        ]
    );
    assert_eq!(
        metadata(&broker, "t").await[0],
        (0, vec![2], vec![2]),
        "replicas at once"
    );
    assert_eq!(list(&broker, None).await, [("t".to_string(), 0, vec![2])]);
    assert_eq!(list(&broker, Some(("t", &[1]))).await, []);
    controller_round(&broker, &[]).await;
    assert_eq!(metadata(&broker, "t").await[0].0, 2, "moved");
    assert!(list(&broker, None).await.is_empty());

    // Cancel: only while in progress, back to the replicas before.
    let cancel = reassign(&broker, 0, "t", &[(0, None)], true).await;
    assert_eq!(
        outcomes(&cancel),
        [(
            0,
            Err::NoReassignmentInProgress.code(),
            Some("No partition reassignment is in progress.".into())
        )]
    );
    reassign(&broker, 0, "t", &[(0, Some(&[1, 0]))], true).await;
    assert_eq!(
        list(&broker, None).await,
        [("t".to_string(), 0, vec![1, 0])]
    );
    assert_eq!(
        outcomes(&reassign(&broker, 0, "t", &[(0, None)], true).await),
        [(0, 0, None)]
    );
    assert_eq!(metadata(&broker, "t").await[0], (2, vec![2], vec![2]));
    assert!(list(&broker, None).await.is_empty());

    let unknown = reassign(&broker, 0, "nope", &[(0, Some(&[1]))], true).await;
    assert_eq!(
        outcomes(&unknown),
        [(
            0,
            Err::UnknownTopicOrPartition.code(),
            Some("Unable to find a topic named nope.".into())
        )]
    );
    let bad = reassign(&broker, 0, "t", &[(1, Some(&[]))], true).await;
    assert_eq!(
        outcomes(&bad),
        [(
            1,
            Err::InvalidReplicaAssignment.code(),
            Some("The manual partition assignment includes an empty replica list.".into())
        )]
    );
}

/// ElectLeaders as Apache's controller answers it: ELECTION_NOT_NEEDED
/// where the preferred replica leads (or, UNCLEAN, where any broker does),
/// PREFERRED_LEADER_NOT_AVAILABLE when it is not alive, unknown topics and
/// partitions named; a preferred election waits for the controller's move
/// (REQUEST_TIMED_OUT when none comes); asked for every partition, those
/// needing nothing are left out.
#[tokio::test]
async fn preferred_elections_wait_for_the_controllers_move() {
    const PREFERRED: i8 = 0;
    const UNCLEAN: i8 = 1;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(create(&broker, "t", &[&[1, 2], &[2, 1]]).await.0, 0);
    controller_round(&broker, &[]).await;
    let t = |p, code: Err| ("t".to_string(), p, code.code());
    assert_eq!(
        elect(
            &broker,
            PREFERRED,
            Some(&[("t", 0), ("t", 9), ("u", 0)]),
            1000
        )
        .await,
        (
            0,
            vec![
                t(0, Err::ElectionNotNeeded),
                t(9, Err::UnknownTopicOrPartition),
                ("u".to_string(), 0, Err::UnknownTopicOrPartition.code()),
            ]
        )
    );
    assert_eq!(
        elect(&broker, UNCLEAN, Some(&[("t", 1)]), 1000).await.1,
        [t(1, Err::ElectionNotNeeded)]
    );
    assert_eq!(elect(&broker, PREFERRED, None, 1000).await, (0, vec![]));
    // An election type Apache does not know: INVALID_REQUEST, on the
    // response and each partition.
    assert_eq!(
        elect(&broker, 7, Some(&[("t", 0)]), 1000).await,
        (Err::InvalidRequest.code(), vec![t(0, Err::InvalidRequest)])
    );

    // Broker 1 dead and back: partition 0 is led by 2 until an election.
    controller_round(&broker, &[1]).await;
    controller_round(&broker, &[1]).await;
    assert_eq!(
        elect(&broker, PREFERRED, Some(&[("t", 0)]), 1000).await.1,
        [t(0, Err::PreferredLeaderNotAvailable)]
    );
    let back = recompute_with(
        Some(broker.routing().unwrap().assignment()),
        &brokers(&[]),
        [""; 0],
        &[],
    );
    broker.apply_assignment(back);
    assert_eq!(metadata(&broker, "t").await[0].0, 2);
    // No controller round comes: the election times out.
    assert_eq!(
        elect(&broker, PREFERRED, Some(&[("t", 0)]), 0).await.1,
        [t(0, Err::RequestTimedOut)]
    );
    // The controller's round comes while the election waits.
    let watchers = broker.cluster.watchers();
    let waiting = tokio::spawn({
        let broker = broker.clone();
        async move { elect(&broker, PREFERRED, None, 60_000).await }
    });
    while broker.cluster.watchers() == watchers {
        tokio::task::yield_now().await;
    }
    controller_round(&broker, &[]).await;
    assert_eq!(waiting.await.unwrap(), (0, vec![("t".to_string(), 0, 0)]));
    assert_eq!(metadata(&broker, "t").await[0].0, 1);
}

/// A long-poll Fetch parked on a partition ends when the partition leaves
/// its leader, as Apache completes a delayed fetch on a leadership change:
/// NOT_LEADER_OR_FOLLOWER with the new leader, not an empty answer after
/// the fetch's whole max wait.
#[tokio::test]
async fn a_parked_fetch_ends_when_its_partition_moves() {
    use fetch_request::{FetchPartition, FetchTopic};
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(create(&broker, "f", &[&[0]]).await.0, 0);
    controller_round(&broker, &[]).await;
    assert_eq!(metadata(&broker, "f").await[0].0, 0);
    let fetch = FetchRequest::default()
        .with_max_wait_ms(60_000)
        .with_min_bytes(1)
        .with_max_bytes(1 << 20)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name("f"))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(0)
                .with_partition_max_bytes(1 << 20)])]);
    let watchers = broker.cluster.watchers();
    let parked = tokio::spawn({
        let broker = broker.clone();
        async move { call_at(&broker, 12, RequestKind::Fetch(fetch)).await }
    });
    // Parked: it watches for the next assignment.
    let parking = async {
        while broker.cluster.watchers() == watchers {
            tokio::task::yield_now().await;
        }
    };
    tokio::time::timeout(std::time::Duration::from_secs(10), parking)
        .await
        .expect("the fetch waits for the next assignment too");
    assert!(!parked.is_finished(), "nothing to read: the fetch waits");
    assert_eq!(
        outcomes(&reassign(&broker, 0, "f", &[(0, Some(&[1]))], false).await)[0].1,
        0
    );
    controller_round(&broker, &[]).await;
    // Bounded far below the fetch's 60 s: the move, not the wait, ends it.
    let answered = tokio::time::timeout(std::time::Duration::from_secs(10), parked)
        .await
        .expect("the move ends the parked fetch")
        .unwrap();
    let ResponseKind::Fetch(r) = answered else {
        panic!("not Fetch")
    };
    let p = &r.responses[0].partitions[0];
    assert_eq!(p.error_code, Err::NotLeaderOrFollower.code());
    assert_eq!(p.current_leader.leader_id.0, 1);
}

/// AlterReplicaLogDirs as Apache's ReplicaManager answers it, on a broker
/// whose one log directory is the volume: a replica asked into it is there
/// (NONE), another directory LOG_DIR_NOT_FOUND, a partition this broker is
/// no replica of NOT_LEADER_OR_FOLLOWER, one that does not exist
/// UNKNOWN_TOPIC_OR_PARTITION.
#[tokio::test]
async fn replicas_are_already_in_the_one_log_dir() {
    use alter_replica_log_dirs_request::*;
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(create(&broker, "t", &[&[0, 1], &[1, 2]]).await.0, 0);
    let own = broker.storage.data_dir().display().to_string();
    let asked = |path: &str| {
        AlterReplicaLogDir::default()
            .with_path(kafka_protocol::protocol::StrBytes::from_string(
                path.to_string(),
            ))
            .with_topics(vec![
                AlterReplicaLogDirTopic::default()
                    .with_name(name("t"))
                    .with_partitions(vec![0, 1, 7]),
                AlterReplicaLogDirTopic::default()
                    .with_name(name("u"))
                    .with_partitions(vec![0]),
            ])
    };
    let answers = |dir: &str| {
        let req = AlterReplicaLogDirsRequest::default().with_dirs(vec![asked(dir)]);
        let broker = broker.clone();
        async move {
            let ResponseKind::AlterReplicaLogDirs(r) =
                call_at(&broker, 2, RequestKind::AlterReplicaLogDirs(req)).await
            else {
                panic!("not AlterReplicaLogDirs")
            };
            let mut codes = Vec::new();
            for t in r.results {
                for p in t.partitions {
                    codes.push((t.topic_name.to_string(), p.partition_index, p.error_code));
                }
            }
            codes
        }
    };
    let at = |t: &str, p, code: i16| (t.to_string(), p, code);
    assert_eq!(
        answers(&own).await,
        [
            at("t", 0, 0),
            at("t", 1, Err::NotLeaderOrFollower.code()),
            at("t", 7, Err::UnknownTopicOrPartition.code()),
            at("u", 0, Err::UnknownTopicOrPartition.code()),
        ]
    );
    let elsewhere = answers("/somewhere/else").await;
    assert!(
        elsewhere
            .iter()
            .all(|(_, _, c)| *c == Err::LogDirNotFound.code()),
        "{elsewhere:?}"
    );
}

/// DescribeQuorum in Apache's terms over kaas's metadata (the controller's
/// assignment): partition 0 of `__cluster_metadata` only, else
/// UNKNOWN_TOPIC_OR_PARTITION on each partition asked; the broker Metadata
/// names as controller the one voter, at the version this broker follows
/// (the high watermark), the document's partition epoch as the leader
/// epoch; the other brokers observers at -1 (unknown), this one at the
/// version it holds.
#[tokio::test]
async fn the_quorum_is_the_controllers_assignment() {
    use describe_quorum_request::{PartitionData, TopicData};
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    let ask = |topic: &str, partitions: &[i32]| {
        let req = DescribeQuorumRequest::default().with_topics(vec![TopicData::default()
            .with_topic_name(name(topic))
            .with_partitions(
                partitions
                    .iter()
                    .map(|&p| PartitionData::default().with_partition_index(p))
                    .collect(),
            )]);
        let broker = broker.clone();
        async move {
            match call_at(&broker, 2, RequestKind::DescribeQuorum(req)).await {
                ResponseKind::DescribeQuorum(r) => r,
                other => panic!("{other:?}"),
            }
        }
    };
    for (topic, partitions) in [
        ("__cluster_metadata", vec![1]),
        ("t", vec![0]),
        ("__cluster_metadata", vec![0, 1]),
    ] {
        let r = ask(topic, &partitions).await;
        let codes: Vec<i16> = r.topics[0]
            .partitions
            .iter()
            .map(|p| p.error_code)
            .collect();
        assert_eq!(
            codes,
            vec![Err::UnknownTopicOrPartition.code(); partitions.len()],
            "{topic} {partitions:?}"
        );
    }
    // Broker 0 dead in the document: broker 1 is the controller Metadata names.
    let routing = broker.routing().unwrap();
    let mut doc = routing.assignment().as_ref().clone();
    doc.version += 1;
    doc.partitions_version = doc.version;
    doc.brokers[0].state = BrokerState::Dead;
    broker.apply_assignment(doc);
    let r = ask("__cluster_metadata", &[0]).await;
    assert_eq!(r.error_code, 0);
    let p = &r.topics[0].partitions[0];
    let routing = broker.routing().unwrap();
    assert_eq!(
        (
            p.error_code,
            p.leader_id.0,
            p.leader_epoch,
            p.high_watermark
        ),
        (0, 1, routing.leader_epoch(), routing.version() as i64)
    );
    let states = |v: &[describe_quorum_response::ReplicaState]| {
        v.iter()
            .map(|s| (s.replica_id.0, s.log_end_offset))
            .collect::<Vec<_>>()
    };
    assert_eq!(states(&p.current_voters), [(1, routing.version() as i64)]);
    assert_eq!(states(&p.observers), [(2, -1)]);
    let node = &r.nodes[0];
    let listener = &node.listeners[0];
    assert_eq!(
        (node.node_id.0, listener.host.as_str(), listener.port),
        (1, "127.0.0.1", 9093)
    );
}

/// A consumer with a `consumer_byte_rate` asks for no more than its quota
/// lets through from a standstill (Apache's `getMaxValueInQuotaWindow`):
/// the first partition's data (KIP-74 lets it exceed), nothing past the
/// bound; without the quota the same Fetch answers both partitions.
#[tokio::test]
async fn a_fetch_asks_no_more_than_the_quota_window() {
    use crate::client_quotas::{alter, Alteration, Entity, CLIENT_ID};
    use crate::storage::batch::tests::encode_batch;
    use fetch_request::{FetchPartition, FetchTopic};
    use produce_request::{PartitionProduceData, TopicProduceData};
    let dir = tempfile::tempdir().unwrap();
    let broker = broker(dir.path());
    assert_eq!(create(&broker, "q", &[&[0], &[0]]).await.0, 0);
    controller_round(&broker, &[]).await;
    for p in 0..2 {
        let req = ProduceRequest::default()
            .with_acks(-1)
            .with_topic_data(vec![TopicProduceData::default()
                .with_name(name("q"))
                .with_partition_data(vec![PartitionProduceData::default()
                    .with_index(p)
                    .with_records(Some(encode_batch(10, 1000).into()))])]);
        call_at(&broker, 9, RequestKind::Produce(req)).await;
    }
    let fetch = || {
        let partition = |p| {
            FetchPartition::default()
                .with_partition(p)
                .with_partition_max_bytes(1 << 20)
        };
        RequestKind::Fetch(
            FetchRequest::default()
                .with_max_wait_ms(0)
                .with_max_bytes(1 << 20)
                .with_topics(vec![FetchTopic::default()
                    .with_topic(name("q"))
                    .with_partitions(vec![partition(0), partition(1)])]),
        )
    };
    let sizes = |r: ResponseKind| {
        let ResponseKind::Fetch(r) = r else {
            panic!("not Fetch")
        };
        r.responses[0]
            .partitions
            .iter()
            .map(|p| p.records.as_ref().map_or(0, |b| b.len()))
            .collect::<Vec<_>>()
    };
    let free = sizes(call_at(&broker, 12, fetch()).await);
    assert!(free.iter().all(|n| *n > 0), "{free:?}");
    // 1 B/s over Apache's 11 windows: 10 bytes at most at once.
    let mut quotas = Default::default();
    alter(
        &mut quotas,
        &[Alteration {
            // The tests' client id.
            entity: Entity::of(&[(CLIENT_ID, Some("test"))]),
            ops: vec![("consumer_byte_rate".into(), Some(1.0))],
        }],
        false,
    );
    broker.quotas.install(&quotas);
    let capped = sizes(call_at(&broker, 12, fetch()).await);
    assert_eq!(capped, [free[0], 0]);
}
