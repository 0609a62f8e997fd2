use super::*;

// Apache's OffsetMapTest.testBasicValidation / testClear, by key.
#[test]
fn test_basic_validation() {
    let mut map = OffsetMap::new(5_000);
    for i in 0..5_000i64 {
        assert!(!map.is_full());
        map.put(i.to_string().as_bytes(), i);
    }
    assert!(map.is_full());
    for i in 0..5_000i64 {
        assert_eq!(map.get(i.to_string().as_bytes()), Some(i));
    }
    assert_eq!(map.get(b"absent"), None);
    // A known key is updated in place.
    map.put(b"17", 9_000);
    assert_eq!(
        (map.get(b"17"), map.entries.len(), map.latest_offset()),
        (Some(9_000), 5_000, 9_000)
    );
}

#[test]
fn capacity_follows_the_buffer_and_the_load_factor() {
    assert_eq!(OffsetMap::capacity_for(24 * 1_000, 0.9), 900);
    assert_eq!(OffsetMap::new(0).capacity, 1);
}
