//! A cluster of real processes: `kaas-broker serve` per broker plus a
//! `kaas-broker controller`, for kill -9 tests. Logs land in the temp dir.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_kaas-broker");

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

pub struct ProcCluster {
    pub data: PathBuf,
    pub logs: PathBuf,
    pub ports: Vec<u16>,
    brokers: Vec<Option<Child>>,
    controller: Option<Child>,
    restarts: usize,
    _dir: tempfile::TempDir,
}

impl ProcCluster {
    /// Starts `n` brokers and a controller probing every 200 ms, declaring
    /// a broker dead after two failed probes.
    pub async fn start(n: usize) -> ProcCluster {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let logs = dir.path().join("logs");
        std::fs::create_dir_all(&logs).unwrap();
        let ports: Vec<u16> = (0..n).map(|_| free_port()).collect();
        let mut c = ProcCluster {
            data,
            logs,
            ports,
            brokers: Vec::new(),
            controller: None,
            restarts: 0,
            _dir: dir,
        };
        for id in 0..n {
            let child = c.spawn_broker(id);
            c.brokers.push(Some(child));
        }
        let brokers_arg = c
            .ports
            .iter()
            .enumerate()
            .map(|(id, p)| format!("{id}=127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",");
        c.controller = Some(
            Command::new(BIN)
                .args([
                    "controller",
                    "--brokers",
                    &brokers_arg,
                    "--probe-interval-ms",
                    "200",
                ])
                .args(["--failures-before-dead", "2", "--data"])
                .arg(&c.data)
                .stdout(Stdio::null())
                .stderr(c.log("controller"))
                .spawn()
                .unwrap(),
        );
        c.wait_alive(n).await;
        c
    }

    fn log(&self, name: &str) -> std::fs::File {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("{name}.log")))
            .unwrap()
    }

    fn spawn_broker(&self, id: usize) -> Child {
        Command::new(BIN)
            .args(["serve", "--id", &id.to_string()])
            .args(["--listen", &format!("127.0.0.1:{}", self.ports[id])])
            .args(["--group-initial-rebalance-delay-ms", "200", "--data"])
            .arg(&self.data)
            .stdout(Stdio::null())
            .stderr(self.log(&format!("broker-{id}")))
            .spawn()
            .expect("spawn broker")
    }

    pub fn bootstrap(&self) -> String {
        self.ports
            .iter()
            .map(|p| format!("127.0.0.1:{p}"))
            .collect::<Vec<_>>()
            .join(",")
    }

    pub fn addr(&self, id: usize) -> String {
        format!("127.0.0.1:{}", self.ports[id])
    }

    /// SIGKILL, no goodbye.
    pub fn kill(&mut self, id: usize) {
        if let Some(mut c) = self.brokers[id].take() {
            c.kill().unwrap();
            c.wait().unwrap();
        }
    }

    pub fn restart(&mut self, id: usize) {
        self.kill(id);
        self.restarts += 1;
        self.brokers[id] = Some(self.spawn_broker(id));
    }

    pub fn assignment(&self) -> String {
        std::fs::read_to_string(self.data.join("__cluster/assignment.json")).unwrap_or_default()
    }

    /// Waits until the published assignment has exactly `n` alive brokers.
    pub async fn wait_alive(&self, n: usize) {
        super::eventually(
            Duration::from_secs(20),
            &format!("{n} brokers alive"),
            || self.assignment().matches("\"alive\"").count() == n,
        )
        .await;
    }

    /// The broker logs, for a failing test's message.
    pub fn logs(&self) -> String {
        let mut out = String::new();
        if let Ok(entries) = std::fs::read_dir(&self.logs) {
            for e in entries.flatten() {
                out.push_str(&format!("==== {}\n", e.path().display()));
                out.push_str(&std::fs::read_to_string(e.path()).unwrap_or_default());
            }
        }
        out
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }
}

impl Drop for ProcCluster {
    fn drop(&mut self) {
        for c in self
            .brokers
            .iter_mut()
            .chain(std::iter::once(&mut self.controller))
        {
            if let Some(mut c) = c.take() {
                let _ = c.kill();
                let _ = c.wait();
            }
        }
    }
}
