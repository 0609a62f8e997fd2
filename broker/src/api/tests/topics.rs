//! Topic APIs on the wire: configs checked, stored, described and
//! altered; retention, DeleteRecords, CreatePartitions, DescribeCluster
//! and DescribeLogDirs, max.message.bytes, DescribeTopicPartitions paging.

use std::sync::Arc;

use kaas_shared::{Assignment, BrokerInfo};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::*;
use crate::broker::BrokerConfig;
use crate::storage::batch::tests::encode_batch;

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
