use super::*;

#[test]
fn a_fence_is_seen_by_the_next_check_and_every_heartbeat() {
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 3).unwrap();
    me.check_fence().unwrap();
    me.heartbeat().unwrap();
    assert_eq!(
        read_fence(dir.path(), 3, me.id(), me.fresh_read()).unwrap(),
        None
    );

    let by = Fence {
        by_broker: 1,
        at_version: 42,
    };
    fence(dir.path(), 3, me.id(), by).unwrap();
    assert!(me.check_fence().is_err());
    assert_eq!(me.fenced(), Some(by));
    assert!(me.heartbeat().is_err());
    assert_eq!(
        read_fence(dir.path(), 3, me.id(), me.fresh_read()).unwrap(),
        Some(by)
    );
}

#[test]
fn a_heartbeat_does_not_clear_a_fence_written_before_it() {
    let dir = tempfile::tempdir().unwrap();
    let me = Incarnation::register(dir.path(), 0).unwrap();
    let by = Fence {
        by_broker: 2,
        at_version: 7,
    };
    fence(dir.path(), 0, me.id(), by).unwrap();
    // The owner writes only its own block.
    let _ = me.heartbeat();
    assert_eq!(
        read_fence(dir.path(), 0, me.id(), FreshRead::Reopen).unwrap(),
        Some(by)
    );
}

#[test]
fn a_partly_written_fence_counts_as_a_fence() {
    let mut block = vec![0u8; BLOCK];
    block[..4].copy_from_slice(b"KAAS");
    assert_eq!(
        Fence::decode(&block),
        Some(Fence {
            by_broker: -1,
            at_version: 0
        })
    );
    assert_eq!(Fence::decode(&vec![0u8; BLOCK]), None);
    let f = Fence {
        by_broker: 9,
        at_version: u64::MAX,
    };
    assert_eq!(Fence::decode(&f.encode()), Some(f));
}

#[test]
fn a_clean_end_removes_the_file_and_a_fenced_one_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let clean = Incarnation::register(dir.path(), 0).unwrap();
    let clean_path = clean.file_path().to_path_buf();
    drop(clean);
    assert!(!clean_path.exists());
    // Fencing what ended cleanly is a no-op.
    fence(
        dir.path(),
        0,
        "gone",
        Fence {
            by_broker: 1,
            at_version: 1,
        },
    )
    .unwrap();

    let fenced = Incarnation::register(dir.path(), 0).unwrap();
    let kept = fenced.file_path().to_path_buf();
    fence(
        dir.path(),
        0,
        fenced.id(),
        Fence {
            by_broker: 1,
            at_version: 1,
        },
    )
    .unwrap();
    let _ = fenced.heartbeat();
    drop(fenced);
    assert!(kept.exists());
}
