//! A cluster of real processes: `kaas-broker serve` per broker plus one
//! `kaas-broker controller` (probing every 200 ms, a broker dead after two
//! failed probes), sharing one data folder. Each process logs to its own
//! file under `logs/`, appended to across restarts.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use kaas_shared::{Assignment, BrokerState, Routing};

/// A port free on loopback now.
pub fn free_port() -> std::io::Result<u16> {
    Ok(free_ports(1)?[0])
}

/// `n` ports free on loopback now, all different: each is held until all
/// are found (ports found one at a time may come back twice).
pub fn free_ports(n: usize) -> std::io::Result<Vec<u16>> {
    let held = (0..n)
        .map(|_| std::net::TcpListener::bind("127.0.0.1:0"))
        .collect::<std::io::Result<Vec<_>>>()?;
    held.iter().map(|l| Ok(l.local_addr()?.port())).collect()
}

/// How to start a [`ProcessCluster`].
#[derive(Debug, Clone)]
pub struct ClusterOptions {
    /// The `kaas-broker` binary.
    pub bin: PathBuf,
    pub brokers: usize,
    /// Flags added to every `serve` command line.
    pub serve_args: Vec<String>,
    /// Flags added to the `controller` command line.
    pub controller_args: Vec<String>,
    /// Give each broker an HTTP endpoint (`--http`).
    pub http: bool,
    /// Run a copy of the binary made at start, so that a rebuild during a
    /// long run does not swap the broker under test.
    pub own_copy: bool,
    /// How long to wait for every broker to be published alive.
    pub start_within: Duration,
    /// A second listener per broker: see [`ClusterOptions::client_listener`].
    pub client_listener: Option<ClientListener>,
    /// Each broker's own path to the data folder, and the controller's
    /// (mounts of one shared volume, as nodes have): see
    /// [`ClusterOptions::mounts`]. Empty: everyone uses `<dir>/data`.
    pub broker_data: Vec<PathBuf>,
    pub controller_data: Option<PathBuf>,
}

/// Each broker's inter-broker listener named `inter_broker` (at
/// [`ProcessCluster::addr`]) and a listener `name` advertised at
/// `host` (at [`ProcessCluster::client_addr`]); their protocols are the
/// serve arguments' `listener.security.protocol.map`.
#[derive(Debug, Clone)]
pub struct ClientListener {
    pub inter_broker: String,
    pub name: String,
    pub host: String,
}

impl ClusterOptions {
    pub fn new(bin: impl Into<PathBuf>, brokers: usize) -> ClusterOptions {
        ClusterOptions {
            bin: bin.into(),
            brokers,
            serve_args: Vec::new(),
            controller_args: Vec::new(),
            http: false,
            own_copy: false,
            start_within: Duration::from_secs(30),
            client_listener: None,
            broker_data: Vec::new(),
            controller_data: None,
        }
    }

    /// Broker `i` reaches the data folder at `brokers[i]` and the
    /// controller at `controller`: one folder seen through several mounts.
    pub fn mounts(mut self, brokers: Vec<PathBuf>, controller: PathBuf) -> ClusterOptions {
        self.broker_data = brokers;
        self.controller_data = Some(controller);
        self
    }

    /// Gives each broker two listeners (`--override listeners=…`): the
    /// inter-broker one, which the controller probes, and `name`,
    /// advertised at `host`.
    pub fn client_listener(mut self, inter_broker: &str, name: &str, host: &str) -> ClusterOptions {
        self.client_listener = Some(ClientListener {
            inter_broker: inter_broker.into(),
            name: name.into(),
            host: host.into(),
        });
        self
    }

    pub fn serve_arg(mut self, flag: &str, value: impl ToString) -> ClusterOptions {
        self.serve_args.push(flag.to_string());
        self.serve_args.push(value.to_string());
        self
    }

    pub fn controller_arg(mut self, flag: &str, value: impl ToString) -> ClusterOptions {
        self.controller_args.push(flag.to_string());
        self.controller_args.push(value.to_string());
        self
    }
}

pub struct ProcessCluster {
    bin: PathBuf,
    pub data: PathBuf,
    pub logs: PathBuf,
    ports: Vec<u16>,
    http_ports: Vec<u16>,
    client_ports: Vec<u16>,
    client_listener: Option<ClientListener>,
    serve_args: Vec<String>,
    /// Each broker's path to the data folder (`data` when empty).
    broker_data: Vec<PathBuf>,
    brokers: Mutex<Vec<Option<Child>>>,
    controller: Mutex<Option<Child>>,
    /// The folder, when the cluster made its own.
    _dir: Option<tempfile::TempDir>,
}

impl ProcessCluster {
    /// Starts the cluster under `dir` (a fresh temporary folder when
    /// `None`) and waits until the assignment counts every broker alive.
    pub async fn start(dir: Option<&Path>, opts: ClusterOptions) -> anyhow::Result<ProcessCluster> {
        let own_dir = match dir {
            Some(_) => None,
            None => Some(tempfile::tempdir()?),
        };
        let root = dir.unwrap_or_else(|| own_dir.as_ref().expect("made").path());
        let data = opts.controller_data.unwrap_or_else(|| root.join("data"));
        let logs = root.join("logs");
        std::fs::create_dir_all(&data)?;
        std::fs::create_dir_all(&logs)?;
        let bin = match opts.own_copy {
            true => {
                let copy = root.join("kaas-broker");
                std::fs::copy(&opts.bin, &copy)?;
                copy
            }
            false => opts.bin.clone(),
        };
        let n = opts.brokers;
        let mut ports = free_ports(3 * n)?;
        let mut http_ports = ports.split_off(n);
        let client_ports = http_ports.split_off(n);
        if !opts.http {
            http_ports.clear();
        }
        let c = ProcessCluster {
            bin,
            data,
            logs,
            ports,
            http_ports,
            client_ports,
            client_listener: opts.client_listener,
            serve_args: opts.serve_args,
            broker_data: opts.broker_data,
            brokers: Mutex::new((0..n).map(|_| None).collect()),
            controller: Mutex::new(None),
            _dir: own_dir,
        };
        for id in 0..n {
            c.spawn_broker(id)?;
        }
        let brokers_arg = (0..n)
            .map(|id| format!("{id}={}", c.advertised_listeners(id)))
            .collect::<Vec<_>>()
            .join(",");
        // Quick detection by default; a test's own controller flags win.
        let defaults = [
            ("--probe-interval-ms", "200"),
            ("--failures-before-dead", "2"),
        ]
        .into_iter()
        .filter(|(flag, _)| !opts.controller_args.iter().any(|a| a == flag))
        .flat_map(|(flag, value)| [flag, value]);
        let controller = Command::new(&c.bin)
            .args(["controller", "--brokers", &brokers_arg])
            .args(defaults)
            .args(&opts.controller_args)
            .arg("--data")
            .arg(&c.data)
            .stdout(Stdio::null())
            .stderr(c.log("controller")?)
            .spawn()?;
        *c.controller.lock().expect("no panic holds it") = Some(controller);
        // A cluster that does not come up says why: its processes' logs.
        if let Err(e) = c
            .wait_alive(&(0..n).collect::<Vec<_>>(), opts.start_within)
            .await
        {
            anyhow::bail!("{e}\n{}", c.logs());
        }
        Ok(c)
    }

    pub fn len(&self) -> usize {
        self.ports.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ports.is_empty()
    }

    fn log(&self, name: &str) -> std::io::Result<std::fs::File> {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.logs.join(format!("{name}.log")))
    }

    fn brokers(&self) -> std::sync::MutexGuard<'_, Vec<Option<Child>>> {
        self.brokers.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Starts broker `id` (again, after [`Self::kill`]).
    pub fn spawn_broker(&self, id: usize) -> anyhow::Result<()> {
        let mut cmd = Command::new(&self.bin);
        cmd.args(["serve", "--id", &id.to_string()])
            .args(["--listen", &self.addr(id)]);
        if let Some(http) = self.http_addr(id) {
            cmd.args(["--http", &http]);
        }
        if let Some(l) = &self.client_listener {
            let port = self.client_ports[id];
            let listeners = format!(
                "listeners={}://{},{}://127.0.0.1:{port}",
                l.inter_broker,
                self.addr(id),
                l.name
            );
            let advertised = format!("advertised.listeners={}", self.advertised_listeners(id));
            cmd.args(["--override", &listeners, "--override", &advertised]);
        }
        let child = cmd
            .args(&self.serve_args)
            .arg("--data")
            .arg(self.broker_data.get(id).unwrap_or(&self.data))
            .stdout(Stdio::null())
            .stderr(self.log(&format!("broker-{id}"))?)
            .spawn()?;
        self.brokers()[id] = Some(child);
        Ok(())
    }

    /// SIGKILL: no goodbye, no flush.
    pub fn kill(&self, id: usize) {
        if let Some(mut c) = self.brokers()[id].take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// SIGKILL, then start again.
    pub fn restart(&self, id: usize) -> anyhow::Result<()> {
        self.kill(id);
        self.spawn_broker(id)
    }

    pub fn is_up(&self, id: usize) -> bool {
        self.brokers()[id].is_some()
    }

    pub fn up_ids(&self) -> Vec<usize> {
        (0..self.len()).filter(|&i| self.is_up(i)).collect()
    }

    pub fn pid(&self, id: usize) -> Option<u32> {
        self.brokers()[id].as_ref().map(|c| c.id())
    }

    /// Brokers that exited on their own, with their exit status (a finding,
    /// not chaos); they count as down from then on.
    pub fn exited(&self) -> Vec<(usize, String)> {
        let mut out = Vec::new();
        for (id, slot) in self.brokers().iter_mut().enumerate() {
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

    /// Broker `id`'s address on the client listener, when it has one.
    pub fn client_addr(&self, id: usize) -> Option<String> {
        let l = self.client_listener.as_ref()?;
        Some(format!("{}:{}", l.host, self.client_ports[id]))
    }

    /// As `advertised.listeners` (and the controller's `--brokers`) write
    /// broker `id`'s listeners: `HOST:PORT` when it has one.
    fn advertised_listeners(&self, id: usize) -> String {
        match (&self.client_listener, self.client_addr(id)) {
            (Some(l), Some(client)) => {
                format!(
                    "{}://{},{}://{client}",
                    l.inter_broker,
                    self.addr(id),
                    l.name
                )
            }
            _ => self.addr(id),
        }
    }

    /// Every broker's address, comma-separated.
    pub fn bootstrap(&self) -> String {
        (0..self.len())
            .map(|id| self.addr(id))
            .collect::<Vec<_>>()
            .join(",")
    }

    /// Broker `id`'s HTTP endpoint, when the cluster has them.
    pub fn http_addr(&self, id: usize) -> Option<String> {
        self.http_ports.get(id).map(|p| format!("127.0.0.1:{p}"))
    }

    pub fn data_dir(&self) -> &Path {
        &self.data
    }

    /// The published assignment file as text (empty before the first).
    pub fn assignment_text(&self) -> String {
        std::fs::read_to_string(self.data.join("__cluster/assignment.json")).unwrap_or_default()
    }

    /// The published assignment, if readable.
    pub fn assignment(&self) -> Option<Assignment> {
        serde_json::from_str(&self.assignment_text()).ok()
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

    /// Brokers the assignment counts alive.
    pub fn alive_count(&self) -> usize {
        self.assignment().map_or(0, |a| {
            a.brokers
                .iter()
                .filter(|b| b.state == BrokerState::Alive)
                .count()
        })
    }

    /// Waits until `check` holds of the cluster; fails after `within`.
    pub async fn wait_until(
        &self,
        within: Duration,
        what: &str,
        mut check: impl FnMut(&ProcessCluster) -> bool,
    ) -> anyhow::Result<()> {
        let deadline = Instant::now() + within;
        while !check(self) {
            anyhow::ensure!(Instant::now() < deadline, "{what}: not after {within:?}");
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Ok(())
    }

    /// Waits until the assignment counts every broker in `ids` alive.
    pub async fn wait_alive(&self, ids: &[usize], within: Duration) -> anyhow::Result<()> {
        let what = format!("brokers {ids:?} alive in the assignment");
        self.wait_until(within, &what, |c| {
            ids.iter().all(|&i| c.alive_in_assignment(i) == Some(true))
        })
        .await
    }

    /// Waits until the assignment counts exactly `n` brokers alive.
    pub async fn wait_alive_count(&self, n: usize, within: Duration) -> anyhow::Result<()> {
        let what = format!("{n} brokers alive in the assignment");
        self.wait_until(within, &what, |c| c.alive_count() == n)
            .await
    }

    /// Waits until the assignment counts broker `id` dead (or gone).
    pub async fn wait_dead(&self, id: usize, within: Duration) -> bool {
        self.wait_until(within, "dead", |c| c.alive_in_assignment(id) == Some(false))
            .await
            .is_ok()
    }

    /// Stops (SIGSTOP) or continues (SIGCONT) the controller: while it is
    /// stopped nothing is published, so a broker killed meanwhile still
    /// counts alive and keeps what it led.
    pub fn pause_controller(&self, paused: bool) -> anyhow::Result<()> {
        let pid = self
            .controller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .as_ref()
            .map(|c| c.id())
            .ok_or_else(|| anyhow::anyhow!("no controller running"))?;
        let signal = if paused { "-STOP" } else { "-CONT" };
        let status = Command::new("kill")
            .args([signal, &pid.to_string()])
            .status()?;
        anyhow::ensure!(status.success(), "kill {signal} {pid}: {status}");
        Ok(())
    }

    /// Every process's log, for a failing test's message.
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

    /// Kills every process (the controller first, so it publishes nothing
    /// about brokers going away).
    pub fn shutdown(&self) {
        let controller = self
            .controller
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take();
        if let Some(mut c) = controller {
            let _ = c.kill();
            let _ = c.wait();
        }
        for id in 0..self.len() {
            self.kill(id);
        }
    }
}

impl Drop for ProcessCluster {
    fn drop(&mut self) {
        self.shutdown();
    }
}
