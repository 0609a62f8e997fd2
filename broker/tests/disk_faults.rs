//! Disk faults: the data volume is a 2 MiB tmpfs. When it fills up, Produce
//! answers KAFKA_STORAGE_ERROR (never an acknowledgement for a batch that
//! was not written) and OffsetCommit answers an error, while Fetch,
//! Metadata and OffsetFetch keep being served; once space returns, writes
//! succeed again and the partition holds exactly the acknowledged batches.
//! A read-only remount likewise.
//!
//! Needs root (mount). CI runs as root; elsewhere the test fails with a
//! message saying so rather than skipping silently.

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use bytes::Bytes;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_client::KafkaClient;
use kafka_protocol::messages::fetch_request::{FetchPartition, FetchTopic};
use kafka_protocol::messages::offset_commit_request::{
    OffsetCommitRequestPartition, OffsetCommitRequestTopic,
};
use kafka_protocol::messages::offset_fetch_request::OffsetFetchRequestTopic;
use kafka_protocol::messages::produce_request::{PartitionProduceData, TopicProduceData};
use kafka_protocol::messages::{
    FetchRequest, GroupId, MetadataRequest, OffsetCommitRequest, OffsetFetchRequest,
    ProduceRequest, TopicName,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::records::RecordBatchDecoder;

const TOPIC: &str = "disk";
const GROUP: &str = "disk-group";
const KAFKA_STORAGE_ERROR: i16 = 56;
const WAIT: Duration = Duration::from_secs(5);

/// A mount (a tmpfs on a fresh folder, or a bind mount); unmounted
/// (lazily, if still busy) on drop.
struct Mount {
    path: PathBuf,
    _dir: Option<tempfile::TempDir>,
}

fn run_mount(args: &[&str], path: &Path) {
    let out = Command::new("mount")
        .args(args)
        .arg(path)
        .output()
        .expect("run mount");
    assert!(
        out.status.success(),
        "mount {args:?} {} failed; disk_faults needs root to mount (run the tests as root, \
         as CI does): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

impl Mount {
    fn tmpfs(size: &str) -> Mount {
        let dir = tempfile::tempdir().unwrap();
        let mut m = Mount::tmpfs_at(dir.path(), size);
        m._dir = Some(dir);
        m
    }

    fn tmpfs_at(path: &Path, size: &str) -> Mount {
        run_mount(
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"],
            path,
        );
        Mount {
            path: path.to_path_buf(),
            _dir: None,
        }
    }

    fn bind(from: &Path, to: &Path) -> Mount {
        run_mount(&["--bind", &from.display().to_string()], to);
        Mount {
            path: to.to_path_buf(),
            _dir: None,
        }
    }

    fn path(&self) -> &Path {
        &self.path
    }

    fn remount(&self, opts: &str) {
        run_mount(&["-o", &format!("remount,{opts}")], &self.path);
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let ok = Command::new("umount")
            .arg(&self.path)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            let _ = Command::new("umount").arg("-l").arg(&self.path).status();
        }
    }
}

fn batch(tag: &str, size: usize) -> Bytes {
    kaas_testkit::records::record_batch([Bytes::from(format!("{tag}:{}", "x".repeat(size)))], None)
}

/// Produce (acks=-1) of one batch: (error code, base offset).
async fn produce(c: &mut KafkaClient, records: Bytes) -> (i16, i64) {
    let req = ProduceRequest::default()
        .with_acks(-1)
        .with_timeout_ms(5000)
        .with_topic_data(vec![TopicProduceData::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_data(vec![PartitionProduceData::default()
                .with_index(0)
                .with_records(Some(records))])]);
    let r = c.send(&req, 9).await.expect("Produce answered");
    let p = &r.responses[0].partition_responses[0];
    (p.error_code, p.base_offset)
}

async fn commit(c: &mut KafkaClient, offset: i64) -> i16 {
    let req = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(offset)])]);
    let r = c.send(&req, 8).await.expect("OffsetCommit answered");
    r.topics[0].partitions[0].error_code
}

async fn committed(c: &mut KafkaClient) -> i64 {
    let req = OffsetFetchRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(GROUP)))
        .with_topics(Some(vec![OffsetFetchRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str(TOPIC)))
            .with_partition_indexes(vec![0])]));
    let r = c.send(&req, 7).await.expect("OffsetFetch answered");
    assert_eq!(r.error_code, 0, "OffsetFetch group error");
    let p = &r.topics[0].partitions[0];
    assert_eq!(p.error_code, 0, "OffsetFetch partition error");
    p.committed_offset
}

/// Every record value of the partition from offset 0, by offset.
async fn fetch_all(c: &mut KafkaClient) -> Vec<(i64, String)> {
    let mut out = Vec::new();
    let mut next = 0;
    loop {
        let req = FetchRequest::default()
            .with_replica_id(kafka_protocol::messages::BrokerId(-1))
            .with_max_wait_ms(0)
            .with_min_bytes(1)
            .with_max_bytes(16 << 20)
            .with_topics(vec![FetchTopic::default()
                .with_topic(TopicName(StrBytes::from_static_str(TOPIC)))
                .with_partitions(vec![FetchPartition::default()
                    .with_partition(0)
                    .with_fetch_offset(next)
                    .with_partition_max_bytes(16 << 20)])]);
        let r = c.send(&req, 11).await.expect("Fetch answered");
        assert_eq!(r.error_code, 0, "Fetch error");
        let p = &r.responses[0].partitions[0];
        assert_eq!(p.error_code, 0, "Fetch partition error");
        let mut bytes = p.records.clone().unwrap_or_default();
        let mut got = 0;
        while bytes.len() >= 61 {
            let set = RecordBatchDecoder::decode(&mut bytes).expect("a fetched batch decodes");
            for rec in set.records {
                if rec.offset >= next {
                    let v = String::from_utf8(rec.value.unwrap().to_vec()).unwrap();
                    out.push((rec.offset, v));
                    next = rec.offset + 1;
                    got += 1;
                }
            }
        }
        if got == 0 {
            return out;
        }
    }
}

async fn metadata_ok(c: &mut KafkaClient) {
    let req = MetadataRequest::default().with_topics(Some(vec![
        kafka_protocol::messages::metadata_request::MetadataRequestTopic::default()
            .with_name(Some(TopicName(StrBytes::from_static_str(TOPIC)))),
    ]));
    let r = c.send(&req, 9).await.expect("Metadata answered");
    assert_eq!(r.topics.len(), 1);
    assert_eq!(r.topics[0].error_code, 0, "Metadata of {TOPIC}");
    assert_eq!(r.topics[0].partitions.len(), 1);
}

/// Fills the volume with one file, in 4 KiB steps, until writes fail.
fn fill(path: &Path) -> PathBuf {
    let filler = path.join("filler");
    let mut f = std::fs::File::create(&filler).unwrap();
    let chunk = vec![0xAAu8; 4096];
    while f.write_all(&chunk).and_then(|_| f.sync_all()).is_ok() {}
    filler
}

/// Values of the acknowledged batches, in acknowledgement order.
struct Acked(Vec<(i64, String)>);

impl Acked {
    /// The partition must hold exactly the acknowledged batches, each at the
    /// offset its acknowledgement gave.
    async fn check(&self, c: &mut KafkaClient, when: &str) {
        let got = fetch_all(c).await;
        let got_values: Vec<_> = got
            .iter()
            .map(|(o, v)| (*o, v.split(':').next().unwrap().to_string()))
            .collect();
        assert_eq!(got_values, self.0, "partition contents {when}");
    }
}

async fn start(dir: &Path, create: bool) -> (LocalCluster, KafkaClient) {
    let mut config = LocalClusterConfig::new(1, dir.join("data"));
    config.base_port = 0;
    let cluster = LocalCluster::start(config).await.unwrap();
    if create {
        common::create_topic(&cluster.bootstrap(), TOPIC, 1).await;
    }
    let c = KafkaClient::connect(&cluster.addrs[0].to_string(), WAIT)
        .await
        .unwrap();
    (cluster, c)
}

/// Evaluates `$op` (an error code) until it is 0, within a deadline.
macro_rules! until_ok {
    ($what:expr, $op:expr) => {{
        let start = Instant::now();
        loop {
            let code = $op;
            if code == 0 {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "{} still fails with {code}",
                $what
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }};
}

/// Produces `tag` until acknowledged (within a deadline); its base offset.
async fn produce_until_ok(c: &mut KafkaClient, tag: &str) -> i64 {
    let start = Instant::now();
    loop {
        let (code, base) = produce(c, batch(tag, 100)).await;
        if code == 0 {
            return base;
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "Produce of {tag} still fails with {code}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn full_volume_refuses_writes_serves_reads_and_recovers() {
    let fs = Mount::tmpfs("2m");
    let (cluster, mut c) = start(fs.path(), true).await;
    let mut acked = Acked(Vec::new());

    let (code, base) = produce(&mut c, batch("b0", 100)).await;
    assert_eq!(code, 0);
    acked.0.push((base, "b0".into()));
    assert_eq!(commit(&mut c, 1).await, 0);

    let filler = fill(fs.path());
    // Produce until the broker refuses: what space is left in allocated
    // pages may take a few batches first.
    let mut refused = None;
    for i in 1..2000 {
        let tag = format!("b{i}");
        let (code, base) = produce(&mut c, batch(&tag, 8192)).await;
        if code == 0 {
            acked.0.push((base, tag));
        } else {
            refused = Some(code);
            break;
        }
    }
    assert_eq!(
        refused,
        Some(KAFKA_STORAGE_ERROR),
        "a full volume must refuse Produce with KAFKA_STORAGE_ERROR"
    );
    // Commits likewise: an error, never a success that was not written.
    let mut last_committed = 1;
    let mut commit_error = None;
    for offset in 2..5000 {
        let code = commit(&mut c, offset).await;
        if code == 0 {
            last_committed = offset;
        } else {
            commit_error = Some(code);
            break;
        }
    }
    assert!(
        commit_error.is_some(),
        "OffsetCommit kept succeeding on a full volume"
    );
    println!(
        "full volume: {} batches acknowledged, Produce -> {refused:?}, \
         OffsetCommit -> {commit_error:?} after {} more commits",
        acked.0.len(),
        last_committed - 1
    );

    // Reads keep working.
    metadata_ok(&mut c).await;
    acked.check(&mut c, "on the full volume").await;
    assert_eq!(committed(&mut c).await, last_committed);

    // Space returns: writes succeed again, nothing half-written shows.
    std::fs::remove_file(&filler).unwrap();
    let base = produce_until_ok(&mut c, "after").await;
    acked.0.push((base, "after".into()));
    until_ok!(
        "OffsetCommit after space returned",
        commit(&mut c, 10_000).await
    );
    assert_eq!(committed(&mut c).await, 10_000);
    acked.check(&mut c, "after space returned").await;
    cluster.shutdown().await;
}

/// Linux refuses to remount a file system read-only while files on it are
/// open for writing (EBUSY), and a broker always holds its logs open, so the
/// read-only case is a broker restarted on a volume that went read-only:
/// topics and group logs read-only (the assignment file, written by the
/// local controller, stays on a writable mount). Then the volume becomes
/// writable again, under the running broker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_only_volume_refuses_writes_and_serves_reads() {
    let fs = Mount::tmpfs("8m");
    let (cluster, mut c) = start(fs.path(), true).await;
    let mut acked = Acked(Vec::new());
    let (code, base) = produce(&mut c, batch("b0", 100)).await;
    assert_eq!(code, 0);
    acked.0.push((base, "b0".into()));
    assert_eq!(commit(&mut c, 7).await, 0);
    drop(c);
    cluster.shutdown().await;

    let data = fs.path().join("data");
    let offsets = data.join("__cluster/__consumer_offsets");
    let offsets_ro = fs.path().join("offsets");
    std::fs::rename(&offsets, &offsets_ro).unwrap();
    let assignment = std::fs::read(data.join("__cluster/assignment.json")).unwrap();
    // Torn tails too: a read-only volume cannot cut them, so reads must
    // stop before them.
    let segment = data.join(format!("{TOPIC}/0/{:020}-1.log", 0));
    let group_logs: Vec<PathBuf> = std::fs::read_dir(&offsets_ro)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "log"))
        .collect();
    assert_eq!(group_logs.len(), 1, "one group log");
    for damaged in [&segment, &group_logs[0]] {
        let mut f = std::fs::OpenOptions::new()
            .append(true)
            .open(damaged)
            .unwrap();
        f.write_all(&[0x5a; 40]).unwrap();
    }
    fs.remount("ro");
    let cluster_dir = Mount::tmpfs_at(&data.join("__cluster"), "1m");
    std::fs::write(cluster_dir.path().join("assignment.json"), assignment).unwrap();
    std::fs::create_dir(cluster_dir.path().join("__consumer_offsets")).unwrap();
    let offsets_mount = Mount::bind(&offsets_ro, &offsets);

    let (cluster, mut c) = start(fs.path(), false).await;
    let (code, _) = produce(&mut c, batch("ro", 100)).await;
    assert_eq!(code, KAFKA_STORAGE_ERROR, "Produce on a read-only volume");
    let code = commit(&mut c, 8).await;
    assert_ne!(code, 0, "OffsetCommit on a read-only volume");
    println!("read-only volume: Produce -> {KAFKA_STORAGE_ERROR}, OffsetCommit -> {code}");
    metadata_ok(&mut c).await;
    // Reads are served from logs opened read-only.
    acked.check(&mut c, "on a read-only volume").await;
    assert_eq!(
        committed(&mut c).await,
        7,
        "OffsetFetch on a read-only volume"
    );
    // Writes keep failing cleanly, and reads keep working after them.
    let (code, _) = produce(&mut c, batch("ro2", 100)).await;
    assert_eq!(
        code, KAFKA_STORAGE_ERROR,
        "Produce on a read-only volume, again"
    );
    assert_ne!(
        commit(&mut c, 8).await,
        0,
        "OffsetCommit on a read-only volume, again"
    );
    assert_eq!(
        committed(&mut c).await,
        7,
        "OffsetFetch after a refused commit"
    );

    // Writable again (a bind mount keeps its own read-only flag).
    fs.remount("rw");
    offsets_mount.remount("bind,rw");
    let base = produce_until_ok(&mut c, "rw").await;
    acked.0.push((base, "rw".into()));
    until_ok!("OffsetCommit after remount rw", commit(&mut c, 9).await);
    assert_eq!(committed(&mut c).await, 9);
    acked.check(&mut c, "after remount rw").await;
    drop(c);
    cluster.shutdown().await;
    drop(offsets_mount);
    drop(cluster_dir);
}
