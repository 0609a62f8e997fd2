//! Kafka's contract on a connection (issue #33): a request sees every
//! effect of the requests sent before it on that connection, however the
//! client pipelines them (Apache's broker reads a connection's next request
//! only once it answered the current one). Each request that changes
//! something is sent in one write with a read of its change; then random
//! sequences of writes and reads, pipelined whole, are checked against a
//! model of what each must answer.

use std::collections::HashMap;
use std::time::Duration;

use bytes::{Buf, Bytes};
use kaas_broker::auth::standard::AuthorizerSettings;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_client::KafkaClient;
use kaas_testkit::records::{encode_records, record, record_batch};
use kafka_protocol::messages::add_partitions_to_txn_request::AddPartitionsToTxnTopic;
use kafka_protocol::messages::create_acls_request::AclCreation;
use kafka_protocol::messages::create_topics_request::CreatableTopic;
use kafka_protocol::messages::delete_records_request::{
    DeleteRecordsPartition, DeleteRecordsTopic,
};
use kafka_protocol::messages::describe_configs_request::DescribeConfigsResource;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::incremental_alter_configs_request::{
    AlterConfigsResource, AlterableConfig,
};
use kafka_protocol::messages::list_offsets_request::{ListOffsetsPartition, ListOffsetsTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::{
    OffsetFetchRequestGroup, OffsetFetchRequestTopics,
};
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request, StrBytes};
use kafka_protocol::records::{Compression, Record};

const WAIT: Duration = Duration::from_secs(10);
const TOPIC: &str = "ordered";

fn name(s: &str) -> TopicName {
    TopicName(StrBytes::from_string(s.to_string()))
}

fn text(s: &str) -> StrBytes {
    StrBytes::from_string(s.to_string())
}

/// Requests written to one connection in a single write, then their
/// answers read in order.
struct Pipeline {
    client: KafkaClient,
    frames: Vec<u8>,
    last_correlation: i32,
}

impl Pipeline {
    fn new(client: KafkaClient) -> Pipeline {
        Pipeline {
            client,
            frames: Vec::new(),
            last_correlation: 0,
        }
    }

    fn push<R: Request>(&mut self, req: &R, version: i16) {
        let frame = self.client.encode(req, version).unwrap();
        self.frames.extend_from_slice(&frame);
    }

    async fn send(&mut self) {
        let frames = std::mem::take(&mut self.frames);
        self.client.send_raw(&frames).await.unwrap();
    }

    /// The next answer, as `R`'s response at `version`.
    async fn answer<R: Request>(&mut self, version: i16) -> R::Response
    where
        R::Response: Decodable + HeaderVersion,
    {
        let (correlation, mut body) = tokio::time::timeout(
            WAIT,
            self.client
                .read_response_body(<R::Response as HeaderVersion>::header_version(version)),
        )
        .await
        .expect("an answer in time")
        .unwrap();
        assert!(correlation > self.last_correlation, "answers out of order");
        self.last_correlation = correlation;
        let response = R::Response::decode(&mut body, version).unwrap();
        assert_eq!(body.remaining(), 0, "trailing bytes");
        response
    }

    /// One request alone.
    async fn call<R: Request>(&mut self, req: &R, version: i16) -> R::Response
    where
        R::Response: Decodable + HeaderVersion,
    {
        self.push(req, version);
        self.send().await;
        self.answer::<R>(version).await
    }
}

fn tune(c: &mut kaas_broker::BrokerConfig) {
    // ACLs can be created and described; the anonymous client may do
    // everything.
    c.standard_authorizer = Some(AuthorizerSettings {
        super_users: ["User:ANONYMOUS".to_string()].into(),
        allow_if_no_acl: true,
    });
}

async fn start(dir: &std::path::Path) -> (LocalCluster, Pipeline) {
    let mut config = LocalClusterConfig::new(1, dir.to_path_buf());
    config.base_port = 0;
    config.tune = tune;
    let cluster = LocalCluster::start(config).await.unwrap();
    cluster.brokers[0]
        .storage
        .topics
        .create_blocking(TOPIC, 2, Default::default(), false)
        .unwrap();
    let client = KafkaClient::connect(&cluster.addrs[0].to_string(), WAIT)
        .await
        .unwrap();
    (cluster, Pipeline::new(client))
}

const PRODUCE: i16 = 9;
const FETCH: i16 = 12;
const LIST_OFFSETS: i16 = 7;
const DELETE_RECORDS: i16 = 2;
const OFFSET_COMMIT: i16 = 8;
const OFFSET_FETCH: i16 = 8;

fn produce(partition: i32, records: Bytes, transactional_id: Option<&str>) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(10_000)
        .with_transactional_id(transactional_id.map(|t| TransactionalId(text(t))))
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name(TOPIC))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(records))])])
}

fn values(n: usize) -> Vec<Bytes> {
    (0..n).map(|i| Bytes::from(format!("v{i}"))).collect()
}

fn fetch(partition: i32, offset: i64, read_committed: bool) -> FetchRequest {
    FetchRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_max_wait_ms(0)
        .with_min_bytes(0)
        .with_max_bytes(1 << 20)
        .with_isolation_level(read_committed as i8)
        .with_topics(vec![FetchTopic::default()
            .with_topic(name(TOPIC))
            .with_partitions(vec![FetchPartition::default()
                .with_partition(partition)
                .with_fetch_offset(offset)
                .with_log_start_offset(-1)
                .with_current_leader_epoch(-1)
                .with_partition_max_bytes(1 << 20)])])
}

/// ListOffsets at `timestamp` (-2 earliest, -1 latest).
fn list_offsets(partition: i32, timestamp: i64) -> ListOffsetsRequest {
    ListOffsetsRequest::default()
        .with_replica_id(BrokerId(-1))
        .with_topics(vec![ListOffsetsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![ListOffsetsPartition::default()
                .with_partition_index(partition)
                .with_current_leader_epoch(-1)
                .with_timestamp(timestamp)])])
}

fn delete_records(partition: i32, offset: i64) -> DeleteRecordsRequest {
    DeleteRecordsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![DeleteRecordsTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![DeleteRecordsPartition::default()
                .with_partition_index(partition)
                .with_offset(offset)])])
}

fn offset_commit(group: &str, partition: i32, offset: i64) -> OffsetCommitRequest {
    OffsetCommitRequest::default()
        .with_group_id(GroupId(text(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_group_instance_id(None)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(name(TOPIC))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_leader_epoch(-1)])])
}

fn offset_fetch(group: &str, partition: i32) -> OffsetFetchRequest {
    OffsetFetchRequest::default().with_groups(vec![OffsetFetchRequestGroup::default()
        .with_group_id(GroupId(text(group)))
        .with_topics(Some(vec![OffsetFetchRequestTopics::default()
            .with_name(name(TOPIC))
            .with_partition_indexes(vec![partition])]))])
}

fn listed(r: &ListOffsetsResponse) -> i64 {
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "ListOffsets");
    p.offset
}

fn committed(r: &OffsetFetchResponse) -> i64 {
    let g = &r.groups[0];
    assert_eq!(g.error_code, 0, "OffsetFetch");
    let p = &g.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "OffsetFetch");
    p.committed_offset
}

fn base_offset(r: &ProduceResponse) -> i64 {
    let p = &r.responses[0].partition_responses[0];
    assert_eq!(p.error_code, 0, "Produce");
    p.base_offset
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_pipelined_behind_a_write_sees_it() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, mut c) = start(dir.path()).await;

    // Produce → Fetch.
    c.push(&produce(0, record_batch(values(5), None), None), PRODUCE);
    c.push(&fetch(0, 0, false), FETCH);
    c.send().await;
    assert_eq!(base_offset(&c.answer::<ProduceRequest>(PRODUCE).await), 0);
    let fetched = c.answer::<FetchRequest>(FETCH).await;
    let p = &fetched.responses[0].partitions[0];
    assert_eq!(
        (p.error_code, p.high_watermark),
        (0, 5),
        "Fetch behind Produce"
    );
    assert!(p.records.as_ref().is_some_and(|r| !r.is_empty()));

    // DeleteRecords → ListOffsets(earliest): confluent-kafka's
    // test_delete_records, which saw 0 where 2 was due.
    c.push(&delete_records(0, 2), DELETE_RECORDS);
    c.push(&list_offsets(0, -2), LIST_OFFSETS);
    c.send().await;
    let deleted = c.answer::<DeleteRecordsRequest>(DELETE_RECORDS).await;
    let d = &deleted.topics[0].partitions[0];
    assert_eq!((d.error_code, d.low_watermark), (0, 2));
    let earliest = c.answer::<ListOffsetsRequest>(LIST_OFFSETS).await;
    assert_eq!(
        listed(&earliest),
        2,
        "ListOffsets(earliest) behind DeleteRecords"
    );

    // OffsetCommit → OffsetFetch.
    c.push(&offset_commit("g", 0, 4), OFFSET_COMMIT);
    c.push(&offset_fetch("g", 0), OFFSET_FETCH);
    c.send().await;
    let commit = c.answer::<OffsetCommitRequest>(OFFSET_COMMIT).await;
    assert_eq!(commit.topics[0].partitions[0].error_code, 0);
    let fetched = c.answer::<OffsetFetchRequest>(OFFSET_FETCH).await;
    assert_eq!(committed(&fetched), 4, "OffsetFetch behind OffsetCommit");

    // CreateTopics → Metadata.
    let created = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name("fresh"))
            .with_num_partitions(3)
            .with_replication_factor(1)]);
    c.push(&created, 7);
    c.push(
        &MetadataRequest::default()
            .with_topics(Some(vec![
                MetadataRequestTopic::default().with_name(Some(name("fresh")))
            ]))
            .with_allow_auto_topic_creation(false),
        12,
    );
    c.send().await;
    let created = c.answer::<CreateTopicsRequest>(7).await;
    assert_eq!(created.topics[0].error_code, 0);
    let metadata = c.answer::<MetadataRequest>(12).await;
    let t = &metadata.topics[0];
    assert_eq!(
        (t.error_code, t.partitions.len()),
        (0, 3),
        "Metadata behind CreateTopics"
    );

    // IncrementalAlterConfigs → DescribeConfigs.
    c.push(
        &IncrementalAlterConfigsRequest::default().with_resources(vec![
            AlterConfigsResource::default()
                .with_resource_type(2)
                .with_resource_name(text(TOPIC))
                .with_configs(vec![AlterableConfig::default()
                    .with_name(text("retention.ms"))
                    .with_config_operation(0)
                    .with_value(Some(text("12345")))]),
        ]),
        1,
    );
    c.push(
        &DescribeConfigsRequest::default().with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(2)
            .with_resource_name(text(TOPIC))
            .with_configuration_keys(Some(vec![text("retention.ms")]))]),
        4,
    );
    c.send().await;
    let altered = c.answer::<IncrementalAlterConfigsRequest>(1).await;
    assert_eq!(altered.responses[0].error_code, 0);
    let described = c.answer::<DescribeConfigsRequest>(4).await;
    let value = described.results[0].configs[0]
        .value
        .as_ref()
        .map(|v| v.to_string());
    assert_eq!(
        value.as_deref(),
        Some("12345"),
        "DescribeConfigs behind IncrementalAlterConfigs"
    );

    // CreateAcls → DescribeAcls.
    c.push(
        &CreateAclsRequest::default().with_creations(vec![AclCreation::default()
            .with_resource_type(2)
            .with_resource_name(text(TOPIC))
            .with_resource_pattern_type(3)
            .with_principal(text("User:alice"))
            .with_host(text("*"))
            .with_operation(3)
            .with_permission_type(3)]),
        3,
    );
    c.push(
        &DescribeAclsRequest::default()
            .with_resource_type_filter(2)
            .with_resource_name_filter(Some(text(TOPIC)))
            .with_pattern_type_filter(3)
            .with_principal_filter(None)
            .with_host_filter(None)
            .with_operation(1)
            .with_permission_type(1),
        3,
    );
    c.send().await;
    let created = c.answer::<CreateAclsRequest>(3).await;
    assert_eq!(created.results[0].error_code, 0);
    let described = c.answer::<DescribeAclsRequest>(3).await;
    assert_eq!(described.error_code, 0);
    let acls: usize = described.resources.iter().map(|r| r.acls.len()).sum();
    assert_eq!(acls, 1, "DescribeAcls behind CreateAcls");

    // EndTxn → Fetch(read_committed).
    let init = c
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(Some(TransactionalId(text("tx"))))
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
            4,
        )
        .await;
    assert_eq!(init.error_code, 0);
    let (pid, epoch) = (init.producer_id, init.producer_epoch);
    let added = c
        .call(
            &AddPartitionsToTxnRequest::default()
                .with_v3_and_below_transactional_id(TransactionalId(text("tx")))
                .with_v3_and_below_producer_id(pid)
                .with_v3_and_below_producer_epoch(epoch)
                .with_v3_and_below_topics(vec![AddPartitionsToTxnTopic::default()
                    .with_name(name(TOPIC))
                    .with_partitions(vec![1])]),
            3,
        )
        .await;
    assert_eq!(
        added.results_by_topic_v3_and_below[0].results_by_partition[0].partition_error_code,
        0
    );
    let txn_batch = record_batch(values(3), Some((pid.0, epoch)));
    let produced = c.call(&produce(1, txn_batch, Some("tx")), PRODUCE).await;
    assert_eq!(base_offset(&produced), 0);
    c.push(
        &EndTxnRequest::default()
            .with_transactional_id(TransactionalId(text("tx")))
            .with_producer_id(pid)
            .with_producer_epoch(epoch)
            .with_committed(true),
        3,
    );
    c.push(&fetch(1, 0, true), FETCH);
    c.send().await;
    assert_eq!(c.answer::<EndTxnRequest>(3).await.error_code, 0);
    let fetched = c.answer::<FetchRequest>(FETCH).await;
    let p = &fetched.responses[0].partitions[0];
    // Three records and the commit marker, all stable.
    assert_eq!(
        (p.error_code, p.high_watermark, p.last_stable_offset),
        (0, 4, 4),
        "Fetch(read_committed) behind EndTxn"
    );

    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_produces_of_an_idempotent_producer_append_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, mut c) = start(dir.path()).await;
    let init = c
        .call(
            &InitProducerIdRequest::default()
                .with_transactional_id(None)
                .with_transaction_timeout_ms(60_000)
                .with_producer_id(ProducerId(-1))
                .with_producer_epoch(-1),
            4,
        )
        .await;
    assert_eq!(init.error_code, 0, "{init:?}");
    // Twenty batches of three in one write, sequences 0, 3, 6, …: each
    // must follow the one before it, or its sequence is out of order.
    for b in 0..20 {
        let records: Vec<Record> = (0..3)
            .map(|i| Record {
                producer_id: init.producer_id.0,
                producer_epoch: init.producer_epoch,
                sequence: b * 3 + i,
                ..record(i as i64, 1_000, None, Some(b"x"))
            })
            .collect();
        let batch = encode_records(&records, Compression::None);
        c.push(&produce(0, batch.into(), None), PRODUCE);
    }
    c.push(&list_offsets(0, -1), LIST_OFFSETS);
    c.send().await;
    for b in 0..20 {
        let produced = c.answer::<ProduceRequest>(PRODUCE).await;
        assert_eq!(base_offset(&produced), i64::from(b) * 3, "batch {b}");
    }
    assert_eq!(
        listed(&c.answer::<ListOffsetsRequest>(LIST_OFFSETS).await),
        60
    );
    cluster.shutdown().await;
}

/// What the broker must answer, request by request.
#[derive(Default)]
struct Model {
    start: [i64; 2],
    end: [i64; 2],
    committed: HashMap<i32, i64>,
}

enum Expect {
    Produced(i64),
    Deleted(i64),
    Listed(i64),
    Fetched { high_watermark: i64, log_start: i64 },
    Committed,
    OffsetFetched(i64),
}

/// A small deterministic generator (xorshift), seeded per round.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_random_pipelined_sequence_reads_what_the_model_says() {
    let dir = tempfile::tempdir().unwrap();
    let (cluster, mut c) = start(dir.path()).await;
    let mut model = Model::default();
    for round in 0..12u64 {
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (round + 1));
        let mut expected = Vec::new();
        for _ in 0..30 {
            let p = rng.below(2) as i32;
            let i = p as usize;
            match rng.below(7) {
                0 | 1 => {
                    let n = 1 + rng.below(4) as usize;
                    c.push(&produce(p, record_batch(values(n), None), None), PRODUCE);
                    expected.push(Expect::Produced(model.end[i]));
                    model.end[i] += n as i64;
                }
                2 => {
                    let to = model.start[i]
                        + rng.below((model.end[i] - model.start[i] + 1) as u64) as i64;
                    c.push(&delete_records(p, to), DELETE_RECORDS);
                    expected.push(Expect::Deleted(to));
                    model.start[i] = to;
                }
                3 => {
                    let earliest = rng.below(2) == 0;
                    c.push(
                        &list_offsets(p, if earliest { -2 } else { -1 }),
                        LIST_OFFSETS,
                    );
                    expected.push(Expect::Listed(if earliest {
                        model.start[i]
                    } else {
                        model.end[i]
                    }));
                }
                4 => {
                    let from = model.start[i]
                        + rng.below((model.end[i] - model.start[i] + 1) as u64) as i64;
                    c.push(&fetch(p, from, false), FETCH);
                    expected.push(Expect::Fetched {
                        high_watermark: model.end[i],
                        log_start: model.start[i],
                    });
                }
                5 => {
                    let offset = rng.below(1_000) as i64;
                    c.push(&offset_commit("model", p, offset), OFFSET_COMMIT);
                    expected.push(Expect::Committed);
                    model.committed.insert(p, offset);
                }
                _ => {
                    c.push(&offset_fetch("model", p), OFFSET_FETCH);
                    expected.push(Expect::OffsetFetched(
                        *model.committed.get(&p).unwrap_or(&-1),
                    ));
                }
            }
        }
        c.send().await;
        for (k, e) in expected.into_iter().enumerate() {
            let at = format!("round {round}, request {k}");
            match e {
                Expect::Produced(base) => {
                    assert_eq!(
                        base_offset(&c.answer::<ProduceRequest>(PRODUCE).await),
                        base,
                        "{at}"
                    )
                }
                Expect::Deleted(low) => {
                    let r = c.answer::<DeleteRecordsRequest>(DELETE_RECORDS).await;
                    let d = &r.topics[0].partitions[0];
                    assert_eq!((d.error_code, d.low_watermark), (0, low), "{at}");
                }
                Expect::Listed(offset) => {
                    assert_eq!(
                        listed(&c.answer::<ListOffsetsRequest>(LIST_OFFSETS).await),
                        offset,
                        "{at}"
                    )
                }
                Expect::Fetched {
                    high_watermark,
                    log_start,
                } => {
                    let r = c.answer::<FetchRequest>(FETCH).await;
                    let p = &r.responses[0].partitions[0];
                    assert_eq!(
                        (p.error_code, p.high_watermark, p.log_start_offset),
                        (0, high_watermark, log_start),
                        "{at}"
                    );
                }
                Expect::Committed => {
                    let r = c.answer::<OffsetCommitRequest>(OFFSET_COMMIT).await;
                    assert_eq!(r.topics[0].partitions[0].error_code, 0, "{at}");
                }
                Expect::OffsetFetched(offset) => {
                    assert_eq!(
                        committed(&c.answer::<OffsetFetchRequest>(OFFSET_FETCH).await),
                        offset,
                        "{at}"
                    )
                }
            }
        }
    }
    cluster.shutdown().await;
}
