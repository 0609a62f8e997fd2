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

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;
use kaas_testkit::gluster::Mounts;
use kaas_testkit::{ClusterOptions, ProcessCluster};
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
fn broker_binary() -> anyhow::Result<PathBuf> {
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
    let (mut failovers, mut detections) = (Vec::new(), Vec::new());
    for round in 0..rounds {
        let victim = round % cluster.len();
        let (detected, acked) = one_round(&cluster, victim, || cluster.kill(victim)).await?;
        cluster.restart(victim)?;
        cluster
            .wait_alive(&[victim], Duration::from_secs(30))
            .await?;
        detections.push(detected);
        failovers.push(acked);
    }
    emit(
        Figure::new(
            "failover: kill -9 of a leader, to the first ack via the new one",
            median(&failovers),
            "s",
        )
        .baseline("the controller counts it dead", median(&detections))
        .target(Target::AtMost(2.0)),
    );
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
    let (mut failovers, mut detections) = (Vec::new(), Vec::new());
    for _ in 0..rounds {
        let stalled_at = Mutex::new(None::<Instant>);
        let result = one_round(&cluster, 0, || {
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
        let (detected, acked) = result?;
        cluster.wait_alive(&[0], Duration::from_secs(30)).await?;
        detections.push(detected);
        failovers.push(acked);
    }
    drop(cluster);
    let _ = std::fs::remove_dir_all(&through_b);
    emit(
        Figure::new(
            "failover: GlusterFS mount of a leader stalled, to the first ack via the new one",
            median(&failovers),
            "s",
        )
        .baseline("the controller counts it dead", median(&detections))
        .target(Target::AtMost(5.0)),
    );
    Ok(())
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

/// One failure of broker `victim` while a producer writes to a partition it
/// leads: seconds until the controller counts it dead, and until the first
/// record sent after the failure is acknowledged.
async fn one_round(
    cluster: &ProcessCluster,
    victim: usize,
    fail: impl FnOnce(),
) -> anyhow::Result<(f64, f64)> {
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
    tokio::time::sleep(Duration::from_secs(1)).await;
    let t0 = Instant::now();
    *failed_at.lock().expect("not poisoned") = Some(t0);
    fail();
    anyhow::ensure!(
        cluster.wait_dead(victim, Duration::from_secs(20)).await,
        "the controller did not count broker {victim} dead"
    );
    let detected = t0.elapsed().as_secs_f64();
    let deadline = Instant::now() + Duration::from_secs(60);
    let acked = loop {
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
    Ok((detected, acked))
}
