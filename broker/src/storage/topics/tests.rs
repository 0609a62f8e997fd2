use super::*;

#[test]
fn create_list_delete() {
    let dir = tempfile::tempdir().unwrap();
    let reg = TopicRegistry::new(dir.path().to_path_buf());
    let t = reg
        .create_blocking("orders", 6, BTreeMap::new(), false)
        .unwrap();
    assert_eq!(reg.get("orders").unwrap().id, t.id);
    assert_eq!(reg.get_by_id(t.id).unwrap().name, "orders");
    assert!(matches!(
        reg.create_blocking("orders", 1, BTreeMap::new(), false),
        Err(TopicError::AlreadyExists(_))
    ));
    // A second registry (another broker) sees the same topic.
    let other = TopicRegistry::new(dir.path().to_path_buf());
    assert_eq!(other.all().len(), 1);
    reg.delete_blocking("orders").unwrap();
    assert!(reg.get("orders").is_none());
    assert!(other.get("orders").is_none(), "the other broker sees it go");
    assert!(matches!(
        reg.delete_blocking("orders"),
        Err(TopicError::Unknown(_))
    ));
}

#[test]
fn a_deletion_is_seen_even_when_the_folder_mtime_does_not_move() {
    // Two changes in one clock tick, or an NFS attribute cache, leave
    // the folder's mtime where another broker last saw it.
    let dir = tempfile::tempdir().unwrap();
    let reg = TopicRegistry::new(dir.path().to_path_buf());
    reg.create_blocking("a", 1, BTreeMap::new(), false).unwrap();
    let other = TopicRegistry::new(dir.path().to_path_buf());
    assert!(other.get("a").is_some());
    let seen = fs::metadata(dir.path()).unwrap().modified().unwrap();
    reg.delete_blocking("a").unwrap();
    fs::File::open(dir.path())
        .unwrap()
        .set_modified(seen)
        .unwrap();
    assert!(other.get("a").is_none());
    assert!(other.all().is_empty());
}

#[test]
fn bad_names_are_refused() {
    for bad in ["", ".", "..", "a/b", "a\0b", "ü", &"x".repeat(250)] {
        assert!(
            matches!(validate_topic_name(bad), Err(TopicError::InvalidName(_))),
            "{bad:?}"
        );
    }
    validate_topic_name("__consumer_offsets").unwrap();
}
