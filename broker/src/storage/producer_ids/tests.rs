use super::*;

#[test]
fn two_brokers_never_hand_out_the_same_id() {
    let dir = tempfile::tempdir().unwrap();
    let a = ProducerIdAllocator::new(dir.path().to_path_buf(), 0);
    let b = ProducerIdAllocator::new(dir.path().to_path_buf(), 1);
    let mut seen = std::collections::HashSet::new();
    for _ in 0..2500 {
        assert!(seen.insert(a.allocate().unwrap()));
        assert!(seen.insert(b.allocate().unwrap()));
    }
    // A restarted broker continues past every range handed out.
    let c = ProducerIdAllocator::new(dir.path().to_path_buf(), 0);
    let id = c.allocate().unwrap();
    assert!(seen.insert(id));
    assert_eq!(id, BASE + 2 * RANGE);
}

#[test]
fn a_claim_from_an_old_listing_goes_past_the_ranges_claimed_since() {
    // A process that paused between its listing and its claim probes
    // from what it listed: it must still not reuse a range.
    let dir = tempfile::tempdir().unwrap();
    let paused = ProducerIdAllocator::new(dir.path().to_path_buf(), 0);
    for broker in 1..4 {
        ProducerIdAllocator::new(dir.path().to_path_buf(), broker)
            .allocate()
            .unwrap();
    }
    assert_eq!(paused.claim_from(0).unwrap().0, BASE + 3 * RANGE);
    assert_eq!(paused.claim_from(1).unwrap().0, BASE + 4 * RANGE);
}

#[test]
fn ids_are_handed_out_from_memory_until_the_range_is_used_up() {
    let dir = tempfile::tempdir().unwrap();
    let a = ProducerIdAllocator::new(dir.path().to_path_buf(), 0);
    assert_eq!(a.take(), None);
    a.refill(2).unwrap();
    assert_eq!(a.at_hand(), RANGE);
    assert_eq!(a.take(), Some(BASE));
    // Claimed once: one file, holding who claimed it.
    let names: Vec<_> = fs::read_dir(dir.path().join(FOLDER))
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    assert_eq!(names, vec!["0".to_string()]);
    let note = fs::read_to_string(dir.path().join(FOLDER).join("0")).unwrap();
    assert!(note.starts_with("broker 0 process "), "{note}");
    // Used up: the next claim is the next range.
    *a.block.lock() = (BASE + RANGE - 1, BASE + RANGE);
    assert_eq!(a.allocate().unwrap(), BASE + RANGE - 1);
    assert_eq!(a.allocate().unwrap(), BASE + RANGE);
}
