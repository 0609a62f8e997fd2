//! Safe, unique file names for topic names and group ids.
//!
//! An id that comes off the wire is never used raw as a path: `/`, `..`, NUL
//! or a name longer than the file system allows would let a client escape
//! its folder or collide with another id. Short ids are escaped (readable,
//! reversible); long ones become a SHA-256 digest, which cannot collide with
//! an escaped name because `~` is always escaped.

use sha2::{Digest, Sha256};

/// Longest escaped name we use as is; longer ones are hashed. Well below
/// NAME_MAX (255) so that suffixes like `.tmp` still fit.
const MAX_ESCAPED_LEN: usize = 200;

/// Maps any id to a file name that stays inside its folder and is unique.
pub fn safe_file_name(id: &[u8]) -> String {
    let mut out = String::with_capacity(id.len());
    for (i, &b) in id.iter().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'-' || (i > 0 && (b == b'.' || b == b'_'));
        if keep {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
        if out.len() > MAX_ESCAPED_LEN {
            break;
        }
    }
    if out.is_empty() {
        // The empty id is a legal group id for some old clients.
        return "%".to_string();
    }
    if out.len() > MAX_ESCAPED_LEN {
        let digest = Sha256::digest(id);
        let mut hashed = String::from("~");
        for b in digest {
            hashed.push_str(&format!("{b:02x}"));
        }
        return hashed;
    }
    out
}

#[cfg(test)]
mod tests {
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
}
