use std::collections::BTreeMap;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use parking_lot::Mutex;

use super::records::{header_record, KIND_HEADER};
use super::*;
use crate::group::consumer::group::ConsumerGroup;
use crate::group::core::MemberMetadataRecord;
use crate::store::Durable;

/// The store's file operations with faults a test switches on: the test
/// implementation of [`LogIo`].
#[derive(Default)]
struct Faults {
    /// The next record write stops halfway and fails.
    short_write: AtomicBool,
    /// The next sync (journal round, volume round or fsync) reports failure.
    sync: AtomicBool,
    /// Runs once a snapshot's tmp file is written, before it replaces the log.
    #[allow(clippy::type_complexity)]
    after_snapshot_tmp: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl LogIo for Faults {
    fn write_at(&self, file: &File, at: u64, bytes: &[u8]) -> io::Result<()> {
        if self.short_write.swap(false, Ordering::AcqRel) {
            file.write_all_at(&bytes[..bytes.len() / 2], at)?;
            return Err(io::Error::other("injected short write"));
        }
        file.write_all_at(bytes, at)
    }

    fn synced(&self, result: io::Result<()>) -> io::Result<()> {
        match self.sync.swap(false, Ordering::AcqRel) {
            true => Err(io::Error::other("injected sync failure")),
            false => result,
        }
    }

    fn snapshot_written(&self) {
        if let Some(hook) = self.after_snapshot_tmp.lock().take() {
            hook();
        }
    }
}

fn sync(sync: GroupLogSync) -> GroupLogOptions {
    GroupLogOptions {
        sync,
        ..GroupLogOptions::default()
    }
}

/// A store claiming what it writes for `broker`, under assignment version `broker`.
fn owned_by(dir: &Path, broker: i32) -> GroupLogStore {
    let options = GroupLogOptions {
        owner: Some(Owner::new(broker, move || broker as u64)),
        ..GroupLogOptions::default()
    };
    GroupLogStore::open(dir, options).unwrap()
}

/// A store (journal mode) whose file operations fail when `faults` says.
fn faulty_store(dir: &Path) -> (GroupLogStore, Arc<Faults>) {
    let faults = Arc::new(Faults::default());
    let store =
        GroupLogStore::open_with_io(dir, GroupLogOptions::default(), faults.clone()).unwrap();
    (store, faults)
}

pub(super) fn oam(offset: i64) -> OffsetAndMetadata {
    OffsetAndMetadata {
        offset,
        leader_epoch: None,
        metadata: String::new(),
        commit_timestamp_ms: 1_000,
        expire_timestamp_ms: None,
    }
}

/// Commits offset `offset` of partition 0 of topic "t" for `group`, durably.
async fn commit_t0(store: &GroupLogStore, group: &str, offset: i64) {
    store
        .commit_offsets(group, &commit("t", 0, oam(offset)))
        .await
        .unwrap();
}

fn commit(
    topic: &str,
    partition: i32,
    o: OffsetAndMetadata,
) -> Vec<(String, i32, OffsetAndMetadata)> {
    vec![(topic.to_string(), partition, o)]
}

fn metadata(generation: i32) -> GroupMetadataRecord {
    GroupMetadataRecord {
        group_id: "g".to_string(),
        protocol_type: Some("consumer".to_string()),
        generation,
        protocol: Some("range".to_string()),
        leader: Some("m-1".to_string()),
        current_state_timestamp_ms: Some(42),
        members: vec![MemberMetadataRecord {
            member_id: "m-1".to_string(),
            group_instance_id: Some("i-1".to_string()),
            client_id: "client".to_string(),
            client_host: "/10.0.0.1".to_string(),
            rebalance_timeout_ms: 300_000,
            session_timeout_ms: 45_000,
            subscription: Bytes::from_static(&[0, 1, 2, 0xff, 0x7f]),
            assignment: Bytes::from(vec![9u8; 300]),
        }],
    }
}

fn file_len(path: &Path) -> u64 {
    fs::metadata(path).unwrap().len()
}

#[tokio::test]
async fn commit_then_load_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    assert_eq!(store.load("g").unwrap(), None);
    let a = OffsetAndMetadata {
        offset: 17,
        leader_epoch: Some(3),
        metadata: "héllo \"quoted\" \n\0".to_string(),
        commit_timestamp_ms: 1_700_000_000_000,
        expire_timestamp_ms: Some(1_800_000_000_000),
    };
    let b = OffsetAndMetadata {
        offset: -1,
        ..oam(5)
    };
    store
        .commit_offsets("g", &[("t", 0, a.clone()), ("t", 1, b.clone())])
        .await
        .unwrap();
    store
        .commit_offsets("g", &commit("t", 1, oam(99)))
        .await
        .unwrap();
    store
        .commit_offsets("g", &commit("a", 7, oam(1)))
        .await
        .unwrap();

    // A fresh store (another process) sees everything.
    let other = GroupLogStore::new(dir.path()).unwrap();
    let loaded = other.load("g").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![
            ("a".to_string(), 7, oam(1)),
            ("t".to_string(), 0, a),
            ("t".to_string(), 1, oam(99)),
        ]
    );
    assert_eq!(loaded.metadata, None);
    assert_eq!(loaded.damage, None);
    assert_eq!(loaded.replayed_deltas, 3);
    assert_eq!(loaded.replayed_snapshots, 0);
    // The store that wrote it, with its handle cached, loads the same.
    assert_eq!(store.load("g").unwrap().unwrap(), loaded);
}

#[tokio::test]
async fn delete_offsets_removes_them() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    // Deleting from a group without a log creates nothing.
    store.delete_offsets("g", &[("t".into(), 0)]).await.unwrap();
    assert!(!store.log_path("g").exists());

    let offsets: Vec<_> = (0..4)
        .map(|p| ("t".to_string(), p, oam(p as i64)))
        .collect();
    store.commit_offsets("g", &offsets).await.unwrap();
    store
        .delete_offsets("g", &[("t".into(), 1), ("t".into(), 3), ("nope".into(), 0)])
        .await
        .unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(0)), ("t".to_string(), 2, oam(2))]
    );
}

#[tokio::test]
async fn metadata_write_replace_clear() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    // Clearing a group without a log creates nothing.
    store.write_metadata("g", None).await.unwrap();
    assert!(!store.log_path("g").exists());

    store.write_metadata("g", Some(&metadata(1))).await.unwrap();
    commit_t0(&store, "g", 5).await;
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(loaded.metadata, Some(metadata(1)));

    let mut two = metadata(2);
    two.members.clear();
    two.leader = None;
    store.write_metadata("g", Some(&two)).await.unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.metadata, Some(two));
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(5))]
    );

    store.write_metadata("g", None).await.unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.metadata, None);
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(5))]
    );
}

#[tokio::test]
async fn snapshots_bound_the_log_and_the_replay() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    store.write_metadata("g", Some(&metadata(7))).await.unwrap();
    let path = store.log_path("g");
    let mut model = BTreeMap::new();
    let mut max_len = 0;
    for i in 1..10 * SNAPSHOT_EVERY + 10 {
        // Four partitions, rewritten over and over; one deleted now and then.
        let p = (i % 4) as i32;
        store
            .commit_offsets("g", &commit("t", p, oam(i as i64)))
            .await
            .unwrap();
        model.insert(p, oam(i as i64));
        if i % 50 == 0 {
            store.delete_offsets("g", &[("t".into(), 3)]).await.unwrap();
            model.remove(&3);
        }
        max_len = max_len.max(file_len(&path));
    }
    assert!(
        store.snapshot_count() >= 5,
        "{} snapshots",
        store.snapshot_count()
    );
    // One delta is ~150 bytes: without snapshots the log would be ~50 KB.
    assert!(
        max_len < (SNAPSHOT_EVERY as u64 + 8) * 200,
        "log grew to {max_len}"
    );

    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.replayed_snapshots, 1);
    // The snapshot (~1.1 KB: the member's 300-byte assignment, in hex)
    // allows 4x its size of ~52-byte deltas: ~85, far below the ~650
    // written.
    assert!(
        loaded.replayed_deltas < 2 * SNAPSHOT_EVERY,
        "{} deltas replayed",
        loaded.replayed_deltas
    );
    assert_eq!(loaded.metadata, Some(metadata(7)));
    let expect: Vec<_> = model
        .into_iter()
        .map(|(p, o)| ("t".to_string(), p, o))
        .collect();
    assert_eq!(loaded.offsets.committed_vec(), expect);
}

#[tokio::test]
async fn exactly_at_a_snapshot_nothing_is_replayed_but_the_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    for i in 0..SNAPSHOT_EVERY {
        store
            .commit_offsets("g", &commit("t", i as i32, oam(1)))
            .await
            .unwrap();
    }
    store.turn_free("g").await;
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!((loaded.replayed_snapshots, loaded.replayed_deltas), (1, 0));
    assert_eq!(loaded.offsets.committed_vec().len(), SNAPSHOT_EVERY);
    commit_t0(&store, "g", 2).await;
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!((loaded.replayed_snapshots, loaded.replayed_deltas), (1, 1));
}

/// Log lengths after the header and after each of three commits.
async fn three_commits(store: &GroupLogStore) -> Vec<u64> {
    let path = store.log_path("g");
    let mut ends = Vec::new();
    for i in 0..3 {
        store
            .commit_offsets("g", &commit("t", i, oam(10 + i as i64)))
            .await
            .unwrap();
        ends.push(file_len(&path));
    }
    ends
}

#[tokio::test]
async fn torn_tail_is_cut_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let ends = three_commits(&store).await;
    store.close("g");
    let path = store.log_path("g");
    let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(ends[2] - 5).unwrap();
    drop(f);

    let loaded = store.load("g").unwrap().unwrap();
    let damage = loaded.damage.unwrap();
    assert_eq!(damage.position, ends[1]);
    assert_eq!(damage.truncated_bytes, ends[2] - 5 - ends[1]);
    assert!(damage.reason.contains("torn"), "{}", damage.reason);
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(10)), ("t".to_string(), 1, oam(11))]
    );
    assert_eq!(file_len(&path), ends[1]);

    // Appends continue after the cut; the next load is clean.
    store
        .commit_offsets("g", &commit("t", 2, oam(12)))
        .await
        .unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.damage, None);
    assert_eq!(loaded.offsets.committed_vec().len(), 3);
}

/// A peek (another broker's look at a group it does not hold, for lag)
/// takes nothing: the log's bytes are the same after it, a torn tail
/// included, and a store that owns logs writes no claim.
#[tokio::test]
async fn a_peek_reads_the_log_as_it_is_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let writer = owned_by(dir.path(), 1);
    let ends = three_commits(&writer).await;
    writer.close("g");
    let path = writer.log_path("g");
    let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(ends[2] - 5).unwrap();
    drop(f);
    let before = fs::read(&path).unwrap();

    let reader = owned_by(dir.path(), 2);
    let peeked = reader.peek("g").unwrap().unwrap();
    assert_eq!(
        peeked.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(10)), ("t".to_string(), 1, oam(11))]
    );
    assert_eq!(fs::read(&path).unwrap(), before, "nothing written or cut");
    assert_eq!(reader.open_logs(), 0, "nothing kept open");
    assert_eq!(reader.peek("missing").unwrap(), None);
}

#[tokio::test]
async fn bit_flip_is_cut_and_reported() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let ends = three_commits(&store).await;
    let path = store.log_path("g");
    let mut data = fs::read(&path).unwrap();
    data[ends[0] as usize + 20] ^= 0x04;
    fs::write(&path, &data).unwrap();

    // The handle is still cached: load must read the disk anyway.
    let loaded = store.load("g").unwrap().unwrap();
    let damage = loaded.damage.unwrap();
    assert_eq!(damage.position, ends[0]);
    assert_eq!(damage.reason, "checksum mismatch");
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(10))]
    );
    assert_eq!(file_len(&path), ends[0]);
}

#[tokio::test]
async fn damaged_header_restarts_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    three_commits(&store).await;
    store.close("g");
    let path = store.log_path("g");
    let mut data = fs::read(&path).unwrap();
    data[9] ^= 0xff;
    fs::write(&path, &data).unwrap();

    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(loaded.damage.unwrap().position, 0);
    assert!(loaded.offsets.committed_vec().is_empty());
    // The log starts over with a fresh header, so the group is listed again.
    assert_eq!(store.list_groups().unwrap(), vec!["g".to_string()]);
    commit_t0(&store, "g", 1).await;
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(1))]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_share_fsyncs_and_all_survive() {
    let dir = tempfile::tempdir().unwrap();
    let store = Arc::new(GroupLogStore::new(dir.path()).unwrap());
    // Create the log first, so every task appends.
    store
        .commit_offsets("g", &commit("warmup", 0, oam(0)))
        .await
        .unwrap();
    let before = store.fsync_count();
    const TASKS: i32 = 40;
    const ROUNDS: i64 = 3;
    let mut handles = Vec::new();
    for p in 0..TASKS {
        let store = store.clone();
        handles.push(tokio::spawn(async move {
            for r in 0..ROUNDS {
                store
                    .commit_offsets("g", &commit("t", p, oam(r)))
                    .await
                    .unwrap();
            }
        }));
    }
    for h in handles {
        h.await.unwrap();
    }
    let commits = TASKS as u64 * ROUNDS as u64;
    let fsyncs = store.fsync_count() - before;
    assert!(fsyncs < commits, "{fsyncs} fsyncs for {commits} commits");

    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.offsets.committed_vec().len(), TASKS as usize + 1);
    for (topic, p, o) in &loaded.offsets.committed_vec() {
        if topic == "t" {
            assert_eq!(o.offset, ROUNDS - 1, "partition {p}");
        }
    }
}

#[tokio::test]
async fn concurrent_commits_on_one_thread_share_fsyncs() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    store
        .commit_offsets("g", &commit("warmup", 0, oam(0)))
        .await
        .unwrap();
    let before = store.fsync_count();
    // Rounds held until all 30 wait in the journal's queue: then one round
    // takes them all (without the hold, how many rounds run depends on how
    // fast the writer thread is against the journal's fsync).
    let journal = store.shared.journal().unwrap();
    journal.hold(true);
    let commits: Vec<_> = (0..30).map(|p| commit("t", p, oam(p as i64))).collect();
    let waits: Vec<_> = commits
        .iter()
        .map(|c| store.commit_offsets("g", c))
        .collect();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while journal.queued() < 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} queued",
            journal.queued()
        );
        tokio::task::yield_now().await;
    }
    journal.hold(false);
    let results = futures::future::join_all(waits).await;
    assert!(results.iter().all(|r| r.is_ok()));
    let fsyncs = store.fsync_count() - before;
    assert_eq!(fsyncs, 1, "{fsyncs} fsyncs for 30 commits");
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.offsets.committed_vec().len(), 31);
}

#[tokio::test]
async fn delete_group_removes_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    commit_t0(&store, "a", 1).await;
    commit_t0(&store, "b", 2).await;
    assert_eq!(
        store.list_groups().unwrap(),
        vec!["a".to_string(), "b".to_string()]
    );

    store.delete_group("a").await.unwrap();
    store.delete_group("a").await.unwrap();
    store.delete_group("never-existed").await.unwrap();
    assert_eq!(store.list_groups().unwrap(), vec!["b".to_string()]);
    assert_eq!(store.load("a").unwrap(), None);
    assert!(!store.log_path("a").exists());

    // A group recreated after deletion starts empty.
    store
        .commit_offsets("a", &commit("u", 1, oam(3)))
        .await
        .unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("a")
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("u".to_string(), 1, oam(3))]
    );
}

#[tokio::test]
async fn hostile_group_ids_stay_inside_and_round_trip() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let mut ids: Vec<String> = vec![
        "../../etc/passwd".into(),
        "/abs".into(),
        "a/b".into(),
        "..".into(),
        ".".into(),
        "".into(),
        "\0".into(),
        "nul\0in\0middle".into(),
        "\u{1}\u{7}\n\r\t\u{7f}".into(),
        "__cluster".into(),
        "x.log".into(),
        "x.log.tmp".into(),
        "%2F".into(),
        "~abc".into(),
        "é日本\u{202e}\u{feff}".into(),
        "a".repeat(255),
        "/".repeat(255),
        "é".repeat(200), // 400 bytes
        "b".repeat(10_000),
    ];
    for (i, id) in ids.iter().enumerate() {
        store
            .commit_offsets(id, &commit("t", 0, oam(i as i64)))
            .await
            .unwrap();
    }
    // Nothing outside the folder, no sub-folders in it, one log per id.
    let top: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(top, vec!["__cluster"]);
    let cluster: Vec<_> = fs::read_dir(dir.path().join("__cluster"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(cluster, vec!["__consumer_offsets"]);
    let files: Vec<_> = fs::read_dir(store.root())
        .unwrap()
        .map(|e| e.unwrap())
        .filter(|e| e.file_name() != crate::storage::journal::JOURNAL_DIR)
        .collect();
    assert_eq!(files.len(), ids.len());
    assert!(files.iter().all(|f| f.file_type().unwrap().is_file()));

    let other = GroupLogStore::new(dir.path()).unwrap();
    for (i, id) in ids.iter().enumerate() {
        let loaded = other.load(id).unwrap().unwrap();
        assert_eq!(
            loaded.offsets.committed_vec(),
            vec![("t".to_string(), 0, oam(i as i64))],
            "{id:?}"
        );
    }
    ids.sort();
    assert_eq!(other.list_groups().unwrap(), ids);
}

#[tokio::test]
async fn a_log_holding_another_groups_id_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    commit_t0(&store, "a", 1).await;
    // Someone copies a's log to where b's log lives.
    fs::copy(store.log_path("a"), store.log_path("b")).unwrap();
    let before = fs::read(store.log_path("b")).unwrap();

    let err = store.load("b").unwrap_err();
    assert!(
        matches!(&err, StoreError::Io(e) if e.kind() == io::ErrorKind::InvalidData),
        "{err}"
    );
    let err = store
        .commit_offsets("b", &commit("t", 0, oam(2)))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::Io(e) if e.kind() == io::ErrorKind::InvalidData),
        "{err}"
    );
    // The foreign log is left as it was, and is not listed as b (nor twice as a).
    assert_eq!(fs::read(store.log_path("b")).unwrap(), before);
    assert_eq!(store.list_groups().unwrap(), vec!["a".to_string()]);
}

#[tokio::test]
async fn a_failed_write_leaves_no_partial_record() {
    let dir = tempfile::tempdir().unwrap();
    let (store, faults) = faulty_store(dir.path());
    commit_t0(&store, "g", 1).await;
    let len = file_len(&store.log_path("g"));

    faults.short_write.store(true, Ordering::SeqCst);
    store
        .commit_offsets("g", &commit("t", 1, oam(2)))
        .await
        .unwrap_err();
    assert_eq!(file_len(&store.log_path("g")), len);

    store
        .commit_offsets("g", &commit("t", 2, oam(3)))
        .await
        .unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.damage, None);
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(1)), ("t".to_string(), 2, oam(3))]
    );
}

#[tokio::test]
async fn a_failed_fsync_fails_the_commit_and_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let (store, faults) = faulty_store(dir.path());
    commit_t0(&store, "g", 1).await;

    faults.sync.store(true, Ordering::SeqCst);
    store
        .commit_offsets("g", &commit("t", 1, oam(2)))
        .await
        .unwrap_err();
    let entry = store.entries.lock().get("g").unwrap().clone();
    assert!(entry.inner().failed);

    store
        .commit_offsets("g", &commit("t", 2, oam(3)))
        .await
        .unwrap();
    assert!(!entry.inner().failed);
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.damage, None);
    assert_eq!(
        loaded.offsets.committed_vec().last(),
        Some(&("t".to_string(), 2, oam(3)))
    );
}

#[tokio::test]
async fn a_log_replaced_by_another_broker_is_reopened_before_appending() {
    let dir = tempfile::tempdir().unwrap();
    let old_owner = GroupLogStore::new(dir.path()).unwrap();
    old_owner
        .commit_offsets("g", &commit("t", 0, oam(1)))
        .await
        .unwrap();

    // The group moves: the new owner loads it and writes enough to snapshot
    // (replacing the file) without the old owner closing its handle.
    let new_owner = GroupLogStore::new(dir.path()).unwrap();
    new_owner.load("g").unwrap().unwrap();
    for i in 0..SNAPSHOT_EVERY as i64 {
        new_owner
            .commit_offsets("g", &commit("t", 1, oam(i)))
            .await
            .unwrap();
    }
    new_owner.turn_free("g").await;
    assert_eq!(new_owner.snapshot_count(), 1);

    // The old owner's next append goes to the current file, not the
    // unlinked one.
    old_owner
        .commit_offsets("g", &commit("t", 2, oam(7)))
        .await
        .unwrap();
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![
            ("t".to_string(), 0, oam(1)),
            ("t".to_string(), 1, oam(SNAPSHOT_EVERY as i64 - 1)),
            ("t".to_string(), 2, oam(7)),
        ]
    );
}

#[tokio::test]
async fn close_drops_the_cached_handle() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    commit_t0(&store, "g", 1).await;
    assert!(store.entries.lock().contains_key("g"));
    store.close("g");
    assert!(!store.entries.lock().contains_key("g"));
    store.close("never-opened");
    commit_t0(&store, "g", 2).await;
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(2))]
    );
}

#[tokio::test]
async fn idle_logs_beyond_the_bound_are_closed_and_reopen_on_use() {
    let dir = tempfile::tempdir().unwrap();
    let options = GroupLogOptions {
        max_open_logs: Some(4),
        ..GroupLogOptions::default()
    };
    let store = GroupLogStore::open(dir.path(), options).unwrap();
    for i in 0..20 {
        let g = format!("g{i}");
        store
            .commit_offsets(&g, &commit("t", 0, oam(i)))
            .await
            .unwrap();
        assert!(store.open_logs() <= 4, "{} logs open", store.open_logs());
    }
    // The most recently used stay open; an old one reopens from its file.
    assert!(store.entries.lock().contains_key("g19"));
    assert!(!store.entries.lock().contains_key("g0"));
    store
        .commit_offsets("g0", &commit("t", 1, oam(100)))
        .await
        .unwrap();
    let loaded = store.load("g0").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(0)), ("t".to_string(), 1, oam(100))]
    );
    // A log with a write in flight is not closed under it.
    let pending = store.commit_offsets("g1", &commit("t", 0, oam(7)));
    for i in 20..30 {
        store
            .commit_offsets(&format!("g{i}"), &commit("t", 0, oam(i)))
            .await
            .unwrap();
    }
    assert!(store.entries.lock().contains_key("g1"));
    pending.await.unwrap();
    assert_eq!(
        store.load("g1").unwrap().unwrap().offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(7))]
    );
}

#[test]
fn records_are_framed_with_length_and_crc() {
    let frame = encode(&header_record("g", 1)).unwrap();
    let len = u32::from_be_bytes(frame[0..4].try_into().unwrap()) as usize;
    assert_eq!(len, frame.len() - 8);
    let crc = u32::from_be_bytes(frame[4..8].try_into().unwrap());
    assert_eq!(crc, crc32c::crc32c(&frame[8..]));
    assert_eq!(frame[8], KIND_HEADER);
    assert_eq!(&frame[9..], br#"{"version":1,"group_id":"g","log_id":1}"#);
}

#[tokio::test]
async fn writes_are_ordered_when_called_and_durable_when_awaited() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::open(dir.path(), sync(GroupLogSync::PerFile)).unwrap();
    let first = store.commit_offsets("g", &commit("t", 0, oam(1)));
    let second = store.commit_offsets("g", &commit("t", 0, oam(2)));
    let meta = store.write_metadata("g", Some(&metadata(3)));
    // Both records are in the log, in call order, before anything is awaited.
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(2))]
    );
    assert_eq!(loaded.metadata, Some(metadata(3)));
    let before = store.fsync_count();
    // Awaiting the last one makes all three durable with one group commit
    // (file + folder, since the log is new).
    meta.await.unwrap();
    assert_eq!(store.fsync_count() - before, 2);
    second.await.unwrap();
    first.await.unwrap();
    assert_eq!(store.fsync_count() - before, 2);
}

#[tokio::test]
async fn one_volume_round_makes_appends_to_many_logs_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    assert_eq!(store.fsync_count(), 0);
    // New logs in ten groups, all waiting before a round starts: one
    // syncfs covers every file and the folder.
    let volume = store.shared.volume().unwrap();
    volume.hold(true);
    let writes = futures::future::join_all(
        (0..10).map(|g| store.commit_offsets(&format!("g{g}"), &commit("t", 0, oam(g)))),
    );
    futures::pin_mut!(writes);
    assert!(futures::poll!(&mut writes).is_pending());
    volume.hold(false);
    assert!(writes.await.iter().all(|w| w.is_ok()));
    assert_eq!(store.fsync_count(), 1);
    let again = GroupLogStore::new(dir.path()).unwrap();
    for g in 0..10 {
        let loaded = again.load(&format!("g{g}")).unwrap().unwrap();
        assert_eq!(
            loaded.offsets.committed_vec(),
            vec![("t".to_string(), 0, oam(g))]
        );
    }
}

#[tokio::test]
async fn appends_made_while_a_snapshot_is_written_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let (store, faults) = faulty_store(dir.path());
    let store = Arc::new(store);
    for i in 0..SNAPSHOT_EVERY as i32 - 1 {
        store
            .commit_offsets("g", &commit("t", i, oam(1)))
            .await
            .unwrap();
    }
    // While the snapshot's tmp file is being written, two more commits land
    // in the old log: they must be carried over into the new one.
    let late: Arc<Mutex<Vec<Durable>>> = Arc::default();
    let (s, l) = (store.clone(), late.clone());
    *faults.after_snapshot_tmp.lock() = Some(Box::new(move || {
        let mut l = l.lock();
        l.push(Box::pin(s.commit_offsets("g", &commit("late", 0, oam(5)))));
        l.push(Box::pin(s.delete_offsets("g", &[("t".into(), 0)])));
    }));
    store
        .commit_offsets("g", &commit("t", 63, oam(1)))
        .await
        .unwrap();
    store.turn_free("g").await;
    assert_eq!(store.snapshot_count(), 1);
    let late: Vec<Durable> = std::mem::take(&mut *late.lock());
    assert_eq!(late.len(), 2);
    for f in late {
        f.await.unwrap();
    }

    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!((loaded.replayed_snapshots, loaded.replayed_deltas), (1, 2));
    assert_eq!(loaded.damage, None);
    assert_eq!(loaded.offsets.committed_vec().len(), SNAPSHOT_EVERY); // 64 - t/0 + late/0
    assert_eq!(
        loaded.offsets.committed_vec()[0],
        ("late".to_string(), 0, oam(5))
    );
    assert!(!loaded
        .offsets
        .committed_vec()
        .iter()
        .any(|(t, p, _)| t == "t" && *p == 0));
    // The writer's own view agrees, and it keeps appending to the new file.
    commit_t0(&store, "g", 9).await;
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.replayed_deltas, 3);
    assert!(loaded
        .offsets
        .committed_vec()
        .contains(&("t".to_string(), 0, oam(9))));
    assert!(!store.paths("g").tmp.exists());
}

#[tokio::test]
async fn close_with_writes_in_flight_still_makes_them_durable() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    commit_t0(&store, "g", 1).await;
    let pending = store.commit_offsets("g", &commit("t", 0, oam(2)));
    store.close("g");
    assert!(!store.entries.lock().contains_key("g"));
    let before = store.fsync_count();
    pending.await.unwrap();
    assert_eq!(store.fsync_count() - before, 1);
    // A reopen after close appends after the in-flight record.
    store
        .commit_offsets("g", &commit("t", 1, oam(3)))
        .await
        .unwrap();
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(2)), ("t".to_string(), 1, oam(3))]
    );
}

#[tokio::test]
async fn works_through_the_group_store_trait() {
    use crate::group::store::GroupStore;
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn GroupStore> = Arc::new(GroupLogStore::new(dir.path()).unwrap());
    store
        .commit_offsets("g", &Arc::new(vec![("t".into(), 0, oam(1))]))
        .await
        .unwrap();
    store.write_metadata("g", Some(&metadata(1))).await.unwrap();
    let stored = store.load("g").unwrap().unwrap();
    assert_eq!(
        stored.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(1))]
    );
    assert_eq!(stored.metadata, Some(metadata(1)));
    assert_eq!(store.list_groups().unwrap(), vec!["g".to_string()]);
    store.close("g");
    store.delete_group("g").await.unwrap();
    assert!(store.load("g").unwrap().is_none());
    assert!(store.list_groups().unwrap().is_empty());
}

/// The seed the fuzzer starts from for binary records, written by a script
/// from the format documented in records.rs (not by this code), loads to
/// what the documentation says it holds.
#[tokio::test]
async fn a_log_written_from_the_documented_format_loads() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let seed = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../fuzz/regressions/group_log/seed-binary-records"
    );
    fs::copy(seed, store.log_path("g")).unwrap();
    let loaded = store.load("g").unwrap().unwrap();
    assert_eq!(loaded.damage, None);
    assert_eq!((loaded.replayed_snapshots, loaded.replayed_deltas), (1, 3));
    let got: Vec<_> = loaded
        .offsets
        .committed()
        .map(|(t, p, o)| (t, p, o.offset, o.leader_epoch, o.metadata.as_str()))
        .collect();
    assert_eq!(
        got,
        vec![
            ("t", 0, 5, None, ""),
            ("t", 1, 9, Some(3), "m"),
            ("u", 2, 11, None, ""),
        ]
    );
}

/// The journal files left under the store's folder.
fn journal_files(store_root: &Path) -> Vec<String> {
    fs::read_dir(store_root.join(crate::storage::journal::JOURNAL_DIR))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".jnl"))
        .collect()
}

/// A machine crash loses group-log writes still in the page cache; the
/// journal holds them. Simulated: the broker stops (its journal becomes an
/// orphan), then one log loses its tail and another a block in the middle.
/// The next store replays the journal: both logs are byte for byte what
/// was acknowledged, and the journal is gone.
#[tokio::test]
async fn journal_replay_restores_writes_a_crash_lost() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let mut acked = BTreeMap::new();
    // The first commit creates each log (made durable by a volume round).
    for g in ["g", "h"] {
        store
            .commit_offsets(g, &commit("t", 0, oam(0)))
            .await
            .unwrap();
    }
    let created_len = file_len(&store.log_path("g"));
    let rounds_before = store.shared.journal().unwrap().rounds();
    for i in 1..=30 {
        for g in ["g", "h"] {
            store
                .commit_offsets(g, &commit("t", i % 4, oam(i.into())))
                .await
                .unwrap();
            acked.insert((g, i % 4), i64::from(i));
        }
    }
    assert!(store.shared.journal().unwrap().rounds() > rounds_before);
    let root = store.root().to_path_buf();
    let (g_path, h_path) = (store.log_path("g"), store.log_path("h"));
    let (g_full, h_full) = (fs::read(&g_path).unwrap(), fs::read(&h_path).unwrap());
    drop(store);
    assert_eq!(
        journal_files(&root).len(),
        2,
        "the stopped broker's journal"
    );

    // What the crash lost: g's journaled tail, and a block inside h.
    let f = fs::OpenOptions::new().write(true).open(&g_path).unwrap();
    f.set_len(created_len).unwrap();
    let f = fs::OpenOptions::new().write(true).open(&h_path).unwrap();
    f.write_all_at(&[0u8; 700], created_len + 100).unwrap();

    let store = GroupLogStore::new(dir.path()).unwrap();
    assert_eq!(fs::read(&g_path).unwrap(), g_full);
    assert_eq!(fs::read(&h_path).unwrap(), h_full);
    assert!(
        journal_files(&root).is_empty(),
        "replayed journals are removed"
    );
    for g in ["g", "h"] {
        let loaded = store.load(g).unwrap().unwrap();
        assert_eq!(loaded.damage, None);
        for ((group, partition), offset) in &acked {
            if group == &g {
                let found = loaded.offsets.committed().find(|(_, p, _)| p == partition);
                assert_eq!(found.map(|(_, _, o)| o.offset), Some(*offset));
            }
        }
    }
}

/// A journal whose broker still runs is never replayed by another store.
#[tokio::test]
async fn a_live_brokers_journal_is_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    commit_t0(&store, "g", 1).await;
    commit_t0(&store, "g", 2).await;
    let _other = GroupLogStore::new(dir.path()).unwrap();
    assert_eq!(journal_files(store.root()).len(), 2);
    commit_t0(&store, "g", 3).await;
}

/// Commits offsets 1..=9 of `t/0` to group "g" through `store`, then stops
/// it and cuts the log back to its first commit, with the stopped store's
/// journal kept locked as if its lock had not been released yet. Returns
/// the log's path, its full contents before the cut, the journal's file
/// names and their locks.
async fn stop_and_lose_the_tail(
    store: GroupLogStore,
) -> (PathBuf, Vec<u8>, Vec<String>, Vec<fs::File>) {
    commit_t0(&store, "g", 1).await;
    let cut = file_len(&store.log_path("g"));
    for i in 2..10 {
        store
            .commit_offsets("g", &commit("t", 0, oam(i)))
            .await
            .unwrap();
    }
    let (root, path) = (store.root().to_path_buf(), store.log_path("g"));
    let full = fs::read(&path).unwrap();
    drop(store);
    let names = journal_files(&root);
    let held = names
        .iter()
        .map(|n| {
            let f =
                fs::File::open(root.join(crate::storage::journal::JOURNAL_DIR).join(n)).unwrap();
            f.lock().unwrap();
            f
        })
        .collect();
    fs::OpenOptions::new()
        .write(true)
        .open(&path)
        .unwrap()
        .set_len(cut)
        .unwrap();
    (path, full, names, held)
}

/// A journal replayed after another broker took the group over and wrote
/// its log never overwrites that broker's records.
#[tokio::test]
async fn replay_never_overwrites_records_written_after_a_takeover() {
    let dir = tempfile::tempdir().unwrap();
    let a = GroupLogStore::new(dir.path()).unwrap();
    let root = a.root().to_path_buf();
    let (_, _, _, held) = stop_and_lose_the_tail(a).await;
    let b = GroupLogStore::new(dir.path()).unwrap();
    b.load("g").unwrap();
    for i in 100..103 {
        b.commit_offsets("g", &commit("t", 1, oam(i)))
            .await
            .unwrap();
    }
    let written_by_b = fs::read(b.log_path("g")).unwrap();
    drop(b);
    drop(held);

    let c = GroupLogStore::new(dir.path()).unwrap();
    assert_eq!(fs::read(c.log_path("g")).unwrap(), written_by_b);
    let loaded = c.load("g").unwrap().unwrap();
    assert_eq!(loaded.damage, None);
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(1)), ("t".to_string(), 1, oam(102))]
    );
    assert!(journal_files(&root).is_empty());
}

/// A broker taking a group over replays the journal of the broker that
/// wrote it last once that broker is gone, before claiming the log: the
/// writes that broker acknowledged but its log lost come back.
#[tokio::test]
async fn a_takeover_replays_the_previous_writers_journal_first() {
    let dir = tempfile::tempdir().unwrap();
    let a = owned_by(dir.path(), 1);
    // Broker 1's lock outlives it a while on a shared file system: broker
    // 2 starts before its journal is an orphan.
    let root = a.root().to_path_buf();
    let (path, full, a_journal, held) = stop_and_lose_the_tail(a).await;
    let b = owned_by(dir.path(), 2);
    drop(held);
    let loaded = b.load("g").unwrap().unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(9))]
    );
    assert_eq!(&fs::read(&path).unwrap()[..full.len()], &full[..]);
    let left = journal_files(&root);
    assert!(
        a_journal.iter().all(|n| !left.contains(n)),
        "broker 1's journal is removed"
    );
}

/// `--group-log-sync volume`: no journal; every append is made durable by
/// a volume round, and the logs alone hold what was acknowledged.
#[tokio::test]
async fn volume_mode_makes_appends_durable_without_a_journal() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::open(dir.path(), sync(GroupLogSync::Volume)).unwrap();
    assert!(store.shared.journal().is_none());
    for i in 1..=5 {
        store
            .commit_offsets("g", &commit("t", 0, oam(i)))
            .await
            .unwrap();
    }
    let rounds = store.shared.volume().unwrap().syncs();
    assert!(rounds >= 5, "one volume round per awaited append: {rounds}");
    assert!(!store
        .root()
        .join(crate::storage::journal::JOURNAL_DIR)
        .exists());
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(5))]
    );
}

/// One heartbeat's worth of consumer group records: `member` joins at
/// `epoch` holding partitions 0..n of one topic.
fn consumer_join(member: &str, epoch: i32, partitions: &[i32]) -> Vec<ConsumerGroupRecord> {
    use crate::group::consumer::member::MemberSubscriptionMetadata;
    let topic = uuid::Uuid::from_u128(7);
    let assigned: crate::group::assignor::MemberAssignment =
        [(topic, partitions.iter().copied().collect())].into();
    vec![
        ConsumerGroupRecord::Member {
            member_id: member.into(),
            metadata: MemberSubscriptionMetadata {
                subscribed_topic_names: ["t".to_string()].into(),
                rebalance_timeout_ms: 45_000,
                ..Default::default()
            },
        },
        ConsumerGroupRecord::GroupEpoch { epoch },
        ConsumerGroupRecord::TargetMember {
            member_id: member.into(),
            partitions: assigned.clone(),
        },
        ConsumerGroupRecord::TargetEpoch {
            assignment_epoch: epoch,
        },
        ConsumerGroupRecord::CurrentAssignment {
            member_id: member.into(),
            state: 0,
            member_epoch: epoch,
            previous_member_epoch: epoch - 1,
            assigned,
            pending_revocation: Default::default(),
        },
    ]
}

fn replayed(changes: &[Vec<ConsumerGroupRecord>]) -> Option<ConsumerGroup> {
    let mut group = None;
    for change in changes {
        crate::group::consumer::group::replay_change(&mut group, "g", change);
    }
    group
}

#[tokio::test]
async fn consumer_group_records_survive_a_reload_and_a_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let changes = vec![
        consumer_join("m1", 1, &[0, 1]),
        consumer_join("m2", 2, &[2]),
    ];
    for change in &changes {
        store.write_consumer_records("g", change).await.unwrap();
    }
    commit_t0(&store, "g", 5).await;
    let expected = replayed(&changes);
    assert_eq!(expected.as_ref().unwrap().members().len(), 2);
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(replayed(&[loaded.consumer]), expected);
    assert_eq!(
        loaded.offsets.committed_vec(),
        vec![("t".to_string(), 0, oam(5))]
    );

    // Enough commits for snapshots: the group is carried in them.
    for i in 0..3 * SNAPSHOT_EVERY {
        commit_t0(&store, "g", i as i64).await;
    }
    store.turn_free("g").await;
    assert!(store.snapshot_count() >= 1);
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.replayed_snapshots, 1);
    assert_eq!(replayed(&[loaded.consumer]), expected);
}

/// Members that came and went leave nothing in the snapshot: the log keeps
/// the last record of each key, and a member's tombstone takes its keys.
#[tokio::test]
async fn a_snapshot_keeps_only_the_records_of_the_group_as_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let mut changes = Vec::new();
    for i in 0..2 * SNAPSHOT_EVERY {
        let member = format!("m{i}");
        changes.push(consumer_join(&member, i as i32 + 1, &[0]));
        changes.push(vec![
            ConsumerGroupRecord::CurrentAssignmentTombstone {
                member_id: member.clone(),
            },
            ConsumerGroupRecord::TargetMemberTombstone {
                member_id: member.clone(),
            },
            ConsumerGroupRecord::MemberTombstone { member_id: member },
        ]);
    }
    changes.push(consumer_join("last", 1_000, &[0]));
    for change in &changes {
        store.write_consumer_records("g", change).await.unwrap();
    }
    store.turn_free("g").await;
    assert!(store.snapshot_count() >= 1);
    let loaded = GroupLogStore::new(dir.path())
        .unwrap()
        .load("g")
        .unwrap()
        .unwrap();
    assert_eq!(loaded.replayed_snapshots, 1);
    // The last member's three keys, the group epoch and the target epoch.
    assert_eq!(loaded.consumer.len(), 5, "{:?}", loaded.consumer);
    let group = replayed(&[loaded.consumer]);
    assert_eq!(group, replayed(&changes));
    assert_eq!(group.unwrap().members().len(), 1);
}

#[tokio::test]
async fn a_torn_consumer_group_change_is_dropped_whole() {
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    let first = consumer_join("m1", 1, &[0, 1]);
    store.write_consumer_records("g", &first).await.unwrap();
    let path = store.log_path("g");
    let before = file_len(&path);
    store
        .write_consumer_records("g", &consumer_join("m2", 2, &[2]))
        .await
        .unwrap();
    store.close("g");
    // kill -9 halfway through the second change's frame.
    let f = fs::OpenOptions::new().write(true).open(&path).unwrap();
    f.set_len(before + (file_len(&path) - before) / 2).unwrap();
    drop(f);
    let loaded = store.load("g").unwrap().unwrap();
    assert!(loaded.damage.is_some());
    // None of the second change: m2 is not half there.
    assert_eq!(replayed(&[loaded.consumer]), replayed(&[first]));
}

#[tokio::test]
async fn the_memory_store_keeps_consumer_groups_as_the_log_does() {
    use crate::group::store::{GroupStore, MemoryStore};
    let store = MemoryStore::new();
    let changes = vec![
        consumer_join("m1", 1, &[0, 1]),
        consumer_join("m2", 2, &[2]),
    ];
    for change in &changes {
        store.write_consumer_records("g", change).await.unwrap();
    }
    assert_eq!(store.stored("g").unwrap().consumer, replayed(&changes));
}

/// An online migration is one frame: after the upgrade the log holds the
/// consumer group and no classic metadata; after the downgrade the classic
/// metadata and no consumer group; both survive a reload.
#[tokio::test]
async fn a_conversion_swaps_the_classic_and_the_consumer_group_in_one_frame() {
    use crate::group::core::classic_bridge::tombstones;
    let dir = tempfile::tempdir().unwrap();
    let store = GroupLogStore::new(dir.path()).unwrap();
    store.write_metadata("g", Some(&metadata(3))).await.unwrap();
    let upgrade = consumer_join("m1", 4, &[0, 1]);
    store.convert_group("g", None, &upgrade).await.unwrap();
    let load = || {
        GroupLogStore::new(dir.path())
            .unwrap()
            .load("g")
            .unwrap()
            .unwrap()
    };
    let loaded = load();
    assert_eq!(loaded.metadata, None, "the classic metadata's tombstone");
    assert_eq!(
        replayed(std::slice::from_ref(&loaded.consumer)),
        replayed(std::slice::from_ref(&upgrade))
    );

    let group = replayed(&[loaded.consumer]).unwrap();
    store
        .convert_group("g", Some(&metadata(4)), &tombstones(&group))
        .await
        .unwrap();
    let loaded = load();
    assert_eq!(loaded.metadata, Some(metadata(4)));
    assert_eq!(loaded.consumer, [], "the consumer group's tombstones");
}

mod takeover;
mod takeover_model;
