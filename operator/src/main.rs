//! `kaas-operator`: reconciles KaasClusters in the watched namespaces.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context as _;
use clap::{Parser, ValueEnum};
use kaas_operator::context::{kafka_prober, ApiVersions, Context, Settings};
use tracing::info;

#[derive(Parser)]
#[command(
    name = "kaas-operator",
    version,
    about = "Runs kaas clusters on Kubernetes"
)]
struct Cli {
    /// Namespaces to watch, comma separated; empty: all namespaces.
    #[arg(long, env = "KAAS_WATCH_NAMESPACES", value_delimiter = ',')]
    namespaces: Vec<String>,
    /// Seconds between reconciles of a healthy cluster (how fresh the active
    /// group list is when the broker set changes).
    #[arg(long, env = "KAAS_RESYNC_SECONDS", default_value_t = 10)]
    resync_seconds: u64,
    /// Milliseconds to wait for a broker's ListGroups answer.
    #[arg(long, env = "KAAS_PROBE_TIMEOUT_MS", default_value_t = 2000)]
    probe_timeout_ms: u64,
    /// Log format.
    #[arg(long, value_enum, env = "KAAS_LOG_FORMAT", default_value_t = LogFormat::Json)]
    log_format: LogFormat,
    /// Print the broker ConfigMap and StatefulSet the operator applies for
    /// the KaasCluster in this file (YAML or JSON), as JSON, and exit.
    /// Needs no API server.
    #[arg(long, value_name = "FILE")]
    render: Option<std::path::PathBuf>,
}

#[derive(Clone, Copy, ValueEnum)]
enum LogFormat {
    Text,
    Json,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    if let Some(path) = &cli.render {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read {}", path.display()))?;
        let list = kaas_operator::resources::render_broker_objects(&text)
            .with_context(|| format!("in {}", path.display()))?;
        println!("{}", serde_json::to_string_pretty(&list)?);
        return Ok(());
    }
    let filter = tracing_subscriber::EnvFilter::try_from_default_env()
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("info"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    match cli.log_format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }

    let client = kube::Client::try_default().await?;
    let versions = ApiVersions::discover(&client).await?;
    info!(?versions, "API versions");
    let settings = Settings {
        resync: Duration::from_secs(cli.resync_seconds.max(1)),
        ..Settings::default()
    };
    let ctx = Arc::new(Context::new(
        client.clone(),
        versions,
        kafka_prober(Duration::from_millis(cli.probe_timeout_ms)),
        settings,
    ));
    let namespaces: Vec<Option<String>> = if cli.namespaces.iter().all(|n| n.trim().is_empty()) {
        vec![None]
    } else {
        cli.namespaces
            .iter()
            .filter(|n| !n.trim().is_empty())
            .map(|n| Some(n.trim().to_owned()))
            .collect()
    };
    info!(?namespaces, "kaas-operator starting");
    // One controller per watched namespace; each stops on SIGTERM.
    futures::future::join_all(
        namespaces
            .into_iter()
            .map(|ns| kaas_operator::run::run(client.clone(), ns, ctx.clone())),
    )
    .await;
    Ok(())
}
