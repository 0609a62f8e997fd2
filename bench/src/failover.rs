//! Failover: how long a partition goes unacknowledged when its leader's
//! broker is lost, from the loss to the first record acknowledged through
//! the new leader, beside the controller's detection time (issue #32,
//! docs/design/volume.md). Broker and controller processes of the
//! `kaas-broker` binary beside this one, a librdkafka producer writing one
//! record every 10 ms to a partition the lost broker leads.
//!
//! On local disk the leader's broker is killed (-9). With two GlusterFS
//! mounts (`scripts/glusterfs-testenv up`: `KAAS_GLUSTER_A`, `_B`,
//! `_A_PID`), the mount of the leader's broker stalls (its FUSE client
//! stopped), which keeps the leader's locks on the volume.
//!
//! Beside librdkafka's figure, the same failure seen by a client that asks
//! a surviving broker for the partition's leader every 10 ms and produces
//! to it at once: what kaas itself takes, without the client's timers.
//!
//! librdkafka asks again for the leader of a partition whose broker is down
//! once a second (its topic scan; the request it sends when the connection
//! drops comes back before the controller has decided), so its figure
//! depends on where in that second the failure falls. The rounds spread
//! the failure over the second, from the producer's start, instead of
//! always hitting it at one phase.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use kaas_client::KafkaClient;
use kaas_testkit::gluster::Mounts;
use kaas_testkit::{ClusterOptions, ProcessCluster};
use kafka_protocol::messages::metadata_request::MetadataRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{MetadataRequest, ProduceRequest, TopicName};
use kafka_protocol::protocol::StrBytes;
use rdkafka::producer::{FutureProducer, FutureRecord};

use crate::dataplane::{client, create_topic};
use crate::report::{emit, median, note, section, Figure, Target};
use crate::Env;

const TOPIC: &str = "failover";
const PARTITIONS: i32 = 6;
/// How long a stalled mount stays stopped.
const STALL: Duration = Duration::from_secs(8);

pub async fn run(env: &Env) -> anyhow::Result<()> {
    let rounds = if env.quick { 2 } else { 5 };
    let bin = broker_binary()?;
    section(&format!(
        "Failover: a partition's leader lost, first acknowledgement through the new leader \
         ({rounds} rounds each, medians)"
    ));
    kill_9_on_local_disk(env, &bin, rounds).await?;
    match Mounts::from_env().and_then(|m| Some((m.a_client?, m))) {
        Some((a_client, m)) => mount_stall_on_glusterfs(&bin, rounds, m, a_client).await?,
        None => note(
            "failover on GlusterFS skipped: no mounts (eval \"$(scripts/glusterfs-testenv up)\" \
             sets KAAS_GLUSTER_A, KAAS_GLUSTER_B and KAAS_GLUSTER_A_PID)",
        ),
    }
    Ok(())
}

/// The `kaas-broker` binary beside this one (`cargo build --release -p
/// kaas-broker`).
pub(crate) fn broker_binary() -> anyhow::Result<PathBuf> {
    let me = std::env::current_exe()?;
    let bin = me.with_file_name("kaas-broker");
    anyhow::ensure!(
        bin.exists(),
        "{} not found: build it first (cargo build --release -p kaas-broker)",
        bin.display()
    );
    Ok(bin)
}

async fn kill_9_on_local_disk(env: &Env, bin: &Path, rounds: usize) -> anyhow::Result<()> {
    let dir = env.dir("failover");
    let cluster = ProcessCluster::start(Some(&dir), ClusterOptions::new(bin, 3)).await?;
    make_topic(&cluster).await?;
    let mut times = Times::default();
    for round in 0..rounds {
        let victim = round % cluster.len();
        let phase = phase_of(round, rounds);
        times.push(one_round(&cluster, victim, phase, || cluster.kill(victim)).await?);
        cluster.restart(victim)?;
        cluster
            .wait_alive(&[victim], Duration::from_secs(30))
            .await?;
    }
    times.emit("kill -9 of a leader", 2.0);
    Ok(())
}

async fn mount_stall_on_glusterfs(
    bin: &Path,
    rounds: usize,
    m: Mounts,
    a_client: u32,
) -> anyhow::Result<()> {
    let run = format!("kaas-bench-failover-{}", std::process::id());
    let (through_a, through_b) = (m.a.join(&run), m.b.join(&run));
    std::fs::create_dir_all(&through_b)?;
    let logs = tempfile::tempdir()?;
    let opts = ClusterOptions::new(bin, 2).mounts(
        vec![through_a.join("data"), through_b.join("data")],
        through_b.join("data"),
    );
    let cluster = ProcessCluster::start(Some(logs.path()), opts).await?;
    make_topic(&cluster).await?;
    let mut times = Times::default();
    for round in 0..rounds {
        let stalled_at = Mutex::new(None::<Instant>);
        let result = one_round(&cluster, 0, phase_of(round, rounds), || {
            signal("-STOP", a_client);
            *stalled_at.lock().expect("not poisoned") = Some(Instant::now());
        })
        .await;
        // The mount comes back whatever the round did.
        let since = stalled_at
            .lock()
            .expect("not poisoned")
            .map_or(Duration::ZERO, |t| t.elapsed());
        tokio::time::sleep(STALL.saturating_sub(since)).await;
        signal("-CONT", a_client);
        times.push(result?);
        cluster.wait_alive(&[0], Duration::from_secs(30)).await?;
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&through_b);
    times.emit("GlusterFS mount of a leader stalled", 5.0);
    Ok(())
}

/// The seconds of one round, from the failure: the controller counts the
/// broker dead, a client asking the new leader at once is acknowledged,
/// librdkafka is acknowledged.
#[derive(Clone, Copy, Debug)]
struct RoundTimes {
    detected: f64,
    direct: f64,
    librdkafka: f64,
}

#[derive(Default)]
struct Times(Vec<RoundTimes>);

impl Times {
    fn push(&mut self, t: RoundTimes) {
        note(format!(
            "  round {}: dead after {:.2} s, direct ack {:.2} s, librdkafka ack {:.2} s",
            self.0.len(),
            t.detected,
            t.direct,
            t.librdkafka
        ));
        self.0.push(t);
    }

    fn median_of(&self, f: impl Fn(&RoundTimes) -> f64) -> f64 {
        median(&self.0.iter().map(f).collect::<Vec<_>>())
    }

    /// The target is kaas's own time (a client that asks for the leader
    /// anew and produces at once); librdkafka's figure beside it adds its
    /// timers (a partition whose broker is down is looked up again at its
    /// one-second topic scan).
    fn emit(&self, what: &str, target_s: f64) {
        let detected = self.median_of(|t| t.detected);
        emit(
            Figure::new(
                format!("failover: {what}, to the first ack of a client asking the leader anew"),
                self.median_of(|t| t.direct),
                "s",
            )
            .baseline("the controller counts it dead", detected)
            .target(Target::AtMost(target_s)),
        );
        emit(
            Figure::new(
                format!("failover: {what}, to the first ack through librdkafka"),
                self.median_of(|t| t.librdkafka),
                "s",
            )
            .baseline("the controller counts it dead", detected),
        );
    }
}

/// When in the second after the producer's start round `round` of
/// `rounds` fails its broker: spread evenly over that second.
fn phase_of(round: usize, rounds: usize) -> Duration {
    Duration::from_secs(1).mul_f64(round as f64 / rounds as f64)
}

/// The topic, created through librdkafka's admin client (blocking).
async fn make_topic(cluster: &ProcessCluster) -> anyhow::Result<()> {
    let bootstrap = cluster.bootstrap();
    tokio::task::spawn_blocking(move || create_topic(&client(&bootstrap), TOPIC, PARTITIONS))
        .await?
}

fn signal(which: &str, pid: u32) {
    let _ = Command::new("kill")
        .args([which, &pid.to_string()])
        .status();
}

/// One failure of broker `victim`, `phase` into the second after the
/// producer's start, while a producer writes to a partition it leads.
async fn one_round(
    cluster: &ProcessCluster,
    victim: usize,
    phase: Duration,
    fail: impl FnOnce(),
) -> anyhow::Result<RoundTimes> {
    let partition = (0..PARTITIONS)
        .find(|&p| {
            cluster
                .routing()
                .and_then(|r| r.owner_of_partition(TOPIC, p))
                == Some(victim as i32)
        })
        .with_context(|| format!("no partition led by broker {victim}"))?;
    let mut config = client(&cluster.bootstrap());
    config
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "0")
        .set("message.timeout.ms", "60000");
    let producer: FutureProducer = config.create()?;
    let failed_at = Arc::new(Mutex::new(None::<Instant>));
    let first_ack = Arc::new(Mutex::new(None::<Instant>));
    let writer = tokio::spawn({
        let (failed_at, first_ack) = (failed_at.clone(), first_ack.clone());
        async move {
            for n in 0u64.. {
                if first_ack.lock().expect("not poisoned").is_some() {
                    return;
                }
                let sent_at = Instant::now();
                let payload = n.to_string();
                let sent = producer
                    .send(
                        FutureRecord::<(), _>::to(TOPIC)
                            .partition(partition)
                            .payload(&payload),
                        Duration::from_secs(60),
                    )
                    .await;
                let after_failure = failed_at
                    .lock()
                    .expect("not poisoned")
                    .is_some_and(|t| sent_at >= t);
                if sent.is_ok() && after_failure {
                    *first_ack.lock().expect("not poisoned") = Some(Instant::now());
                }
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    });
    tokio::time::sleep(Duration::from_secs(1) + phase).await;
    let survivor = (0..cluster.len())
        .find(|&id| id != victim)
        .context("no other broker")?;
    let t0 = Instant::now();
    *failed_at.lock().expect("not poisoned") = Some(t0);
    fail();
    let direct = tokio::spawn(direct_ack(cluster.addr(survivor), partition, victim as i32));
    anyhow::ensure!(
        cluster.wait_dead(victim, Duration::from_secs(20)).await,
        "the controller did not count broker {victim} dead"
    );
    let detected = t0.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    let librdkafka = loop {
        if let Some(at) = *first_ack.lock().expect("not poisoned") {
            break at.duration_since(t0).as_secs_f64();
        }
        anyhow::ensure!(
            Instant::now() < deadline,
            "no record acknowledged within 60 s of the failure"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    writer.abort();
    let direct = tokio::time::timeout(Duration::from_secs(60), direct)
        .await
        .context("no direct produce acknowledged within 60 s of the failure")??
        .duration_since(t0)
        .as_secs_f64();
    Ok(RoundTimes {
        detected,
        direct,
        librdkafka,
    })
}

/// Until a produce is acknowledged: every 10 ms, asks `survivor` for the
/// leader of `partition` and, when it is not `victim`, produces one record
/// (acks=all) to it. The moment of the acknowledgement.
async fn direct_ack(survivor: String, partition: i32, victim: i32) -> Instant {
    loop {
        let attempt = async {
            let mut asked = KafkaClient::connect(&survivor, Duration::from_secs(1)).await?;
            let metadata = asked
                .send(
                    &MetadataRequest::default().with_topics(Some(vec![
                        MetadataRequestTopic::default().with_name(Some(topic_name())),
                    ])),
                    12,
                )
                .await?;
            let leader = metadata
                .topics
                .first()
                .and_then(|t| t.partitions.iter().find(|p| p.partition_index == partition))
                .map(|p| p.leader_id.0)
                .context("partition not in metadata")?;
            anyhow::ensure!(leader != victim, "still led by the failed broker");
            let broker = metadata
                .brokers
                .iter()
                .find(|b| b.node_id.0 == leader)
                .context("leader not among the brokers")?;
            let addr = format!("{}:{}", broker.host, broker.port);
            let mut leader = KafkaClient::connect(&addr, Duration::from_secs(1)).await?;
            let produced = leader
                .send(
                    &ProduceRequest::default()
                        .with_acks(-1)
                        .with_timeout_ms(1000)
                        .with_topic_data(vec![TopicProduceData::default()
                            .with_name(topic_name())
                            .with_partition_data(vec![PartitionProduceData::default()
                                .with_index(partition)
                                .with_records(Some(kaas_testkit::records::record_batch(
                                    [bytes::Bytes::from_static(b"direct")],
                                    None,
                                )))])]),
                    9,
                )
                .await?;
            let code = produced.responses[0].partition_responses[0].error_code;
            anyhow::ensure!(code == 0, "produce answered error {code}");
            anyhow::Ok(Instant::now())
        };
        if let Ok(Ok(at)) = tokio::time::timeout(Duration::from_secs(2), attempt).await {
            return at;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

fn topic_name() -> TopicName {
    TopicName(StrBytes::from_static_str(TOPIC))
}
