use super::*;
use proptest::prelude::*;

#[test]
fn readable_names_stay_readable() {
    assert_eq!(safe_file_name(b"orders"), "orders");
    assert_eq!(safe_file_name(b"my-topic.v2_x"), "my-topic.v2_x");
}

#[test]
fn dangerous_names_are_escaped() {
    assert_eq!(safe_file_name(b".."), "%2E.");
    assert_eq!(safe_file_name(b"a/b"), "a%2Fb");
    assert_eq!(safe_file_name(b"__cluster"), "%5F_cluster");
    assert_eq!(safe_file_name(b"\0"), "%00");
    assert_eq!(safe_file_name(b""), "%");
}

#[test]
fn long_names_are_hashed() {
    let long = vec![b'/'; 255];
    let name = safe_file_name(&long);
    assert!(name.starts_with('~'));
    assert_eq!(name.len(), 65);
}

proptest! {
    #[test]
    fn names_are_safe_and_unique(a in proptest::collection::vec(any::<u8>(), 0..300),
                                 b in proptest::collection::vec(any::<u8>(), 0..300)) {
        let na = safe_file_name(&a);
        prop_assert!(!na.is_empty() && na.len() <= 255);
        prop_assert!(!na.contains('/') && !na.contains('\0'));
        prop_assert!(na != "." && na != ".." && !na.starts_with('.') && !na.starts_with('_'));
        if a != b {
            prop_assert_ne!(na, safe_file_name(&b));
        }
    }
}
