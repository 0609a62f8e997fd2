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
mod tests;
