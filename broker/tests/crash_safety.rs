//! Crash safety: rounds of committers committing offsets to several groups
//! while the coordinator of some of them is killed with SIGKILL at a random
//! moment; then it is restarted, or the controller moves its groups. Every
//! acknowledged offset must be read back (an offset ≥ the last acknowledged
//! one of its partition, with the metadata written with that offset).
//!
//! Between some rounds the tail of one dead coordinator's group log is cut
//! or bit-flipped: recovery must keep every record before the damage and
//! report the damage in the broker's log (a restarted coordinator first
//! replays its commit journal, which restores the damaged records).
//!
//! `KAAS_CRASH_ROUNDS` sets the number of rounds (default 6),
//! `KAAS_CRASH_SEED` the random seed (printed).

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::procs::{self, ProcessCluster, PUBLISHED_WITHIN};
use kaas_client::KafkaClient;
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::{
    FindCoordinatorRequest, GroupId, OffsetCommitRequest, OffsetFetchRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;

const BROKERS: usize = 3;
const GROUPS: usize = 9;
const PARTITIONS: i32 = 3;
const TOPIC: &str = "crash-topic";
const WAIT: Duration = Duration::from_secs(2);
const DEADLINE: Duration = Duration::from_secs(30);

/// xorshift64*: deterministic for a printed seed, no extra dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn group_name(i: usize) -> String {
    format!("crash-g{i:02}")
}

/// The metadata stored with each commit: a fetched offset must come back
/// with exactly this, or the record it came from is corrupt.
fn metadata_for(group: &str, partition: i32, offset: i64) -> String {
    format!("{group}/{partition}/{offset}")
}

/// Acknowledged state: (group, partition) -> last acknowledged offset.
#[derive(Default)]
struct Acks {
    last: BTreeMap<(String, i32), i64>,
    count: u64,
}

/// The coordinator's broker id for `group`, asked of any live broker.
async fn find_coordinator(cluster_addrs: &[String], group: &str) -> Option<usize> {
    for addr in cluster_addrs {
        let Ok(mut c) = KafkaClient::connect(addr, WAIT).await else {
            continue;
        };
        let req = FindCoordinatorRequest::default().with_key(StrBytes::from_string(group.into()));
        let Ok(Ok(r)) = tokio::time::timeout(WAIT, c.send(&req, 3)).await else {
            continue;
        };
        if r.error_code == 0 && r.node_id.0 >= 0 {
            return Some(r.node_id.0 as usize);
        }
    }
    None
}

/// The coordinator of `group` under the published assignment, once every
/// broker in `alive` names it (each broker answers from the assignment it
/// follows, which lags the published one by up to its poll interval).
async fn agreed_coordinator(
    cluster: &ProcessCluster,
    addrs: &[String],
    alive: &[usize],
    group: &str,
) -> usize {
    let start = Instant::now();
    loop {
        let published = cluster.routing().and_then(|r| r.owner_of_group(group));
        let mut answers = Vec::new();
        for &id in alive {
            answers.push(find_coordinator(&addrs[id..=id], group).await);
        }
        if let Some(owner) = published {
            if answers.iter().all(|a| *a == Some(owner as usize)) {
                return owner as usize;
            }
        }
        assert!(
            start.elapsed() < DEADLINE,
            "brokers {alive:?} do not agree on the coordinator of {group}: {answers:?}, \
             published {published:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn commit(
    c: &mut KafkaClient,
    group: &str,
    partition: i32,
    offset: i64,
) -> anyhow::Result<i16> {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(partition)
                .with_committed_offset(offset)
                .with_committed_metadata(Some(StrBytes::from_string(
                    metadata_for(group, partition, offset),
                )))])]);
    let resp = tokio::time::timeout(Duration::from_secs(5), c.send(&req, 8)).await??;
    Ok(resp.topics[0].partitions[0].error_code)
}

/// One committer per group: commits increasing offsets round-robin over the
/// partitions until `stop`, recording every acknowledged one.
async fn committer(
    addrs: Vec<String>,
    group: String,
    next_offset: Arc<AtomicU64>,
    acks: Arc<Mutex<Acks>>,
    stop: Arc<AtomicBool>,
) {
    let mut conn: Option<KafkaClient> = None;
    let mut partition = 0;
    while !stop.load(Ordering::SeqCst) {
        if conn.is_none() {
            let Some(id) = find_coordinator(&addrs, &group).await else {
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            };
            match KafkaClient::connect(&addrs[id], WAIT).await {
                Ok(c) => conn = Some(c),
                Err(_) => {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    continue;
                }
            }
        }
        let offset = next_offset.fetch_add(1, Ordering::SeqCst) as i64;
        match commit(conn.as_mut().unwrap(), &group, partition, offset).await {
            Ok(0) => {
                let mut a = acks.lock().unwrap();
                a.count += 1;
                let e = a.last.entry((group.clone(), partition)).or_insert(-1);
                *e = (*e).max(offset);
                partition = (partition + 1) % PARTITIONS;
            }
            Ok(_) => {
                // Not the coordinator (any more), loading, or a storage
                // error: ask again.
                conn = None;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            Err(_) => conn = None,
        }
    }
}

/// OffsetFetch of every partition of `group` from its coordinator (as all
/// live brokers agree), retried until it answers without error:
/// partition -> (offset, metadata).
async fn fetch_all(
    cluster: &ProcessCluster,
    addrs: &[String],
    alive: &[usize],
    group: &str,
) -> BTreeMap<i32, (i64, String)> {
    let start = Instant::now();
    let mut last_err = String::new();
    while start.elapsed() < DEADLINE {
        let id = agreed_coordinator(cluster, addrs, alive, group).await;
        match fetch_from(&addrs[id], group).await {
            Ok(m) => return m,
            Err(e) => last_err = format!("broker {id}: {e}"),
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("could not fetch the offsets of {group} within {DEADLINE:?}: {last_err}");
}

async fn fetch_from(addr: &str, group: &str) -> anyhow::Result<BTreeMap<i32, (i64, String)>> {
    let mut c = KafkaClient::connect(addr, WAIT).await?;
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_string(group.into())))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_indexes((0..PARTITIONS).collect())]));
    let r = tokio::time::timeout(Duration::from_secs(5), c.send(&req, 7)).await??;
    anyhow::ensure!(r.error_code == 0, "group error {}", r.error_code);
    let mut out = BTreeMap::new();
    for t in &r.topics {
        for p in &t.partitions {
            anyhow::ensure!(p.error_code == 0, "partition error {}", p.error_code);
            let md = p
                .metadata
                .as_ref()
                .map(|m| m.to_string())
                .unwrap_or_default();
            out.insert(p.partition_index, (p.committed_offset, md));
        }
    }
    Ok(out)
}

// ------------------------------------------------------------ log damage

/// The records of a group log file: (start, end, kind, body), in order.
fn records(data: &[u8]) -> Vec<(usize, usize, u8, &[u8])> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 8 <= data.len() {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().unwrap()) as usize;
        let crc = u32::from_be_bytes(data[pos + 4..pos + 8].try_into().unwrap());
        let end = pos + 8 + len;
        if len == 0 || end > data.len() || crc32c::crc32c(&data[pos + 8..end]) != crc {
            break;
        }
        out.push((pos, end, data[pos + 8], &data[pos + 9..end]));
        pos = end;
    }
    out
}

/// Offsets per partition after replaying `records` (commits and snapshots).
fn replay(recs: &[(usize, usize, u8, &[u8])]) -> BTreeMap<i32, i64> {
    let mut table = BTreeMap::new();
    let apply = |table: &mut BTreeMap<i32, i64>, entries: &serde_json::Value| {
        for e in entries.as_array().into_iter().flatten() {
            if e["topic"] == TOPIC {
                table.insert(
                    e["partition"].as_i64().unwrap() as i32,
                    e["offset"].as_i64().unwrap(),
                );
            }
        }
    };
    for (_, _, kind, body) in recs {
        match kind {
            // JSON records of earlier logs.
            2 => apply(&mut table, &serde_json::from_slice(body).unwrap()),
            5 => {
                let v: serde_json::Value = serde_json::from_slice(body).unwrap();
                table.clear();
                apply(&mut table, &v["offsets"]);
            }
            // Binary commit and snapshot (offsets first).
            7 => table.extend(binary_offsets(body)),
            8 => {
                table.clear();
                table.extend(binary_offsets(body));
            }
            3 => table.clear(), // deletes are not used here; be conservative
            _ => {}
        }
    }
    table
}

/// (partition, offset) of this test's topic in a binary offsets section,
/// decoded from the format documented in storage/group_log/records.rs.
fn binary_offsets(body: &[u8]) -> Vec<(i32, i64)> {
    let mut at = 0;
    let mut take = |n: usize| {
        let field = &body[at..at + n];
        at += n;
        field
    };
    let count = u32::from_be_bytes(take(4).try_into().unwrap());
    let mut out = Vec::new();
    for _ in 0..count {
        let topic_len = u16::from_be_bytes(take(2).try_into().unwrap()) as usize;
        let topic = take(topic_len).to_vec();
        let partition = i32::from_be_bytes(take(4).try_into().unwrap());
        let offset = i64::from_be_bytes(take(8).try_into().unwrap());
        take(4 + 8 + 8); // leader epoch, commit and expire timestamps
        let metadata_len = u32::from_be_bytes(take(4).try_into().unwrap()) as usize;
        take(metadata_len);
        if topic == TOPIC.as_bytes() {
            out.push((partition, offset));
        }
    }
    out
}

fn log_file(data: &Path, group: &str) -> PathBuf {
    data.join("__cluster/__consumer_offsets")
        .join(format!("{group}.log"))
}

/// Damages the last record of `group`'s log (cut in its middle, or one bit
/// flipped in its payload). Returns the offsets the records before it hold,
/// which recovery must keep, or `None` if the log has no record to damage
/// but its header.
fn damage_tail(
    data: &Path,
    group: &str,
    rng: &mut Rng,
) -> Option<(BTreeMap<i32, i64>, &'static str)> {
    let path = log_file(data, group);
    let bytes = std::fs::read(&path).ok()?;
    let recs = records(&bytes);
    if recs.len() < 2 {
        return None;
    }
    let (start, end, _, _) = recs[recs.len() - 1];
    let layout: Vec<(usize, u8)> = recs.iter().map(|r| (r.0, r.2)).collect();
    let kept = replay(&recs[..recs.len() - 1]);
    let how = if rng.below(2) == 0 {
        let cut = start + 1 + rng.below((end - start - 1) as u64) as usize;
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(cut as u64).unwrap();
        f.sync_all().unwrap();
        eprintln!(
            "{:?} truncated {group} at {cut} (last record {start}..{end}, file {}, records {layout:?})",
            std::time::SystemTime::now(),
            bytes.len()
        );
        "truncated"
    } else {
        let mut bytes = bytes;
        // Anywhere in the payload: the checksum catches it.
        let at = start + 8 + rng.below((end - start - 8) as u64) as usize;
        bytes[at] ^= 1 << rng.below(8);
        // In place: the file must never be seen shorter than it was.
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        std::os::unix::fs::FileExt::write_all_at(&f, &bytes[at..at + 1], at as u64).unwrap();
        f.sync_all().unwrap();
        eprintln!(
            "{:?} flipped {group} at {at} (last record {start}..{end}, file {}, records {layout:?})",
            std::time::SystemTime::now(),
            bytes.len()
        );
        "bit-flipped"
    };
    Some((kept, how))
}

/// Log lines reporting damage to the group's log: cut off on load, or
/// restored from the commit journal of the broker that wrote it (which
/// holds every acknowledged write until the log is flushed).
fn damage_reports(cluster: &ProcessCluster, group: &str) -> usize {
    cluster
        .logs()
        .lines()
        .filter(|l| {
            (l.contains("group log damaged")
                || l.contains("restored a write the group log had lost"))
                && l.contains(group)
        })
        .count()
}

// ------------------------------------------------------------ the test

fn is_dead(cluster: &ProcessCluster, id: usize) -> bool {
    cluster.assignment().is_some_and(|a| {
        a.brokers
            .iter()
            .any(|b| b.id == id as i32 && b.state == kaas_shared::BrokerState::Dead)
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_offsets_survive_kill_9_and_log_damage() {
    let _one = ONE_AT_A_TIME.lock().await;
    crash_rounds(procs::start(BROKERS).await).await;
}

/// The same with brokers 0 and 2 on GlusterFS mount A and broker 1 and the
/// controller on mount B (`scripts/glusterfs-testenv`; issue #32): a group
/// moved by a kill is read back through the other mount. Without the
/// mounts it says so and passes, unless `KAAS_GLUSTER_REQUIRED` is set.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_offsets_survive_kill_9_with_brokers_on_two_mounts() {
    let Some(m) = kaas_testkit::gluster::Mounts::for_test() else {
        return;
    };
    let _one = ONE_AT_A_TIME.lock().await;
    let run = format!("crash-{}", std::process::id());
    let (a, b) = (m.a.join(&run), m.b.join(&run));
    std::fs::create_dir_all(&b).unwrap();
    let logs = tempfile::tempdir().unwrap();
    let opts = procs::options(BROKERS).mounts(
        vec![a.join("data"), b.join("data"), a.join("data")],
        b.join("data"),
    );
    let cluster = ProcessCluster::start(Some(logs.path()), opts)
        .await
        .expect("the cluster starts on two mounts");
    crash_rounds(cluster).await;
    let _ = std::fs::remove_dir_all(&b);
}

/// The tests of this file run one at a time (each kills brokers).
static ONE_AT_A_TIME: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

async fn crash_rounds(cluster: ProcessCluster) {
    let rounds: usize = std::env::var("KAAS_CRASH_ROUNDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    let seed: u64 = std::env::var("KAAS_CRASH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
                | 1
        });
    println!("KAAS_CRASH_SEED={seed}");
    let mut rng = Rng(seed);

    common::create_topic(&cluster.bootstrap(), TOPIC, PARTITIONS).await;
    let addrs: Vec<String> = (0..BROKERS).map(|id| cluster.addr(id)).collect();
    let groups: Vec<String> = (0..GROUPS).map(group_name).collect();
    let acks = Arc::new(Mutex::new(Acks::default()));
    let offsets: Vec<Arc<AtomicU64>> = (0..GROUPS).map(|_| Arc::new(AtomicU64::new(0))).collect();
    let (mut lost, mut damaged_rounds, mut moves, mut restarts) = (0usize, 0usize, 0usize, 0usize);
    let mut dropped_by_damage = 0usize;
    let mut stale_reads = 0usize;
    let mut failures = Vec::new();

    for round in 0..rounds {
        cluster
            .wait_alive_count(BROKERS, PUBLISHED_WITHIN)
            .await
            .unwrap();
        // Committers run; the victim is the coordinator of a random group.
        let stop = Arc::new(AtomicBool::new(false));
        let tasks: Vec<_> = groups
            .iter()
            .zip(&offsets)
            .map(|(g, o)| {
                tokio::spawn(committer(
                    addrs.clone(),
                    g.clone(),
                    o.clone(),
                    acks.clone(),
                    stop.clone(),
                ))
            })
            .collect();
        let target = &groups[rng.below(GROUPS as u64) as usize];
        let all: Vec<usize> = (0..BROKERS).collect();
        let victim = agreed_coordinator(&cluster, &addrs, &all, target).await;
        // Wait until some commits were acknowledged this round, then a
        // random moment more, and kill mid-commit.
        let before = acks.lock().unwrap().count;
        cluster
            .wait_until(DEADLINE, "commits acknowledged", |_| {
                acks.lock().unwrap().count > before + GROUPS as u64
            })
            .await
            .unwrap();
        let mut victims = Vec::new();
        for g in &groups {
            if agreed_coordinator(&cluster, &addrs, &all, g).await == victim {
                victims.push(g.clone());
            }
        }
        tokio::time::sleep(Duration::from_millis(rng.below(150))).await;
        cluster.kill(victim);
        eprintln!(
            "{:?} round {round}: killed broker {victim}, coordinator of {victims:?}",
            std::time::SystemTime::now()
        );
        stop.store(true, Ordering::SeqCst);
        for t in tasks {
            t.await.unwrap();
        }
        // Groups the victim coordinated: nobody writes their logs now,
        // until the victim restarts or the controller moves them.
        let victims: Vec<String> = victims
            .into_iter()
            .filter(|g| log_file(&cluster.data, g).exists())
            .collect();

        // Sometimes damage the tail of one of the victim's group logs.
        let mut damaged = None;
        if round % 3 == 1 && !victims.is_empty() {
            let g = victims[rng.below(victims.len() as u64) as usize].clone();
            let reports_before = damage_reports(&cluster, &g);
            if let Some((kept, how)) = damage_tail(&cluster.data, &g, &mut rng) {
                // What recovery must keep is what the records before the
                // damage hold; later acknowledgements of this group are
                // given up on purpose.
                let mut a = acks.lock().unwrap();
                for p in 0..PARTITIONS {
                    let key = (g.clone(), p);
                    let acked = a.last.get(&key).copied().unwrap_or(-1);
                    let k = kept.get(&p).copied().unwrap_or(-1);
                    if k < acked {
                        dropped_by_damage += 1;
                    }
                    if k >= 0 {
                        a.last.insert(key, k);
                    } else {
                        a.last.remove(&key);
                    }
                }
                damaged = Some((g, reports_before, how));
                damaged_rounds += 1;
            }
        }

        // Restart the victim, or let the controller move its groups.
        let moved = rng.below(2) == 0;
        if moved {
            moves += 1;
            cluster
                .wait_until(DEADLINE, "the victim declared dead", |c| is_dead(c, victim))
                .await
                .unwrap();
        } else {
            restarts += 1;
            cluster.restart(victim).unwrap();
        }

        // Every acknowledged offset back, from the current coordinators.
        let expected = acks.lock().unwrap().last.clone();
        let alive: Vec<usize> = if moved {
            (0..BROKERS).filter(|&id| id != victim).collect()
        } else {
            all.clone()
        };
        for g in &groups {
            // What the first broker asked answers, as a client would see it:
            // a broker whose assignment lags may still answer from memory
            // (docs/design/fencing.md, "Limits"); counted, not a loss.
            if let Some(id) = find_coordinator(&addrs, g).await {
                if let Ok(quick) = fetch_from(&addrs[id], g).await {
                    let behind = (0..PARTITIONS).any(|p| {
                        let acked = expected.get(&(g.clone(), p)).copied().unwrap_or(-1);
                        quick.get(&p).map_or(-1, |x| x.0) < acked
                    });
                    if behind {
                        stale_reads += 1;
                    }
                }
            }
            let got = fetch_all(&cluster, &addrs, &alive, g).await;
            for p in 0..PARTITIONS {
                let Some(&acked) = expected.get(&(g.clone(), p)) else {
                    continue;
                };
                match got.get(&p) {
                    Some((offset, md)) if *offset >= acked => {
                        if *md != metadata_for(g, p, *offset) {
                            failures.push(format!(
                                "round {round}: {g}/{p} offset {offset} came back with metadata {md:?}"
                            ));
                        }
                    }
                    other => {
                        lost += 1;
                        failures.push(format!(
                            "round {round}: {g}/{p} acknowledged {acked}, fetched {other:?} \
                             (victim {victim}, moved {moved}, damaged {damaged:?})"
                        ));
                    }
                }
            }
        }
        if let Some((g, reports_before, how)) = &damaged {
            let start = Instant::now();
            while damage_reports(&cluster, g) <= *reports_before {
                assert!(
                    start.elapsed() < DEADLINE,
                    "round {round}: the {how} log of {g} was recovered without a report in the \
                     broker log\n{}",
                    cluster.logs()
                );
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
        if moved {
            cluster.restart(victim).unwrap();
            cluster
                .wait_alive_count(BROKERS, PUBLISHED_WITHIN)
                .await
                .unwrap();
        }
        assert!(failures.is_empty(), "{failures:#?}\n{}", cluster.logs());
    }

    let acknowledged = acks.lock().unwrap().count;
    println!(
        "rounds: {rounds}, acknowledged: {acknowledged}, lost: {lost} \
         (restarts {restarts}, moves {moves}, damaged logs {damaged_rounds}, \
         partitions rolled back by deliberate damage {dropped_by_damage}, \
         stale reads from a lagging broker before all agreed {stale_reads})"
    );
    assert_eq!(lost, 0);
    assert!(acknowledged > 0);
}
