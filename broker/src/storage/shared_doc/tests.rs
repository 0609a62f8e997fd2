use std::collections::BTreeSet;

use super::*;
use crate::auth::acl::{AclBinding, PatternType, Permission};
use crate::auth::{Operation, ResourceType};

type AclFile = SharedDoc<BTreeSet<AclBinding>>;

fn acl(name: &str) -> AclBinding {
    AclBinding {
        resource_type: ResourceType::Topic,
        name: name.into(),
        pattern: PatternType::Literal,
        principal: "User:alice".into(),
        host: "*".into(),
        operation: Operation::Read,
        permission: Permission::Allow,
    }
}

#[test]
fn changes_are_versioned_and_seen_by_a_second_reader() {
    let dir = tempfile::tempdir().unwrap();
    let writer = AclFile::new(dir.path(), "acls");
    let reader = AclFile::new(dir.path(), "acls");
    assert_eq!(reader.version().unwrap(), 0);
    assert_eq!(reader.load().unwrap(), Versioned::default());
    let ((), s) = writer
        .update(|a| {
            a.insert(acl("t1"));
            a.insert(acl("t2"));
        })
        .unwrap();
    assert_eq!(s.version, 1);
    assert_eq!(reader.version().unwrap(), 1);
    assert_eq!(reader.load().unwrap(), s);
    // No change, no new version.
    let ((), s) = writer
        .update(|a| {
            a.insert(acl("t1"));
        })
        .unwrap();
    assert_eq!(s.version, 1);
    let (removed, s) = writer.update(|a| a.remove(&acl("t1"))).unwrap();
    assert!(removed);
    assert_eq!(s.version, 2);
    assert_eq!(reader.load().unwrap().value, [acl("t2")].into());
}

#[test]
fn a_damaged_file_is_an_error_that_names_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("acls"), "kaas-acls 3\n[{\"oops\"").unwrap();
    let f = AclFile::new(dir.path(), "acls");
    assert_eq!(f.version().unwrap(), 3);
    let e = f.load().unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::InvalidData);
    assert!(e.to_string().contains("acls"), "{e}");
    // A change refuses to write over it.
    assert!(f.update(|a| a.insert(acl("t"))).is_err());
    std::fs::write(dir.path().join("acls"), "something else\n[]").unwrap();
    assert_eq!(f.version().unwrap_err().kind(), io::ErrorKind::InvalidData);
}
