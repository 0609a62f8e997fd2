use super::*;

fn entry(g: &str, pos: u64) -> JournalEntry {
    JournalEntry {
        group_id: g.to_string(),
        log_id: 7,
        position: pos,
        prev_crc: 9,
        bytes: vec![pos as u8; 5],
    }
}

#[test]
fn entries_larger_than_a_read_piece_and_across_pieces_read_whole() {
    let mut data = header(1).to_vec();
    let mut written = Vec::new();
    for i in 0..40u64 {
        let mut e = entry(&format!("g{i}"), i);
        // Every fifth entry bigger than a piece, the others small.
        e.bytes = vec![i as u8; if i % 5 == 0 { 100_000 } else { 3_000 }];
        encode_entry(&mut data, 1, &e.as_ref()).unwrap();
        written.push(e);
    }
    data.extend_from_slice(&[0u8; 10_000]);
    let (generation, entries) = read(&data[..]).unwrap();
    assert_eq!(generation, 1);
    assert_eq!(entries, written);
    // A length pointing past the end stops the file, without reading
    // more than there is.
    let mut cut = data[..data.len() - 10_000].to_vec();
    cut.extend_from_slice(&u32::MAX.to_be_bytes());
    cut.extend_from_slice(&[1u8; 20]);
    assert_eq!(read(&cut[..]).unwrap().1, written);
}

#[test]
fn entries_round_trip_and_stop_at_another_generation() {
    let mut data = header(3).to_vec();
    encode_entry(&mut data, 3, &entry("a", 1).as_ref()).unwrap();
    encode_entry(&mut data, 3, &entry("b", 2).as_ref()).unwrap();
    // Left from the file's previous use: ends it.
    encode_entry(&mut data, 2, &entry("c", 3).as_ref()).unwrap();
    encode_entry(&mut data, 3, &entry("d", 4).as_ref()).unwrap();
    let (generation, entries) = parse(&data);
    assert_eq!(generation, 3);
    assert_eq!(entries, vec![entry("a", 1), entry("b", 2)]);
    // A flipped bit ends it too.
    let mut bad = data.clone();
    // A byte of the first entry's payload (after length, crc, generation).
    let last = HEADER_LEN as usize + 16 + 4;
    bad[last] ^= 1;
    assert!(parse(&bad).1.is_empty());
    // A zero-filled tail is the end.
    let mut zeros = header(3).to_vec();
    zeros.extend_from_slice(&[0u8; 64]);
    assert!(parse(&zeros).1.is_empty());
    assert_eq!(parse(b"not a journal").1, vec![]);
}

#[test]
fn stamping_a_round_moves_stale_entries_to_the_new_generation() {
    // Queued while the last round switched files: old generation 2,
    // then one already of 3.
    let mut round = Vec::new();
    encode_entry(&mut round, 2, &entry("a", 1).as_ref()).unwrap();
    encode_entry(&mut round, 2, &entry("b", 2).as_ref()).unwrap();
    encode_entry(&mut round, 3, &entry("c", 3).as_ref()).unwrap();
    let mut data = header(3).to_vec();
    data.extend_from_slice(&round);
    assert_eq!(parse(&data).1, vec![], "a stale generation ends the file");
    stamp_generation(&mut round, 3, false);
    let mut data = header(3).to_vec();
    data.extend_from_slice(&round);
    assert_eq!(
        parse(&data).1,
        vec![entry("a", 1), entry("b", 2), entry("c", 3)]
    );
}

proptest::proptest! {
    /// Whatever is on disk, reading a journal returns entries or stops:
    /// never a panic, never an entry that fails its checksum.
    #[test]
    fn any_bytes_parse_without_panic(tail in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..600), keep in 0usize..200) {
        let mut data = header(5).to_vec();
        encode_entry(&mut data, 5, &entry("g", 1).as_ref()).unwrap();
        data.truncate(HEADER_LEN as usize + keep.min(data.len() - HEADER_LEN as usize));
        data.extend_from_slice(&tail);
        let (_, entries) = parse(&data);
        // Every entry read is one that was written, checksum and all.
        for e in entries {
            let mut written = Vec::new();
            encode_entry(&mut written, 5, &e.as_ref()).unwrap();
            proptest::prop_assert!(data.windows(written.len()).any(|w| w == written));
        }
        let _ = parse(&tail);
    }
}

#[tokio::test]
async fn appends_are_durable_in_order_across_file_switches() {
    let dir = tempfile::tempdir().unwrap();
    // Small files: a few rounds each.
    let journal = Journal::new(dir.path(), "t", 4096).unwrap();
    let mut written = Vec::new();
    for i in 0..200u64 {
        let e = entry("g", i);
        written.push(e.clone());
        journal.append([e.as_ref()]).await.unwrap();
    }
    assert!(journal.rounds() >= 200);
    drop(journal);
    let held = ReplayLock::acquire(dir.path()).unwrap().unwrap();
    let orphans = orphaned(dir.path(), &held).unwrap();
    assert_eq!(orphans.len(), 2, "both files of the journal are orphans");
    // The newer file holds the tail of what was written, in order.
    let newest = &orphans[1].entries;
    assert!(!newest.is_empty());
    assert_eq!(newest[..], written[written.len() - newest.len()..]);
    assert!(orphans[0].generation < orphans[1].generation);
}

#[tokio::test]
async fn concurrent_appends_share_rounds_and_all_complete() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Arc::new(Journal::new(dir.path(), "t", DEFAULT_CAPACITY).unwrap());
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..32u64 {
        let journal = journal.clone();
        tasks.spawn(async move {
            for i in 0..50u64 {
                journal
                    .append([entry(&format!("g{c}"), i).as_ref()])
                    .await
                    .unwrap();
            }
        });
    }
    while let Some(r) = tasks.join_next().await {
        r.unwrap();
    }
    let rounds = journal.rounds();
    assert!(
        rounds < 32 * 50,
        "{rounds} rounds for 1600 appends: no sharing"
    );
    drop(tasks);
    let journal = Arc::into_inner(journal).expect("tasks are done");
    drop(journal);
    let held = ReplayLock::acquire(dir.path()).unwrap().unwrap();
    let written: usize = orphaned(dir.path(), &held)
        .unwrap()
        .iter()
        .map(|o| o.entries.len())
        .sum();
    assert_eq!(written, 32 * 50, "every acknowledged entry is in the files");
}

#[test]
fn direct_writes_keep_earlier_bytes_and_pad_with_zeros() {
    let dir = tempfile::tempdir().unwrap();
    let paths = [dir.path().join("a"), dir.path().join("b")];
    for p in &paths {
        fs::write(p, vec![0xee; 4 * BLOCK]).unwrap();
    }
    let Some(mut w) = DirectWriter::open([&paths[0], &paths[1]]).unwrap() else {
        eprintln!(
            "O_DIRECT is not supported under {}; skipped",
            dir.path().display()
        );
        return;
    };
    w.restart(0, b"head").unwrap();
    let mut expected = b"head".to_vec();
    // Writes that end inside a block, fill one exactly, and cross two.
    for (i, len) in [100usize, 3992, 1, 5000, 2999].into_iter().enumerate() {
        let data = vec![i as u8 + 1; len];
        w.write(0, expected.len() as u64, &data).unwrap();
        expected.extend_from_slice(&data);
    }
    let file = fs::read(&paths[0]).unwrap();
    assert_eq!(file[..expected.len()], expected[..]);
    let padded = expected.len().div_ceil(BLOCK) * BLOCK;
    assert!(
        file[expected.len()..padded].iter().all(|&b| b == 0),
        "the last block is padded with zeros"
    );
    assert!(
        file[padded..].iter().all(|&b| b == 0xee),
        "nothing past the last block is written"
    );
    assert!(
        fs::read(&paths[1]).unwrap().iter().all(|&b| b == 0xee),
        "the other file is untouched"
    );
}

#[tokio::test]
async fn a_live_journal_is_not_an_orphan() {
    let dir = tempfile::tempdir().unwrap();
    let journal = Journal::new(dir.path(), "live", 4096).unwrap();
    journal.append([entry("g", 1).as_ref()]).await.unwrap();
    let held = ReplayLock::acquire(dir.path()).unwrap().unwrap();
    assert!(orphaned(dir.path(), &held).unwrap().is_empty());
}
