//! Replays every input kept under `fuzz/regressions/<target>/` (seeds and
//! inputs the fuzzers found) through the same entry points the fuzz targets
//! call (`kaas_broker::fuzzing`), so a fixed crash stays fixed in plain
//! `cargo test`. Run the fuzzers themselves with `scripts/fuzz`.

use std::path::PathBuf;

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../fuzz/regressions")
        .join(target);
    let mut out: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    out.sort();
    assert!(!out.is_empty(), "no inputs under {}", dir.display());
    out
}

fn replay(target: &str, run: fn(&[u8])) {
    for (name, data) in inputs(target) {
        let r = std::panic::catch_unwind(|| run(&data));
        assert!(r.is_ok(), "fuzz/regressions/{target}/{name} panicked");
    }
}

#[test]
fn framing_inputs() {
    replay("framing", kaas_broker::fuzzing::framing);
    replay("framing", kaas_broker::fuzzing::request);
}

#[test]
fn group_log_inputs() {
    replay("group_log", kaas_broker::fuzzing::group_log);
    replay("group_log", kaas_broker::fuzzing::group_log_valid_crc);
    replay(
        "group_log_valid_crc",
        kaas_broker::fuzzing::group_log_valid_crc,
    );
}

#[test]
fn journal_replay_inputs() {
    replay("journal_replay", kaas_broker::fuzzing::journal_replay);
}

#[test]
fn partition_log_inputs() {
    replay("partition_log", kaas_broker::fuzzing::partition_log);
    replay(
        "partition_log",
        kaas_broker::fuzzing::partition_log_valid_crc,
    );
    replay(
        "partition_log_valid_crc",
        kaas_broker::fuzzing::partition_log_valid_crc,
    );
}

/// The seeds are what they claim to be: the valid ones decode and load in
/// full, the damaged ones are cut where the damage starts.
#[test]
fn seeds_are_valid_inputs() {
    use kaas_broker::api::{decode, Incoming};
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../fuzz/regressions");
    let frame = std::fs::read(dir.join("framing/seed-api-versions-v0")).unwrap();
    assert!(matches!(
        decode(bytes::Bytes::from(frame[4..].to_vec())),
        Ok(Incoming::Request { .. })
    ));

    let tmp = tempfile::tempdir().unwrap();
    let store = kaas_broker::storage::group_log::GroupLogStore::new(tmp.path()).unwrap();
    std::fs::write(
        store.log_path("g"),
        std::fs::read(dir.join("group_log/seed-commits")).unwrap(),
    )
    .unwrap();
    let g = store.load("g").unwrap().unwrap();
    assert_eq!(g.damage, None);
    assert_eq!(
        g.offsets.committed_len(),
        1,
        "commit of t-0, commit and delete of t-1"
    );
    assert_eq!(g.offsets.get("t", 0).map(|o| o.offset), Some(5));

    // The journal seed holds two commits written after that log's end:
    // replay puts them back.
    let replayed = tempfile::tempdir().unwrap();
    let store = kaas_broker::storage::group_log::GroupLogStore::new(replayed.path()).unwrap();
    let log = store.log_path("g");
    std::fs::write(
        &log,
        std::fs::read(dir.join("group_log/seed-commits")).unwrap(),
    )
    .unwrap();
    drop(store);
    let journals = log
        .parent()
        .unwrap()
        .join(kaas_broker::storage::journal::JOURNAL_DIR);
    std::fs::create_dir_all(&journals).unwrap();
    std::fs::write(
        journals.join("seed-0.jnl"),
        kaas_broker::storage::journal::fuzz_file(
            &std::fs::read(dir.join("journal_replay/seed-two-commits")).unwrap(),
        ),
    )
    .unwrap();
    let store = kaas_broker::storage::group_log::GroupLogStore::new(replayed.path()).unwrap();
    let g = store.load("g").unwrap().unwrap();
    assert_eq!(g.damage, None);
    let offsets: Vec<_> = g
        .offsets
        .committed()
        .map(|(t, p, o)| (t, p, o.offset))
        .collect();
    assert_eq!(offsets, vec![("t", 0, 42), ("t", 2, 7)]);

    let seg = tmp.path().join("t-0");
    std::fs::create_dir_all(&seg).unwrap();
    std::fs::write(
        seg.join(format!("{:020}.log", 0)),
        std::fs::read(dir.join("partition_log/seed-two-batches")).unwrap(),
    )
    .unwrap();
    let (log, report) = kaas_broker::storage::log::Log::open(&seg, Default::default()).unwrap();
    assert_eq!(report.truncated_bytes, 0);
    assert_eq!(log.next_offset(), 3);
}
