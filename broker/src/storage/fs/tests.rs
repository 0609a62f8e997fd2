use super::*;

#[test]
fn write_atomic_replaces_whole_and_leaves_no_tmp() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("counter");
    write_atomic(&path, b"1000").unwrap();
    write_atomic(&path, b"2000").unwrap();
    assert_eq!(fs::read(&path).unwrap(), b"2000");
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("counter")]);
}

#[test]
fn read_at_reads_the_range_and_refuses_one_past_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("segment");
    let bytes: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    fs::write(&path, &bytes).unwrap();
    let file = File::open(&path).unwrap();
    assert_eq!(read_at(&file, 0, 0).unwrap(), b"");
    assert_eq!(
        read_at(&file, 1_000, 150_000).unwrap(),
        &bytes[1_000..151_000]
    );
    assert_eq!(read_at(&file, 199_990, 10).unwrap(), &bytes[199_990..]);
    let past = read_at(&file, 199_990, 11).unwrap_err();
    assert_eq!(past.kind(), io::ErrorKind::UnexpectedEof);
}

#[test]
fn create_atomic_keeps_the_first_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cluster_id");
    assert!(create_atomic(&path, b"first").unwrap());
    assert!(!create_atomic(&path, b"second").unwrap());
    assert_eq!(fs::read(&path).unwrap(), b"first");
    assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
}

#[test]
fn a_file_lock_excludes_another_holder_until_dropped() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("x.lock");
    let held = FileLock::acquire_path(&path).unwrap();
    let other = OpenOptions::new().write(true).open(&path).unwrap();
    assert!(matches!(
        other.try_lock(),
        Err(std::fs::TryLockError::WouldBlock)
    ));
    drop(held);
    other.try_lock().unwrap();
}
