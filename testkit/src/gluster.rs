//! The two GlusterFS mounts of one volume that `scripts/glusterfs-testenv
//! up` makes (`scripts/test` exports them): the tests and benchmarks of
//! brokers on two nodes read them from here.

use std::path::PathBuf;

/// Mount A and mount B of one volume, and the pid of mount A's FUSE
/// client (stopped to stall the mount), when known.
#[derive(Debug, Clone)]
pub struct Mounts {
    pub a: PathBuf,
    pub b: PathBuf,
    pub a_client: Option<u32>,
}

impl Mounts {
    /// From `KAAS_GLUSTER_A`, `KAAS_GLUSTER_B` and `KAAS_GLUSTER_A_PID`;
    /// `None` without the first two.
    pub fn from_env() -> Option<Mounts> {
        let var = |k: &str| std::env::var(k).ok().filter(|v| !v.is_empty());
        Some(Mounts {
            a: var("KAAS_GLUSTER_A")?.into(),
            b: var("KAAS_GLUSTER_B")?.into(),
            a_client: var("KAAS_GLUSTER_A_PID").and_then(|p| p.parse().ok()),
        })
    }

    /// [`Mounts::from_env`] for a test: `None` (said on stderr) without
    /// the mounts, a failure instead when `KAAS_GLUSTER_REQUIRED` is set.
    pub fn for_test() -> Option<Mounts> {
        let mounts = Mounts::from_env();
        if mounts.is_none() {
            assert!(
                std::env::var_os("KAAS_GLUSTER_REQUIRED").is_none(),
                "KAAS_GLUSTER_REQUIRED is set but the GlusterFS mounts are not: \
                 eval \"$(scripts/glusterfs-testenv up)\""
            );
            eprintln!("skipped: no GlusterFS mounts (scripts/glusterfs-testenv up)");
        }
        mounts
    }
}
