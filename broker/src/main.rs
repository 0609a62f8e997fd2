//! The `kaas-broker` command: `local`, `serve`, `controller`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};
use kaas_broker::cluster::controller::{self, BrokerAddress, ControllerConfig};
use kaas_broker::cluster::{assignment_file, configmap_source};
use kaas_broker::local::{self, LocalCluster, LocalClusterConfig};
use kaas_broker::storage::group_log::GroupLogSync;
use kaas_broker::{Broker, BrokerConfig};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::info;

#[derive(Parser)]
#[command(
    name = "kaas-broker",
    version,
    about = "Kafka-protocol brokers on a shared volume"
)]
struct Cli {
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, env = "KAAS_LOG_FORMAT")]
    log_format: LogFormat,
    #[command(subcommand)]
    command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
enum Command {
    /// Run N brokers and the controller in one process on loopback.
    Local {
        /// Number of brokers.
        #[arg(long, default_value_t = 3)]
        brokers: usize,
        /// The shared folder.
        #[arg(long, default_value = "./data")]
        data: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1")]
        host: String,
        /// Broker N listens on base-port + N.
        #[arg(long, default_value_t = 9092)]
        base_port: u16,
        #[command(flatten)]
        tuning: Tuning,
    },
    /// Run one broker.
    Serve {
        /// Broker id (the StatefulSet ordinal on Kubernetes).
        #[arg(long)]
        id: i32,
        /// The shared folder.
        #[arg(long)]
        data: PathBuf,
        /// Address to listen on.
        #[arg(long, default_value = "127.0.0.1:9092")]
        listen: SocketAddr,
        /// HOST:PORT clients reach this broker at (default: --listen).
        #[arg(long)]
        advertise: Option<String>,
        /// Follow the assignment in this Kubernetes ConfigMap (watched
        /// through the API, in-cluster config or KUBECONFIG) instead of
        /// `<data>/__cluster/assignment.json`.
        #[arg(long, env = "KAAS_ASSIGNMENT_CONFIGMAP")]
        assignment_configmap: Option<String>,
        /// Namespace of --assignment-configmap (default: the client
        /// config's, i.e. the pod's own namespace in-cluster).
        #[arg(
            long,
            env = "KAAS_ASSIGNMENT_NAMESPACE",
            requires = "assignment_configmap"
        )]
        assignment_namespace: Option<String>,
        #[command(flatten)]
        tuning: Tuning,
    },
    /// Probe brokers and publish the assignment file.
    Controller {
        /// The shared folder.
        #[arg(long)]
        data: PathBuf,
        /// Every broker as ID=HOST:PORT, comma separated.
        #[arg(long, value_delimiter = ',', required = true)]
        brokers: Vec<BrokerAddress>,
        /// Time between probe rounds.
        #[arg(long, default_value_t = 500)]
        probe_interval_ms: u64,
        /// Failed probes in a row before a broker is declared dead.
        #[arg(long, default_value_t = 3)]
        failures_before_dead: u32,
    },
}

#[derive(Args, Clone)]
struct Tuning {
    /// Largest request accepted, in bytes (socket.request.max.bytes).
    #[arg(long, default_value_t = 100 * 1024 * 1024)]
    max_frame_bytes: usize,
    /// Most client connections at once (max.connections); beyond it the
    /// listener stops accepting until one closes. Unlimited by default.
    #[arg(long)]
    max_connections: Option<usize>,
    /// Most connections from one address (max.connections.per.ip); a
    /// connection beyond it is closed and logged. Unlimited by default.
    #[arg(long)]
    max_connections_per_ip: Option<usize>,
    /// Do not create topics on first use (auto.create.topics.enable=false).
    #[arg(long)]
    no_auto_create_topics: bool,
    /// Partitions of auto-created topics (num.partitions).
    #[arg(long, default_value_t = 1)]
    default_partitions: i32,
    /// Segment size in bytes (log.segment.bytes).
    #[arg(long, default_value_t = 256 * 1024 * 1024)]
    segment_bytes: u64,
    /// group.initial.rebalance.delay.ms
    #[arg(long, default_value_t = 3000)]
    group_initial_rebalance_delay_ms: u64,
    /// group.min.session.timeout.ms
    #[arg(long, default_value_t = 6000)]
    group_min_session_timeout_ms: i32,
    /// group.max.session.timeout.ms
    #[arg(long, default_value_t = 1_800_000)]
    group_max_session_timeout_ms: i32,
    /// group.max.size: members per group.
    #[arg(long, default_value_t = i32::MAX as usize)]
    group_max_size: usize,
    /// offsets.retention.minutes
    #[arg(long, default_value_t = 7 * 24 * 60)]
    offsets_retention_minutes: u64,
    /// Empty groups idle this long are unloaded from memory (they reload
    /// from their log on the next request).
    #[arg(long, default_value_t = 300_000)]
    group_idle_unload_ms: u64,
    /// Most groups held in memory at once.
    #[arg(long, default_value_t = 200_000)]
    max_loaded_groups: usize,
    /// How committed offsets are made durable: `journal` (the broker's
    /// commit journal: one write and one fdatasync of one file per round,
    /// whatever the groups; the logs follow by syncfs), `volume` (one
    /// syncfs of the data volume per round) or `file` (one fdatasync per
    /// group log; for file systems whose syncfs does not flush).
    #[arg(long, value_enum, default_value_t = SyncMode::Journal)]
    group_log_sync: SyncMode,
    /// Serve /healthz, /readyz and /metrics on this address (with `local`,
    /// broker N uses this port + N).
    #[arg(long)]
    http: Option<SocketAddr>,
}

impl Tuning {
    fn apply(&self, c: &mut BrokerConfig) {
        c.max_frame_bytes = self.max_frame_bytes;
        c.max_connections = self.max_connections.unwrap_or(usize::MAX);
        c.max_connections_per_ip = self.max_connections_per_ip.unwrap_or(usize::MAX);
        c.auto_create_topics = !self.no_auto_create_topics;
        c.default_partitions = self.default_partitions;
        c.log.segment_bytes = self.segment_bytes;
        let g = &mut c.groups;
        g.core.initial_rebalance_delay_ms = self.group_initial_rebalance_delay_ms;
        g.core.min_session_timeout_ms = self.group_min_session_timeout_ms;
        g.core.max_session_timeout_ms = self.group_max_session_timeout_ms;
        g.core.max_group_size = self.group_max_size;
        g.core.offsets_retention_ms = self.offsets_retention_minutes * 60 * 1000;
        g.idle_unload_ms = self.group_idle_unload_ms;
        g.max_resident_groups = self.max_loaded_groups;
        c.group_log_sync = match self.group_log_sync {
            SyncMode::Journal => GroupLogSync::Journal,
            SyncMode::Volume => GroupLogSync::Volume,
            SyncMode::File => GroupLogSync::PerFile,
        };
    }
}

#[derive(Clone, Copy, Debug, ValueEnum)]
enum SyncMode {
    Journal,
    Volume,
    File,
}

fn init_logging(format: LogFormat) {
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stderr());
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(ansi);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

/// Resolves on SIGTERM or Ctrl-C.
async fn termination() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM handler");
    tokio::select! {
        _ = term.recv() => info!("SIGTERM: shutting down"),
        _ = tokio::signal::ctrl_c() => info!("interrupt: shutting down"),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    match cli.command {
        Command::Local {
            brokers,
            data,
            host,
            base_port,
            tuning,
        } => {
            anyhow::ensure!(brokers >= 1, "--brokers must be at least 1");
            // Tuning is per process here: every broker gets the same.
            static TUNING: std::sync::OnceLock<Tuning> = std::sync::OnceLock::new();
            let http = tuning.http;
            let _ = TUNING.set(tuning);
            let mut config = LocalClusterConfig::new(brokers, data.clone());
            config.host = host;
            config.base_port = base_port;
            config.http = http;
            config.tune = |c| TUNING.get().expect("set above").apply(c);
            let cluster = LocalCluster::start(config).await?;
            info!(bootstrap = %cluster.bootstrap(), data = %data.display(), "local cluster ready");
            println!(
                "kaas local cluster ready: bootstrap.servers={}",
                cluster.bootstrap()
            );
            cluster.run_until(termination()).await;
        }
        Command::Serve {
            id,
            data,
            listen,
            advertise,
            assignment_configmap,
            assignment_namespace,
            tuning,
        } => {
            let listener = TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let bound = listener.local_addr()?;
            let (host, port) = match advertise {
                Some(a) => {
                    let (h, p) = a
                        .rsplit_once(':')
                        .context("--advertise must be HOST:PORT")?;
                    (h.to_string(), p.parse().context("--advertise port")?)
                }
                None => (bound.ip().to_string(), bound.port()),
            };
            let mut config = BrokerConfig::new(id, data, &host, port);
            tuning.apply(&mut config);
            let broker = Broker::open(config)?;
            let shutdown = CancellationToken::new();
            let mut tasks = JoinSet::new();
            if let Some(addr) = tuning.http {
                let http = TcpListener::bind(addr)
                    .await
                    .with_context(|| format!("cannot listen on {addr} for http"))?;
                tasks.spawn(kaas_broker::http::run(
                    http,
                    broker.clone(),
                    shutdown.clone(),
                ));
            }
            match assignment_configmap {
                Some(name) => {
                    let (client, source) =
                        configmap_source::ConfigMapSource::connect(name, assignment_namespace)
                            .await
                            .context("cannot reach the Kubernetes API")?;
                    info!(configmap = %source.name, namespace = %source.namespace,
                        "following the assignment ConfigMap");
                    configmap_source::spawn_broker(
                        &mut tasks,
                        listener,
                        broker,
                        client,
                        source,
                        shutdown.clone(),
                    );
                }
                None => local::spawn_broker(&mut tasks, listener, broker, shutdown.clone()),
            }
            info!(id, %bound, "broker serving");
            termination().await;
            shutdown.cancel();
            while tasks.join_next().await.is_some() {}
        }
        Command::Controller {
            data,
            brokers,
            probe_interval_ms,
            failures_before_dead,
        } => {
            let config = ControllerConfig {
                assignment_path: assignment_file::assignment_path(&data),
                brokers,
                probe_interval: Duration::from_millis(probe_interval_ms),
                failures_before_dead,
            };
            let shutdown = CancellationToken::new();
            let task = tokio::spawn(controller::run(config, shutdown.clone()));
            termination().await;
            shutdown.cancel();
            let _ = task.await;
        }
    }
    Ok(())
}
