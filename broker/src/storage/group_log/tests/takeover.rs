//! Taking group logs over from broker processes that cannot be waited for
//! (`takeover`; docs/design/volume.md): two processes' stores on one
//! folder, each with its incarnation, the first keeping the log's lock as
//! a process whose volume stalled mid-write would. The first process sees
//! the folder through mount A, the taker through mount B: two GlusterFS
//! mounts where `scripts/test` provides them, else one local folder.

use std::fs::{self, File, OpenOptions};
use std::os::unix::fs::{FileExt, MetadataExt};
use std::sync::Arc;
use std::time::Instant;

use super::oam;
use crate::storage::fs::FileLock;
use crate::storage::group_log::fencing::LOCK_WAIT;
use crate::storage::group_log::*;
use crate::storage::incarnation::{self, Fence, Incarnation};
use crate::storage::two_mounts::TwoMounts;

/// A broker process: a store claiming for `broker` under assignment
/// `version`, with an incarnation registered on the volume, following an
/// assignment that counts `alive` alive.
struct Process {
    store: GroupLogStore,
    incarnation: Arc<Incarnation>,
}

fn process(dir: &Path, broker: i32, version: u64, alive: &[i32]) -> Process {
    let cluster = dir.join("__cluster");
    let incarnation = Incarnation::register(&cluster, broker).unwrap();
    let (me, alive) = (incarnation.clone(), alive.to_vec());
    let owner = Owner::new(broker, move || version).with_incarnation(
        cluster,
        move || Some(me.clone()),
        move |b| alive.contains(&b),
    );
    let options = GroupLogOptions {
        owner: Some(owner),
        ..GroupLogOptions::default()
    };
    Process {
        store: GroupLogStore::open(dir, options).unwrap(),
        incarnation,
    }
}

fn t0(offset: i64) -> Vec<(String, i32, OffsetAndMetadata)> {
    vec![("t".to_string(), 0, oam(offset))]
}

async fn commit(p: &Process, offset: i64) -> Result<(), StoreError> {
    p.store.commit_offsets("g", &t0(offset)).await
}

/// The log's lock, held through another open file as a process whose
/// mount stalled in the middle of a write keeps it.
fn hold_lock(path: &Path) -> (Arc<File>, FileLock) {
    let file = Arc::new(
        OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .unwrap(),
    );
    let held = FileLock::acquire(&file).unwrap();
    (file, held)
}

/// Broker 0's process coordinated the group and kept the log's lock; the
/// assignment counts it dead. Broker 1 loads the group at once (no wait for
/// the lock), with every acknowledged commit; broker 0's write queued
/// before the stall lands late in the file it had, which no one reads;
/// its next commit is refused.
#[tokio::test]
async fn a_dead_coordinator_keeping_the_lock_is_fenced_and_its_commits_are_kept() {
    let dir = TwoMounts::new();
    let a = process(&dir.a, 0, 1, &[0, 1]);
    for offset in 1..=3 {
        commit(&a, offset).await.unwrap();
    }
    let path = a.store.log_path("g");
    let (old, held) = hold_lock(&path);
    let old_len = old.metadata().unwrap().len();

    let b = process(&dir.b, 1, 2, &[1]);
    let started = Instant::now();
    let loaded = b.store.load("g").unwrap().unwrap();
    assert!(started.elapsed() < LOCK_WAIT, "no wait for the lock");
    assert_eq!(loaded.offsets.committed_vec(), t0(3));
    assert!(
        a.incarnation.check_fence().is_err(),
        "broker 0's process is fenced"
    );
    commit(&b, 4).await.unwrap();

    // Broker 0's queued write lands now, where it thought the end was.
    old.write_all_at(b"late bytes of a stalled client", old_len)
        .unwrap();
    drop(held);
    let err = commit(&a, 99).await.unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");

    let c = process(&dir.b, 1, 2, &[1]);
    drop(b);
    assert_eq!(
        c.store.peek("g").unwrap().unwrap().offsets.committed_vec(),
        t0(4)
    );
    assert_eq!(
        c.store.load("g").unwrap().unwrap().offsets.committed_vec(),
        t0(4)
    );
}

/// A commit broker 0's process acknowledged is in its journal; its log
/// write had not reached the volume (still in the stalled client). The
/// taker restores it from the fenced process's journal.
#[tokio::test]
async fn a_commit_only_the_fenced_process_journal_holds_is_restored() {
    let dir = TwoMounts::new();
    let a = process(&dir.a, 0, 1, &[0, 1]);
    commit(&a, 1).await.unwrap();
    commit(&a, 2).await.unwrap();
    let path = a.store.log_path("g");
    let before_last = fs::metadata(&path).unwrap().len();
    commit(&a, 3).await.unwrap();
    let (file, _held) = hold_lock(&path);
    file.set_len(before_last).unwrap();

    let b = process(&dir.b, 1, 2, &[1]);
    assert_eq!(
        b.store.load("g").unwrap().unwrap().offsets.committed_vec(),
        t0(3)
    );
    commit(&b, 4).await.unwrap();
    assert_eq!(
        b.store.peek("g").unwrap().unwrap().offsets.committed_vec(),
        t0(4)
    );
}

/// A commit written before the process was fenced and durable after it is
/// never acknowledged: the journal round reads the fence before answering.
#[tokio::test]
async fn a_fenced_process_acknowledges_no_commit() {
    let dir = TwoMounts::new();
    let a = process(&dir.a, 0, 1, &[0]);
    commit(&a, 1).await.unwrap();
    let journal = a.store.shared.journal().expect("journal mode");
    journal.hold(true);
    let pending = a.store.commit_offsets("g", &t0(2));
    let fence = Fence {
        by_broker: 1,
        at_version: 2,
    };
    incarnation::fence(&dir.b.join("__cluster"), 0, a.incarnation.id(), fence).unwrap();
    journal.hold(false);
    let err = pending.await.unwrap_err();
    assert!(
        matches!(
            err,
            StoreError::Fenced {
                by_broker: 1,
                by_version: 2,
                ..
            }
        ),
        "{err}"
    );
}

/// A process restarted after a crash (its earlier incarnation still
/// registered, its lock still held by the volume) takes its own logs over.
#[tokio::test]
async fn a_restarted_broker_takes_over_from_its_earlier_process() {
    let dir = TwoMounts::new();
    let first = process(&dir.a, 0, 1, &[0]);
    commit(&first, 7).await.unwrap();
    let (_file, _held) = hold_lock(&first.store.log_path("g"));
    let second = process(&dir.b, 0, 1, &[0]);
    assert_eq!(
        second
            .store
            .load("g")
            .unwrap()
            .unwrap()
            .offsets
            .committed_vec(),
        t0(7)
    );
    commit(&second, 8).await.unwrap();
    assert!(first.incarnation.check_fence().is_err());
}

/// Two takers never both replace one file: a live broker's marker makes
/// the other answer retriably; a dead one's is superseded once its
/// process is fenced and its tmp file removed.
#[tokio::test]
async fn one_taker_replaces_a_log_and_a_dead_takers_marker_is_superseded() {
    let dir = TwoMounts::new();
    let a = process(&dir.a, 0, 1, &[0, 1, 2]);
    commit(&a, 5).await.unwrap();
    let path = a.store.log_path("g");
    let log_id = a.store.entries.lock()["g"]
        .inner()
        .log
        .as_ref()
        .unwrap()
        .log_id;
    // Broker 2 won the right to replace the file and is writing its copy.
    let other = Incarnation::register(&dir.a.join("__cluster"), 2).unwrap();
    let paths = a.store.paths("g");
    fs::write(paths.marker(log_id, 0), format!("2 {}", other.id())).unwrap();
    let late_tmp = paths.tmp_of(other.id());
    fs::write(&late_tmp, b"broker 2's copy").unwrap();

    let inode = fs::metadata(&path).unwrap().ino();
    let b = process(&dir.b, 1, 3, &[1, 2]);
    let err = b.store.load("g").unwrap_err();
    assert!(
        matches!(&err, StoreError::Io(e) if e.kind() == io::ErrorKind::WouldBlock),
        "{err}"
    );
    assert_eq!(
        fs::metadata(&path).unwrap().ino(),
        inode,
        "the log is left as it is"
    );

    // Broker 2 is counted dead now.
    let b = process(&dir.b, 1, 3, &[1]);
    assert_eq!(
        b.store.load("g").unwrap().unwrap().offsets.committed_vec(),
        t0(5)
    );
    assert!(other.check_fence().is_err(), "broker 2's process is fenced");
    assert!(!late_tmp.exists(), "its rename can no longer land");
    assert!(!paths.marker(log_id, 0).exists() && !paths.marker(log_id, 1).exists());
}

/// A claimant the assignment counts alive is not fenced: the load waits
/// for the lock as before (it is free here) and claims by appending.
#[tokio::test]
async fn a_live_claimant_is_not_fenced() {
    let dir = TwoMounts::new();
    let a = process(&dir.a, 0, 1, &[0, 1]);
    commit(&a, 1).await.unwrap();
    let path = a.store.log_path("g");
    let inode = fs::metadata(&path).unwrap().ino();
    let b = process(&dir.b, 1, 2, &[0, 1]);
    assert_eq!(
        b.store.load("g").unwrap().unwrap().offsets.committed_vec(),
        t0(1)
    );
    assert!(a.incarnation.check_fence().is_ok());
    assert_eq!(fs::metadata(&path).unwrap().ino(), inode, "the same file");
    let err = commit(&a, 2).await.unwrap_err();
    assert!(matches!(err, StoreError::Fenced { .. }), "{err}");
}
