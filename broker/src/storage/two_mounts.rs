//! One folder seen through two mounts, for tests of two broker processes
//! on two nodes: the GlusterFS mounts `scripts/glusterfs-testenv` makes
//! (`KAAS_GLUSTER_A`, `KAAS_GLUSTER_B`, which `scripts/test` exports), else
//! one local temporary folder seen twice.

use std::path::PathBuf;

/// A fresh folder, as node A and node B see it; removed when dropped.
pub struct TwoMounts {
    pub a: PathBuf,
    pub b: PathBuf,
    _local: Option<tempfile::TempDir>,
}

impl Default for TwoMounts {
    fn default() -> TwoMounts {
        TwoMounts::new()
    }
}

impl TwoMounts {
    pub fn new() -> TwoMounts {
        match kaas_testkit::gluster::Mounts::from_env() {
            Some(m) => {
                let name = format!("unit-{}", uuid::Uuid::new_v4().simple());
                let (a, b) = (m.a.join(&name), m.b.join(&name));
                std::fs::create_dir_all(&a).expect("a folder on mount A");
                TwoMounts { a, b, _local: None }
            }
            None => {
                let dir = tempfile::tempdir().expect("a temporary folder");
                let path = dir.path().to_path_buf();
                TwoMounts {
                    a: path.clone(),
                    b: path,
                    _local: Some(dir),
                }
            }
        }
    }
}

impl Drop for TwoMounts {
    fn drop(&mut self) {
        if self._local.is_none() {
            let _ = std::fs::remove_dir_all(&self.b);
        }
    }
}
