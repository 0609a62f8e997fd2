//! Leadership that does not wait for the previous leader's lock
//! (docs/design/volume.md): two processes' partitions on one folder, the
//! first keeping its lock as a node that lost its volume does; even
//! brokers see the folder through one mount, odd ones through another.

use std::path::Path;

use crate::storage::batch::tests::encode_batch;
use crate::storage::partition::*;
use crate::storage::two_mounts::TwoMounts;

fn small() -> LogConfig {
    LogConfig {
        segment_bytes: 300,
        index_interval_bytes: 100,
        ..LogConfig::default()
    }
}

/// The first and last offset of every batch a reader gets, reading from
/// the start to the end.
fn batches(p: &Partition) -> Vec<(i64, i64)> {
    let mut out: Vec<(i64, i64)> = Vec::new();
    loop {
        let from = out.last().map_or(0, |b| b.1 + 1);
        let bytes = p.read(from, 1 << 20).unwrap();
        if bytes.is_empty() {
            return out;
        }
        for (_, h) in batch::split_batches(&bytes).unwrap() {
            out.push((h.base_offset, h.last_offset()));
        }
    }
}

fn not_leader(result: Result<Appended, AppendError>) -> bool {
    matches!(result, Err(AppendError::Io(e)) if e.kind() == io::ErrorKind::WouldBlock)
}

/// The data folder, seen by even brokers through mount A and by odd ones
/// through mount B (two GlusterFS mounts where `scripts/test` provides
/// them, else one local folder).
struct Folder {
    mounts: TwoMounts,
    /// The cluster folder through mount A.
    cluster: PathBuf,
}

fn folder() -> Folder {
    let mounts = TwoMounts::new();
    Folder {
        cluster: mounts.a.join("__cluster"),
        mounts,
    }
}

impl Folder {
    fn node(&self, broker: i32) -> &Path {
        match broker % 2 {
            0 => &self.mounts.a,
            _ => &self.mounts.b,
        }
    }
}

/// A new process of `broker` on its node.
fn tenure(f: &Folder, broker: i32, version: u64, alive: &[i32]) -> Tenure {
    Tenure::of_new_process(&f.node(broker).join("__cluster"), broker, version, alive)
}

fn open(f: &Folder, t: &Tenure) -> io::Result<Partition> {
    let dir = f.node(t.broker).join("t").join("0");
    Partition::open_as("t", 0, dir, small(), t)
}

/// The error an open that must not succeed fails with.
fn refused(opened: io::Result<Partition>) -> io::Error {
    match opened {
        Ok(_) => panic!("opened a partition another broker leads"),
        Err(e) => e,
    }
}

#[tokio::test]
async fn a_dead_leader_that_keeps_its_lock_is_fenced_and_its_late_writes_are_never_read() {
    let f = folder();
    let zombie = open(&f, &tenure(&f, 0, 1, &[0, 1])).unwrap();
    zombie.append(encode_batch(3, 0), 1).await.unwrap(); // 0..=2
    zombie.append(encode_batch(2, 1), 1).await.unwrap(); // 3..=4

    // Broker 0 keeps its lock. While the assignment counts it alive,
    // broker 1 waits for it; once it is dead, broker 1 fences it.
    let waiting = refused(open(&f, &tenure(&f, 1, 2, &[0, 1])));
    assert_eq!(waiting.kind(), io::ErrorKind::WouldBlock);
    let leader = open(&f, &tenure(&f, 1, 3, &[1])).unwrap();
    assert_eq!(leader.high_watermark(), 5, "every acknowledged record");

    // The zombie writes again, enough to roll a segment: durable in files
    // of its own, never acknowledged.
    assert!(not_leader(zombie.append(encode_batch(20, 2), 1).await));
    assert!(zombie.is_deposed());
    assert!(
        not_leader(zombie.append(encode_batch(1, 3), 1).await),
        "nothing more"
    );

    let next = leader.append(encode_batch(1, 4), 3).await.unwrap();
    assert_eq!(next.base_offset, 5);
    assert_eq!(batches(&leader), [(0, 2), (3, 4), (5, 5)]);

    // Nor after both are gone: a third broker reads the same log.
    drop(leader);
    drop(zombie);
    let third = open(&f, &tenure(&f, 2, 4, &[2])).unwrap();
    assert_eq!(batches(&third), [(0, 2), (3, 4), (5, 5)]);
    assert_eq!(third.high_watermark(), 6);
}

#[tokio::test]
async fn a_restarted_broker_fences_its_earlier_process_and_an_older_assignment_is_refused() {
    let f = folder();
    let first = open(&f, &tenure(&f, 0, 5, &[0])).unwrap();
    first.append(encode_batch(2, 0), 5).await.unwrap();

    // A broker on an older assignment than the one the leader opened under.
    let stale = refused(open(&f, &tenure(&f, 1, 4, &[0, 1])));
    assert_eq!(stale.kind(), io::ErrorKind::WouldBlock);
    assert!(stale.to_string().contains("newer"), "{stale}");

    // Broker 0 again, in a new process, while the first keeps its lock.
    let restarted = open(&f, &tenure(&f, 0, 5, &[0])).unwrap();
    assert_eq!(restarted.high_watermark(), 2);
    assert!(not_leader(first.append(encode_batch(1, 1), 5).await));
    assert_eq!(
        restarted
            .append(encode_batch(1, 2), 5)
            .await
            .unwrap()
            .base_offset,
        2
    );
}

#[tokio::test]
async fn a_leader_that_let_go_is_followed_without_a_fence() {
    let f = folder();
    let first = tenure(&f, 0, 1, &[0, 1]);
    let p = open(&f, &first).unwrap();
    p.append(encode_batch(2, 0), 1).await.unwrap();
    drop(p);
    // Broker 0 is alive: had it not let go, broker 1 would wait for it.
    let next = open(&f, &tenure(&f, 1, 2, &[0, 1])).unwrap();
    assert_eq!(next.high_watermark(), 2);
    let incarnation = first.incarnation.as_ref().unwrap();
    assert_eq!(
        incarnation::read_fence(&f.cluster, 0, incarnation.id(), incarnation.fresh_read()).unwrap(),
        None,
        "not fenced"
    );
    // A leader that took over without the lock says it let go the same
    // way: the next one needs neither the lock nor a fence.
    let zombie = refused(open(&f, &tenure(&f, 2, 3, &[2, 1])));
    assert_eq!(
        zombie.kind(),
        io::ErrorKind::WouldBlock,
        "broker 1 holds it"
    );
    drop(next);
    let after = open(&f, &tenure(&f, 2, 3, &[1, 2])).unwrap();
    assert_eq!(after.high_watermark(), 2);
}

#[tokio::test]
async fn a_takeover_starts_where_the_valid_records_end_and_leaves_a_damaged_tail_unread() {
    let f = folder();
    let zombie = open(&f, &tenure(&f, 0, 1, &[0])).unwrap();
    zombie.append(encode_batch(2, 0), 1).await.unwrap();
    // Half a batch lands after the acknowledged ones (a torn write).
    let active = zombie.log().active_file();
    let len = active.metadata().unwrap().len();
    let torn = encode_batch(3, 1);
    std::os::unix::fs::FileExt::write_all_at(&*active, &torn[..torn.len() / 2], len).unwrap();
    let before = active.metadata().unwrap().len();

    let leader = open(&f, &tenure(&f, 1, 2, &[1])).unwrap();
    assert_eq!(leader.high_watermark(), 2);
    assert_eq!(
        active.metadata().unwrap().len(),
        before,
        "an earlier generation's file is never cut"
    );
    assert_eq!(
        leader
            .append(encode_batch(1, 2), 2)
            .await
            .unwrap()
            .base_offset,
        2
    );
    assert_eq!(batches(&leader), [(0, 1), (2, 2)]);
}
