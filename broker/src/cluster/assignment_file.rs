//! The assignment document as a file: `<data>/__cluster/assignment.json`,
//! replaced atomically so a reader never sees half a document.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use kaas_shared::Assignment;

use crate::storage::fs::write_atomic;

pub fn assignment_path(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("assignment.json")
}

pub fn write(path: &Path, assignment: &Assignment) -> io::Result<()> {
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir)?;
    }
    let body = serde_json::to_vec_pretty(assignment).map_err(io::Error::other)?;
    write_atomic(path, &body)
}

/// Reads the document; `Ok(None)` when there is none yet.
pub fn read(path: &Path) -> io::Result<Option<Assignment>> {
    match fs::read(path) {
        Ok(raw) => serde_json::from_slice(&raw)
            .map(Some)
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}
