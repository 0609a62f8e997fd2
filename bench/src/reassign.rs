//! Reassignment: how long a partition takes to move to another broker,
//! from the AlterPartitionReassignments request to the first record
//! acknowledged by its new leader (issue #33). On the shared volume a
//! move copies nothing, so a partition holding hundreds of MiB moves as
//! fast as an empty one: the controller's next round (200 ms here), the
//! broker following the new assignment, the new leader opening the log.
//! Beside it, in the same run: the same move of an empty partition, and
//! what copying the full partition's bytes once takes on this disk (read,
//! write, fsync), which is the least a broker that copies replicas pays.

use std::io::{Read, Write};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::Bytes;
use kaas_client::KafkaClient;
use kaas_testkit::{ClusterOptions, ProcessCluster};
use kafka_protocol::messages::alter_partition_reassignments_request::{
    ReassignablePartition, ReassignableTopic,
};
use kafka_protocol::messages::create_topics_request::{CreatableReplicaAssignment, CreatableTopic};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    AlterPartitionReassignmentsRequest, BrokerId, CreateTopicsRequest, MetadataRequest,
    ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

use crate::report::{emit, median, note, section, Figure, Target};
use crate::Env;

const TOPIC: &str = "reassign";
/// The partition filled with records, and the one left empty.
const FULL: i32 = 0;
const EMPTY: i32 = 1;
/// Records of 64 KiB, 15 to a batch (under `message.max.bytes`).
const RECORD_BYTES: usize = 64 * 1024;
const PER_BATCH: usize = 15;

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 2 } else { 5 };
    let mib: usize = if env.quick { 64 } else { 512 };
    section(&format!(
        "Reassignment: a partition of {mib} MiB and an empty one moved to another broker, \
         to the first ack at the new leader ({rounds} rounds each, medians)"
    ));
    let bin = crate::failover::broker_binary()?;
    let dir = env.dir("reassign");
    let cluster = ProcessCluster::start(Some(&dir), ClusterOptions::new(&bin, 3)).await?;
    cluster
        .wait_alive(&[0, 1, 2], Duration::from_secs(30))
        .await?;
    let mut admin = KafkaClient::connect(&cluster.addr(0), Duration::from_secs(5)).await?;
    create(&mut admin).await?;
    wait_led(&cluster, &[(FULL, 0), (EMPTY, 0)]).await?;
    fill(&cluster.addr(0), mib).await?;
    let copy = copy_once(&cluster.data_dir().join(TOPIC).join(FULL.to_string()), &dir)?;

    let (mut full, mut empty) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let to = (round + 1) % 3;
        // Both in one request, so one controller round moves both: what
        // differs is only the partition's size.
        let took = move_to(&cluster, &mut admin, &[FULL, EMPTY], to, round % 2 == 1).await?;
        note(format!(
            "  round {round}: to broker {to}, the full partition in {:.3} s, the empty one in {:.3} s",
            took[0], took[1]
        ));
        full.push(took[0]);
        empty.push(took[1]);
    }
    emit(
        Figure::new(
            format!("reassign a {mib} MiB partition, to the first ack at its new leader"),
            median(&full),
            "s",
        )
        .baseline("the same move of an empty partition", median(&empty))
        .target(Target::RatioAtMost(1.5)),
    );
    emit(
        Figure::new(
            format!("reassign a {mib} MiB partition, to the first ack at its new leader"),
            median(&full),
            "s",
        )
        .baseline(
            format!("copying its {mib} MiB once (read, write, fsync)"),
            copy,
        )
        .target(Target::None),
    );
    cluster.shutdown();
    Ok(())
}

fn name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}

/// Both partitions on broker 0.
async fn create(admin: &mut KafkaClient) -> anyhow::Result<()> {
    let on_0 = |p| {
        CreatableReplicaAssignment::default()
            .with_partition_index(p)
            .with_broker_ids(vec![BrokerId(0)])
    };
    let req = CreateTopicsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![CreatableTopic::default()
            .with_name(name())
            .with_num_partitions(-1)
            .with_replication_factor(-1)
            .with_assignments(vec![on_0(FULL), on_0(EMPTY)])]);
    let created = admin.send(&req, 7).await?;
    let t = &created.topics[0];
    anyhow::ensure!(
        t.error_code == 0,
        "CreateTopics answered {}: {:?}",
        t.error_code,
        t.error_message
    );
    Ok(())
}

/// Until the assignment shows each `(partition, leader)`.
async fn wait_led(cluster: &ProcessCluster, wanted: &[(i32, i32)]) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let routing = cluster.routing();
        let led = |&(p, b): &(i32, i32)| {
            routing
                .as_ref()
                .and_then(|r| r.owner_of_partition(TOPIC, p))
                == Some(b)
        };
        if wanted.iter().all(led) {
            return Ok(());
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "not led as {wanted:?} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn produce(partition: i32, records: Vec<Bytes>, acks: i16) -> ProduceRequest {
    ProduceRequest::default()
        .with_acks(acks)
        .with_timeout_ms(10_000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(name())
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(partition)
                .with_records(Some(kaas_testkit::records::record_batch(
                    records, None,
                )))])])
}

/// `mib` MiB of records into the full partition, through its leader.
async fn fill(leader: &str, mib: usize) -> anyhow::Result<()> {
    let mut client = KafkaClient::connect(leader, Duration::from_secs(5)).await?;
    let record = Bytes::from(vec![b'x'; RECORD_BYTES]);
    let batches = (mib << 20).div_ceil(RECORD_BYTES * PER_BATCH);
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut sent = 0;
    while sent < batches {
        let req = produce(FULL, vec![record.clone(); PER_BATCH], 1);
        match client.send(&req, 9).await?.responses[0].partition_responses[0].error_code {
            0 => sent += 1,
            // The leader follows the assignment a moment after the file.
            6 if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(20)).await,
            code => anyhow::bail!("filling: produce answered {code}"),
        }
    }
    Ok(())
}

/// Reads every file of the partition folder `from` and writes it to one
/// file under `scratch`, fsynced: the seconds it took.
fn copy_once(from: &Path, scratch: &Path) -> anyhow::Result<f64> {
    let started = Instant::now();
    let target = scratch.join("copy");
    let mut out = std::fs::File::create(&target)?;
    let mut buf = vec![0u8; 1 << 20];
    for entry in std::fs::read_dir(from).with_context(|| format!("{}", from.display()))? {
        let path = entry?.path();
        if !path.is_file() {
            continue;
        }
        let mut file = std::fs::File::open(&path)?;
        loop {
            let n = file.read(&mut buf)?;
            if n == 0 {
                break;
            }
            out.write_all(&buf[..n])?;
        }
    }
    out.sync_all()?;
    let took = started.elapsed().as_secs_f64();
    drop(out);
    std::fs::remove_file(&target)?;
    Ok(took)
}

/// Reassigns `partitions` to broker `to` and produces to each until its
/// new leader acknowledges (in reverse order when `reversed`, so neither
/// is always asked first): the seconds from the request to each ack.
async fn move_to(
    cluster: &ProcessCluster,
    admin: &mut KafkaClient,
    partitions: &[i32],
    to: i32,
    reversed: bool,
) -> anyhow::Result<Vec<f64>> {
    let started = Instant::now();
    let moves = partitions.iter().map(|&p| {
        ReassignablePartition::default()
            .with_partition_index(p)
            .with_replicas(Some(vec![BrokerId(to)]))
    });
    let req = AlterPartitionReassignmentsRequest::default()
        .with_timeout_ms(10_000)
        .with_topics(vec![ReassignableTopic::default()
            .with_name(name())
            .with_partitions(moves.collect())]);
    let answer = admin.send(&req, 0).await?;
    let codes: Vec<i16> = answer.responses[0]
        .partitions
        .iter()
        .map(|p| p.error_code)
        .collect();
    anyhow::ensure!(
        answer.error_code == 0 && codes.iter().all(|&c| c == 0),
        "AlterPartitionReassignments answered {codes:?}"
    );
    let mut new_leader =
        KafkaClient::connect(&cluster.addr(to as usize), Duration::from_secs(5)).await?;
    let mut took: Vec<Option<f64>> = vec![None; partitions.len()];
    let mut order: Vec<usize> = (0..partitions.len()).collect();
    if reversed {
        order.reverse();
    }
    let deadline = started + Duration::from_secs(30);
    while took.iter().any(Option::is_none) {
        anyhow::ensure!(
            Instant::now() < deadline,
            "{partitions:?} not all led by broker {to} within 30 s"
        );
        // What a client does: asks for the leader, produces to it.
        let metadata = admin
            .send(
                &MetadataRequest::default().with_topics(Some(vec![MetadataRequestTopic::default(
                )
                .with_name(Some(name()))])),
                12,
            )
            .await?;
        for &i in &order {
            let partition = partitions[i];
            let leader = metadata.topics[0]
                .partitions
                .iter()
                .find(|p| p.partition_index == partition)
                .map(|p| p.leader_id.0);
            if took[i].is_some() || leader != Some(to) {
                continue;
            }
            let req = produce(partition, vec![Bytes::from_static(b"moved")], -1);
            let answer = new_leader.send(&req, 9).await?;
            if answer.responses[0].partition_responses[0].error_code == 0 {
                took[i] = Some(started.elapsed().as_secs_f64());
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    Ok(took.into_iter().flatten().collect())
}
