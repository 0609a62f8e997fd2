//! The cluster under test: N `kaas-broker serve` processes and one
//! `kaas-broker controller`, sharing one data folder, started with the same
//! command lines as `broker/tests/common/procs.rs` (plus `--http`, so each
//! broker's `/debug/groups` can be read).

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kaas_shared::{Assignment, BrokerState, Routing};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Broker settings the soak passes through.
#[derive(Debug, Clone)]
pub struct BrokerFlags {
    pub initial_rebalance_delay_ms: u64,
    pub min_session_timeout_ms: u64,
    pub idle_unload_ms: u64,
}

pub struct Cluster {
    bin: PathBuf,
    pub data: PathBuf,
    pub logs: PathBuf,
    ports: Vec<u16>,
    http_ports: Vec<u16>,
    flags: BrokerFlags,
    brokers: Mutex<Vec<Option<Child>>>,
    controller: Mutex<Option<Child>>,
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port())
}

impl Cluster {
    /// Starts `n` brokers and the controller (probing every 200 ms, a
    /// broker dead after two failed probes, as in the crash-safety tests),
    /// and waits until the assignment counts every broker alive.
    pub async fn start(
        bin: &Path,
        dir: &Path,
        n: usize,
        flags: BrokerFlags,
    ) -> anyhow::Result<Cluster> {
        let data = dir.join("data");
        let logs = dir.join("logs");
        std::fs::create_dir_all(&data)?;
        std::fs::create_dir_all(&logs)?;
        // Restarts run this copy: a rebuild of target/release during a long
        // run must not swap the broker under test.
        let own_bin = dir.join("kaas-broker");
        std::fs::copy(bin, &own_bin)?;
        let mut ports = Vec::new();
        let mut http_ports = Vec::new();
        for _ in 0..n {
            ports.push(free_port()?);
            http_ports.push(free_port()?);
        }
        let c = Cluster {
            bin: own_bin,
            data,
            logs,
            ports,
            http_ports,
            flags,
            brokers: Mutex::new((0..n).map(|_| None).collect()),
            controller: Mutex::new(None),
        };
        for id in 0..n {
            c.spawn_broker(id)?;
        }
        let brokers_arg = (0..n)
            .map(|id| format!("{id}=127.0.0.1:{}", c.ports[id]))
            .collect::<Vec<_>>()
            .join(",");
        let controller = Command::new(&c.bin)
            .args(["controller", "--brokers", &brokers_arg])
            .args(["--probe-interval-ms", "200", "--failures-before-dead", "2"])
            .arg("--data")
            .arg(&c.data)
            .stdout(Stdio::null())
            .stderr(c.log("controller")?)
            .spawn()?;
        *c.controller.lock().unwrap() = Some(controller);
        c.wait_alive(&(0..n).collect::<Vec<_>>(), Duration::from_secs(30))
            .await?;
        Ok(c)
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    fn log(&self, name: &str) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("{name}.log")))
    }

    /// Starts broker `id` (again). Its log is appended to, across restarts.
    pub fn spawn_broker(&self, id: usize) -> anyhow::Result<()> {
        let f = &self.flags;
        let child = Command::new(&self.bin)
            .args(["serve", "--id", &id.to_string()])
            .args(["--listen", &self.addr(id)])
            .args(["--http", &format!("127.0.0.1:{}", self.http_ports[id])])
            .args([
                "--group-initial-rebalance-delay-ms",
                &f.initial_rebalance_delay_ms.to_string(),
            ])
            .args([
                "--group-min-session-timeout-ms",
                &f.min_session_timeout_ms.to_string(),
            ])
            .args(["--group-idle-unload-ms", &f.idle_unload_ms.to_string()])
            .arg("--data")
            .arg(&self.data)
            .stdout(Stdio::null())
            .stderr(self.log(&format!("broker-{id}"))?)
            .spawn()?;
        self.brokers.lock().unwrap()[id] = Some(child);
        Ok(())
    }

    /// SIGKILL: no goodbye, no flush.
    pub fn kill(&self, id: usize) {
        if let Some(mut c) = self.brokers.lock().unwrap()[id].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    pub fn is_up(&self, id: usize) -> bool {
        self.brokers.lock().unwrap()[id].is_some()
    }

    pub fn up_ids(&self) -> Vec<usize> {
        (0..self.len()).filter(|&i| self.is_up(i)).collect()
    }

    pub fn pid(&self, id: usize) -> Option<u32> {
        self.brokers.lock().unwrap()[id].as_ref().map(|c| c.id())
    }

    /// A broker that exited on its own is a finding, not chaos: reports
    /// (id, exit status) for each.
    pub fn exited(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (id, slot) in self.brokers.lock().unwrap().iter_mut().enumerate() {
            if let Some(c) = slot {
                if let Ok(Some(status)) = c.try_wait() {
                    out.push((id, status.to_string()));
                    *slot = None;
                }
            }
        }
        out
    }

    pub fn addr(&self, id: usize) -> String {
        format!("127.0.0.1:{}", self.ports[id])
    }

    /// The published assignment document, if readable.
    pub fn assignment(&self) -> Option<Assignment> {
        let text = std::fs::read_to_string(self.data.join("__cluster/assignment.json")).ok()?;
        serde_json::from_str(&text).ok()
    }

    pub fn routing(&self) -> Option<Routing> {
        self.assignment().map(Routing::new)
    }

    /// Whether the assignment counts broker `id` alive.
    pub fn alive_in_assignment(&self, id: usize) -> Option<bool> {
        let a = self.assignment()?;
        Some(
            a.brokers
                .iter()
                .any(|b| b.id == id as i32 && b.state == BrokerState::Alive),
        )
    }

    /// Waits until the assignment counts every broker in `ids` alive.
    pub async fn wait_alive(&self, ids: &[usize], within: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        loop {
            if ids
                .iter()
                .all(|&i| self.alive_in_assignment(i) == Some(true))
            {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "brokers {ids:?} not all alive in the assignment after {within:?}"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Waits until the assignment counts broker `id` dead (or gone).
    pub async fn wait_dead(&self, id: usize, within: Duration) -> bool {
        let deadline = Instant::now() + within;
        while Instant::now() < deadline {
            if self.alive_in_assignment(id) == Some(false) {
                return true;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        false
    }

    /// GET `path` on broker `id`'s HTTP endpoint; the body of a 200.
    pub async fn http_get(&self, id: usize, path: &str) -> anyhow::Result<String> {
        let addr = format!("127.0.0.1:{}", self.http_ports[id]);
        let fut = async {
            let mut s = tokio::net::TcpStream::connect(&addr).await?;
            s.write_all(
                format!("GET {path} HTTP/1.1\r\nHost: soak\r\nConnection: close\r\n\r\n")
                    .as_bytes(),
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

    /// Kills every process (the controller first, so it publishes nothing
    /// about brokers going away).
    pub fn shutdown(&self) {
        if let Some(mut c) = self.controller.lock().unwrap().take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        for id in 0..self.len() {
            self.kill(id);
        }
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}
