//! Entry points shared by the fuzz targets (`fuzz/`) and their regression
//! replay (`broker/tests/fuzz_regressions.rs`): arbitrary bytes through the
//! request framing and decoding, the group-log reader, the replay of
//! commit journals and the partition-log recovery. Each panics only on a
//! bug: a crash, or a broken invariant checked here.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;

use crate::storage::group_log::GroupLogStore;
use crate::storage::journal;
use crate::storage::log::{Log, LogConfig};

/// The largest frame the framing target accepts (small, so that length
/// fields near it are reachable).
pub const FUZZ_MAX_FRAME: usize = 1 << 16;

/// Bytes as they arrive on a connection: frames read with the
/// [`FrameReader`](kaas_client::frame::FrameReader) the broker's
/// connections use, each decoded as a request (header and body), until the
/// stream ends or a frame is refused (the broker then closes the connection).
pub fn framing(data: &[u8]) {
    let mut reader = kaas_client::frame::FrameReader::new(data, FUZZ_MAX_FRAME);
    loop {
        let frame = futures::executor::block_on(reader.next());
        match frame {
            Ok(Some(frame)) => {
                assert!(frame.len() <= FUZZ_MAX_FRAME, "frame over the maximum");
                let _ = crate::api::decode(Bytes::from(frame));
            }
            Ok(None) | Err(_) => return,
        }
    }
}

/// One request body, decoded directly (no framing).
pub fn request(data: &[u8]) {
    let _ = crate::api::decode(Bytes::copy_from_slice(data));
}

/// A scratch folder per process and call, removed afterwards.
struct Scratch(PathBuf);

impl Scratch {
    fn new(what: &str) -> Scratch {
        static N: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "kaas-fuzz-{what}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).expect("scratch folder");
        Scratch(dir)
    }

    fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Arbitrary bytes as the log file of group "g": the load must not panic,
/// and recovery must leave a log that loads again to the same state with no
/// damage (what was cut is gone for good, what was kept stays).
pub fn group_log(data: &[u8]) {
    let scratch = Scratch::new("group-log");
    let store = GroupLogStore::new(scratch.path()).expect("store");
    let path = store.log_path("g");
    std::fs::write(&path, data).expect("write the log");
    let first = match store.load("g") {
        Ok(Some(first)) => first,
        Ok(None) | Err(_) => return,
    };
    store.close("g");
    let again = GroupLogStore::new(scratch.path()).expect("store");
    let second = again
        .load("g")
        .expect("a recovered log loads again")
        .expect("a recovered log is still there");
    assert_eq!(second.damage, None, "recovery left damage behind");
    assert_eq!(second.offsets, first.offsets, "offsets changed on reload");
    assert_eq!(
        second.metadata, first.metadata,
        "metadata changed on reload"
    );
}

/// The group log the journal target replays into: commits of t-0 and
/// t-1 and a delete of t-1 (a seed of the group-log target).
const JOURNAL_TARGET_LOG: &[u8] = include_bytes!("../../fuzz/regressions/group_log/seed-commits");

/// Arbitrary bytes as the entries of a stopped broker's commit journal
/// (every whole entry given a valid checksum, [`journal::fuzz_file`]), next
/// to a valid log of group "g": opening the store replays them. Replay
/// must not panic; when it succeeds the journal is gone, and every group
/// log loads, then loads again to the same state with no damage.
pub fn journal_replay(data: &[u8]) {
    let scratch = Scratch::new("journal");
    let logs = {
        let store = GroupLogStore::new(scratch.path()).expect("store");
        let path = store.log_path("g");
        std::fs::write(&path, JOURNAL_TARGET_LOG).expect("write the log");
        path.parent().expect("the logs' folder").to_path_buf()
    };
    let journals = logs.join(journal::JOURNAL_DIR);
    std::fs::create_dir_all(&journals).expect("journal folder");
    let orphan = journals.join("fuzz-0.jnl");
    std::fs::write(&orphan, journal::fuzz_file(data)).expect("write the journal");
    let Ok(store) = GroupLogStore::new(scratch.path()) else {
        return;
    };
    assert!(!orphan.exists(), "a replayed journal was kept");
    let groups = store.list_groups().expect("list the logs");
    let first: Vec<_> = groups
        .iter()
        .map(|g| (g, store.load(g).ok().flatten()))
        .collect();
    drop(store);
    let again = GroupLogStore::new(scratch.path()).expect("store");
    for (g, loaded) in first {
        let Some(loaded) = loaded else { continue };
        let second = again
            .load(g)
            .expect("a replayed log loads again")
            .expect("a replayed log is still there");
        assert_eq!(second.damage, None, "recovery left damage behind in {g}");
        assert_eq!(
            second.offsets, loaded.offsets,
            "offsets of {g} changed on reload"
        );
        assert_eq!(
            second.metadata, loaded.metadata,
            "metadata of {g} changed on reload"
        );
    }
}

/// Arbitrary bytes as the only segment of a partition/// Arbitrary bytes as the only segment of a partition: opening must not
/// panic, every batch kept must be readable, and a second open finds
/// nothing more to cut.
pub fn partition_log(data: &[u8]) {
    let scratch = Scratch::new("partition-log");
    let dir = scratch.path().join("t-0");
    std::fs::create_dir_all(&dir).expect("partition folder");
    std::fs::write(dir.join(format!("{:020}.log", 0)), data).expect("write the segment");
    let config = LogConfig::default();
    let (log, _) = match Log::open(&dir, config) {
        Ok(opened) => opened,
        Err(_) => return,
    };
    let next = log.next_offset();
    let start = log.log_start_offset();
    assert!(start <= next, "log start {start} after next offset {next}");
    let _ = log.read(start, next, 1 << 20);
    drop(log);
    let (log, report) = Log::open(&dir, config).expect("a recovered log opens again");
    assert_eq!(
        report.truncated_bytes, 0,
        "second recovery cut more: {report:?}"
    );
    assert_eq!(log.next_offset(), next, "next offset changed on reopen");
}

/// Rewrites the checksum of every whole `[u32 len][u32 crc32c][payload]`
/// frame, so that fuzzed group-log records get past the checksum and reach
/// the record decoding and replay. A torn last frame is left as it is.
pub fn fix_group_log_checksums(data: &mut [u8]) {
    let mut pos = 0;
    while pos + 8 <= data.len() {
        let len = u32::from_be_bytes(data[pos..pos + 4].try_into().expect("4")) as usize;
        let Some(end) = (pos + 8).checked_add(len).filter(|&e| e <= data.len()) else {
            return;
        };
        let crc = crc32c::crc32c(&data[pos + 8..end]);
        data[pos + 4..pos + 8].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

/// Rewrites the CRC of every whole record batch (Kafka v2 layout: base
/// offset, length, leader epoch, magic, crc32c over the rest), so fuzzed
/// batches get past the checksum and reach the header and record checks.
pub fn fix_batch_checksums(data: &mut [u8]) {
    let mut pos = 0;
    while pos + 21 <= data.len() {
        let len = i32::from_be_bytes(data[pos + 8..pos + 12].try_into().expect("4"));
        let Some(end) = usize::try_from(len)
            .ok()
            .and_then(|l| (pos + 12).checked_add(l))
            .filter(|&e| e <= data.len() && e >= pos + 21)
        else {
            return;
        };
        let crc = crc32c::crc32c(&data[pos + 21..end]);
        data[pos + 17..pos + 21].copy_from_slice(&crc.to_be_bytes());
        pos = end;
    }
}

/// [`group_log`] with valid checksums (see [`fix_group_log_checksums`]).
pub fn group_log_valid_crc(data: &[u8]) {
    let mut data = data.to_vec();
    fix_group_log_checksums(&mut data);
    group_log(&data);
}

/// [`partition_log`] with valid batch CRCs (see [`fix_batch_checksums`]).
pub fn partition_log_valid_crc(data: &[u8]) {
    let mut data = data.to_vec();
    fix_batch_checksums(&mut data);
    partition_log(&data);
}
