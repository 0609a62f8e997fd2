//! The assignment document as a file: `<data>/__cluster/assignment.json`,
//! written tmp + fsync + rename so a reader never sees half a document.

use std::fs;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use kaas_shared::Assignment;

use crate::storage::log::sync_dir;

pub fn assignment_path(data_dir: &Path) -> PathBuf {
    data_dir.join("__cluster").join("assignment.json")
}

pub fn write(path: &Path, assignment: &Assignment) -> io::Result<()> {
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir)?;
    let tmp = dir.join(format!(".assignment.json.tmp-{}", std::process::id()));
    let body = serde_json::to_vec_pretty(assignment).map_err(io::Error::other)?;
    {
        let mut f = fs::File::create(&tmp)?;
        f.write_all(&body)?;
        f.sync_all()?;
    }
    fs::rename(&tmp, path)?;
    sync_dir(dir)
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
