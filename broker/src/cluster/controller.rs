//! The controller for local and multi-process clusters: probes each broker,
//! runs kaas-shared's `recompute`, and writes the assignment file when its
//! content changes.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::join_all;
use kaas_shared::{recompute, BrokerInfo, BrokerState};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::assignment_file;

#[derive(Debug, Clone)]
pub struct BrokerAddress {
    pub id: i32,
    pub host: String,
    pub port: u16,
}

impl std::str::FromStr for BrokerAddress {
    type Err = String;
    /// `ID=HOST:PORT`
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, addr) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not ID=HOST:PORT"))?;
        let (host, port) = addr
            .rsplit_once(':')
            .ok_or_else(|| format!("'{addr}' is not HOST:PORT"))?;
        Ok(BrokerAddress {
            id: id
                .parse()
                .map_err(|_| format!("'{id}' is not a broker id"))?,
            host: host.to_string(),
            port: port
                .parse()
                .map_err(|_| format!("'{port}' is not a port"))?,
        })
    }
}

#[derive(Debug, Clone)]
pub struct ControllerConfig {
    pub assignment_path: PathBuf,
    pub brokers: Vec<BrokerAddress>,
    pub probe_interval: Duration,
    /// Consecutive failed probes before a broker is declared dead.
    pub failures_before_dead: u32,
    /// How the probes connect (TLS, SASL) to the brokers' listeners.
    pub security: kaas_client::Security,
}

/// Runs until `shutdown`. Writes a first assignment after the first round
/// of probes.
pub async fn run(config: ControllerConfig, shutdown: CancellationToken) {
    let mut failures = vec![u32::MAX; config.brokers.len()];
    let mut previous = match assignment_file::read(&config.assignment_path) {
        Ok(a) => a,
        Err(e) => {
            warn!(error = %e, "ignoring an unreadable assignment file; starting afresh");
            None
        }
    };
    if let Some(p) = &previous {
        // A restarted controller trusts the brokers it had seen alive until
        // they fail their own probes.
        for (i, b) in config.brokers.iter().enumerate() {
            if p.brokers
                .iter()
                .any(|x| x.id == b.id && x.state == BrokerState::Alive)
            {
                failures[i] = 0;
            }
        }
    }
    loop {
        let probes = join_all(config.brokers.iter().map(|b| {
            let addr = format!("{}:{}", b.host, b.port);
            let timeout = config.probe_interval.max(Duration::from_millis(500));
            let security = &config.security;
            async move { kaas_client::probe::probe(&addr, timeout, security).await }
        }))
        .await;
        let mut observed = Vec::with_capacity(config.brokers.len());
        let mut active_groups = Vec::new();
        for (i, (b, result)) in config.brokers.iter().zip(probes).enumerate() {
            match result {
                Ok(r) => {
                    failures[i] = 0;
                    active_groups.extend(r.groups);
                }
                Err(e) => {
                    failures[i] = failures[i].saturating_add(1);
                    if failures[i] == config.failures_before_dead {
                        warn!(broker = b.id, error = %e, "broker failed its probes; declaring it dead");
                    }
                }
            }
            let state = if failures[i] < config.failures_before_dead {
                BrokerState::Alive
            } else {
                BrokerState::Dead
            };
            observed.push(BrokerInfo {
                id: b.id,
                host: b.host.clone(),
                port: b.port,
                state,
            });
        }
        active_groups.sort();
        active_groups.dedup();
        let next = recompute(previous.as_ref(), &observed, &active_groups);
        if previous.as_ref().map(|p| p.version) != Some(next.version) {
            match assignment_file::write(&config.assignment_path, &next) {
                Ok(()) => {
                    let alive: Vec<i32> = next
                        .brokers
                        .iter()
                        .filter(|b| b.state == BrokerState::Alive)
                        .map(|b| b.id)
                        .collect();
                    info!(
                        version = next.version,
                        ?alive,
                        entries = next.consumer_groups.len(),
                        "published assignment"
                    );
                    previous = Some(next);
                }
                Err(e) => error!(error = %e, "cannot write the assignment file; will retry"),
            }
        }
        tokio::select! {
            _ = shutdown.cancelled() => return,
            _ = tokio::time::sleep(config.probe_interval) => {}
        }
    }
}
