//! The cluster under test: `kaas_testkit::ProcessCluster`, the same
//! processes and command lines as the broker's kill -9 tests, plus `--http`
//! so each broker's `/debug/groups` can be read.

use std::path::{Path, PathBuf};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};

pub use kaas_testkit::gluster::Mounts;
use kaas_testkit::ClusterOptions;
pub use kaas_testkit::ProcessCluster as Cluster;

/// The data folder of a run on two mounts of one volume: one folder of the
/// volume, named after the working folder, seen through each mount.
pub struct OnMounts {
    through_a: PathBuf,
    through_b: PathBuf,
}

impl OnMounts {
    pub fn new(m: &Mounts, dir: &Path) -> OnMounts {
        let run = dir
            .file_name()
            .map_or_else(|| "kaas-soak".into(), |n| n.to_string_lossy().into_owned());
        OnMounts {
            through_a: m.a.join(&run),
            through_b: m.b.join(&run),
        }
    }

    pub fn describe(&self) -> String {
        format!(
            "{} (even brokers), {} (odd brokers, controller)",
            self.through_a.display(),
            self.through_b.display()
        )
    }

    /// Removes the run's folder from the volume.
    pub fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.through_b);
    }
}

/// Broker settings the soak passes through.
#[derive(Debug, Clone)]
pub struct BrokerFlags {
    pub initial_rebalance_delay_ms: u64,
    pub min_session_timeout_ms: u64,
    pub idle_unload_ms: u64,
}

/// Starts `n` brokers and the controller under `dir`, running a copy of
/// `bin` (a rebuild of target/release during a long run must not swap the
/// broker under test), and waits until every broker is published alive.
/// With `volume`, the brokers and the controller keep their data there
/// instead of under `dir`.
pub async fn start(
    bin: &Path,
    dir: &Path,
    n: usize,
    f: BrokerFlags,
    volume: Option<&OnMounts>,
) -> anyhow::Result<Cluster> {
    let mut opts = ClusterOptions::new(bin, n)
        .serve_arg(
            "--group-initial-rebalance-delay-ms",
            f.initial_rebalance_delay_ms,
        )
        .serve_arg("--group-min-session-timeout-ms", f.min_session_timeout_ms)
        .serve_arg("--group-idle-unload-ms", f.idle_unload_ms);
    if let Some(v) = volume {
        std::fs::create_dir_all(&v.through_b)?;
        let data = |id: usize| match id % 2 {
            0 => v.through_a.join("data"),
            _ => v.through_b.join("data"),
        };
        opts = opts.mounts((0..n).map(data).collect(), v.through_b.join("data"));
    }
    opts.http = true;
    opts.own_copy = true;
    Cluster::start(Some(dir), opts).await
}

/// GET `path` on broker `id`'s HTTP endpoint; the body of a 200.
pub async fn http_get(cluster: &Cluster, id: usize, path: &str) -> anyhow::Result<String> {
    let addr = cluster
        .http_addr(id)
        .ok_or_else(|| anyhow::anyhow!("the cluster has no HTTP endpoints"))?;
    let fut = async {
        let mut s = tokio::net::TcpStream::connect(&addr).await?;
        s.write_all(
            format!("GET {path} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n").as_bytes(),
        )
        .await?;
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).await?;
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let (head, body) = raw
            .split_once("\r\n\r\n")
            .ok_or_else(|| anyhow::anyhow!("no HTTP header end"))?;
        anyhow::ensure!(head.starts_with("HTTP/1.1 200"), "{path}: {head}");
        Ok::<_, anyhow::Error>(body.to_string())
    };
    tokio::time::timeout(Duration::from_secs(5), fut).await?
}
