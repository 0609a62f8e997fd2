//! A small document on the shared volume that every broker follows (the
//! ACLs, the SCRAM credentials): one file, `__cluster/<name>`, its first
//! line `kaas-<name> <version>` and then the value as JSON. A change runs
//! under an exclusive lock on `__cluster/<name>.lock`: read, change, write
//! the whole file with the next version (tmp file, fsync, rename, folder
//! fsync). Brokers read the first line to see whether they must load the
//! rest; nothing is cached across reads, so a change another broker wrote
//! is seen at the next look.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::marker::PhantomData;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde::Serialize;

use super::fs::{write_atomic, FileLock};

/// A value at a version (0: never written; the value is the default).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Versioned<T> {
    pub version: u64,
    pub value: T,
}

#[derive(Debug)]
pub struct SharedDoc<T> {
    path: PathBuf,
    lock: PathBuf,
    magic: String,
    _value: PhantomData<fn() -> T>,
}

fn invalid(path: &Path, what: impl std::fmt::Display) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!("{}: {what}", path.display()),
    )
}

impl<T: Serialize + DeserializeOwned + Default + PartialEq + Clone> SharedDoc<T> {
    pub fn new(cluster_dir: &Path, name: &str) -> SharedDoc<T> {
        SharedDoc {
            path: cluster_dir.join(name),
            lock: cluster_dir.join(format!("{name}.lock")),
            magic: format!("kaas-{name}"),
            _value: PhantomData,
        }
    }

    /// The version on the volume, from the first line only.
    pub fn version(&self) -> io::Result<u64> {
        match File::open(&self.path) {
            Ok(f) => {
                let mut first = String::new();
                BufReader::new(f).read_line(&mut first)?;
                self.parse_header(&first)
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(0),
            Err(e) => Err(e),
        }
    }

    fn parse_header(&self, line: &str) -> io::Result<u64> {
        match line.trim_end().split_once(' ') {
            Some((magic, v)) if magic == self.magic => v
                .parse()
                .map_err(|_| invalid(&self.path, format!("bad version {v:?}"))),
            _ => Err(invalid(&self.path, format!("not a {} file", self.magic))),
        }
    }

    /// The value and its version.
    pub fn load(&self) -> io::Result<Versioned<T>> {
        let f = match File::open(&self.path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Versioned::default()),
            Err(e) => return Err(e),
        };
        let mut reader = BufReader::new(f);
        let mut first = String::new();
        reader.read_line(&mut first)?;
        let version = self.parse_header(&first)?;
        let mut body = Vec::new();
        reader.read_to_end(&mut body)?;
        let value = serde_json::from_slice(&body).map_err(|e| invalid(&self.path, e))?;
        Ok(Versioned { version, value })
    }

    /// Changes the value under the cluster-wide lock: `change` edits the
    /// current value, and what it left is written as the next version when
    /// it differs. Blocking I/O.
    pub fn update<R>(&self, change: impl FnOnce(&mut T) -> R) -> io::Result<(R, Versioned<T>)> {
        let _lock = FileLock::acquire_path(&self.lock)?;
        let current = self.load()?;
        let mut value = current.value.clone();
        let out = change(&mut value);
        if value == current.value {
            return Ok((out, current));
        }
        let next = Versioned {
            version: current.version + 1,
            value,
        };
        let mut bytes = format!("{} {}\n", self.magic, next.version).into_bytes();
        serde_json::to_writer(&mut bytes, &next.value).map_err(|e| invalid(&self.path, e))?;
        write_atomic(&self.path, &bytes)?;
        Ok((out, next))
    }
}

#[cfg(test)]
mod tests {
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
}
