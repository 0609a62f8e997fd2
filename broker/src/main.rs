//! The `kaas-broker` command: `local`, `serve`, `controller`.

use std::time::Duration;

use anyhow::Context;
use clap::Parser;
use kaas_broker::cli::{Cli, LogFormat, Resolved};
use kaas_broker::cluster::configmap_source;
use kaas_broker::cluster::controller;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_broker::serve::{AssignmentSource, Sockets};
use kaas_broker::settings::{self, Settings};
use tokio::net::TcpListener;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

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

/// SIGTERM and Ctrl-C, listened to from the start: a signal that arrives
/// while the broker starts is a shutdown too, not the default kill.
struct Termination {
    term: tokio::signal::unix::Signal,
}

impl Termination {
    fn listen() -> anyhow::Result<Termination> {
        let term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .context("cannot listen for SIGTERM")?;
        Ok(Termination { term })
    }

    /// Resolves on the next SIGTERM or Ctrl-C.
    async fn next(&mut self) {
        tokio::select! {
            _ = self.term.recv() => info!("SIGTERM: shutting down"),
            _ = tokio::signal::ctrl_c() => info!("interrupt: shutting down"),
        }
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    init_logging(cli.log_format);
    let mut termination = Termination::listen()?;
    match cli.command.resolve()? {
        Resolved::Local(local) => {
            for w in &local.warnings {
                warn!("config: {w}");
            }
            // Tuning is per process here: every broker gets the same.
            static TUNING: std::sync::OnceLock<Settings> = std::sync::OnceLock::new();
            let http = local.settings.http;
            let _ = TUNING.set(local.settings);
            let mut config = LocalClusterConfig::new(local.brokers, local.data.clone());
            config.host = local.host;
            config.advertised_host = local.advertised_host;
            config.base_port = local.base_port;
            config.http = http;
            config.sasl_admin_password = local.sasl_admin_password;
            config.tls = local.tls;
            config.tune = |c| TUNING.get().expect("set above").tune(c);
            let cluster = LocalCluster::start(config).await?;
            info!(bootstrap = %cluster.bootstrap(), data = %local.data.display(), "local cluster ready");
            println!(
                "kaas local cluster ready: bootstrap.servers={}",
                cluster.bootstrap()
            );
            cluster.run_until(termination.next()).await;
        }
        Resolved::Serve(serve) => {
            for w in &serve.warnings {
                warn!("config: {w}");
            }
            info!(
                "effective configuration: {}",
                settings::effective_line(&serve.effective())
            );
            let listen = serve.listen;
            let listener = TcpListener::bind(listen)
                .await
                .with_context(|| format!("cannot listen on {listen}"))?;
            let bound = listener.local_addr()?;
            let mut more = Vec::new();
            for addr in &serve.more_listen {
                more.push(
                    TcpListener::bind(addr)
                        .await
                        .with_context(|| format!("cannot listen on {addr}"))?,
                );
            }
            let id = serve.config.id;
            let drain = Duration::from_millis(serve.config.shutdown_drain_ms);
            let http = match serve.http {
                Some(addr) => Some(
                    TcpListener::bind(addr)
                        .await
                        .with_context(|| format!("cannot listen on {addr} for http"))?,
                ),
                None => None,
            };
            let assignment = match serve.assignment_configmap {
                Some(name) => {
                    let (client, source) = configmap_source::ConfigMapSource::connect(
                        name,
                        serve.assignment_namespace,
                    )
                    .await
                    .context("cannot reach the Kubernetes API")?;
                    info!(configmap = %source.name, namespace = %source.namespace,
                    "following the assignment ConfigMap");
                    AssignmentSource::ConfigMap { client, source }
                }
                None => AssignmentSource::File,
            };
            let broker = kaas_broker::serve::open(serve.config)?;
            let shutdown = CancellationToken::new();
            let mut tasks = JoinSet::new();
            let sockets = Sockets {
                kafka: listener,
                more_kafka: more,
                http,
            };
            kaas_broker::serve::spawn(&mut tasks, broker, sockets, assignment, shutdown.clone());
            info!(id, %bound, "broker serving");
            termination.next().await;
            if !drain.is_zero() {
                info!(?drain, "draining: serving on before closing connections");
                tokio::select! {
                    _ = tokio::time::sleep(drain) => {}
                    _ = termination.next() => info!("a second signal: not waiting for the drain"),
                }
            }
            shutdown.cancel();
            while tasks.join_next().await.is_some() {}
        }
        Resolved::Controller(config) => {
            let shutdown = CancellationToken::new();
            let task = tokio::spawn(controller::run(config, shutdown.clone()));
            termination.next().await;
            shutdown.cancel();
            let _ = task.await;
        }
    }
    Ok(())
}
