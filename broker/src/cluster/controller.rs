//! The controller for local and multi-process clusters: probes each broker,
//! runs kaas-shared's `recompute`, and writes the assignment file when its
//! content changes.

use std::path::PathBuf;
use std::time::Duration;

use futures::future::join_all;
use kaas_shared::{recompute_with, BrokerInfo, BrokerState, Endpoint};
use tokio_util::sync::CancellationToken;
use tracing::{error, info, warn};

use super::assignment_file;
use crate::settings::HostPort;

/// `--brokers`' items (split at commas): `ID=HOST:PORT` each, or
/// `ID=NAME://HOST:PORT` followed by that broker's other listeners,
/// `NAME://HOST:PORT`.
pub fn parse_brokers(items: &[String]) -> Result<Vec<BrokerAddress>, String> {
    let mut specs: Vec<String> = Vec::new();
    for item in items.iter().map(|i| i.trim()).filter(|i| !i.is_empty()) {
        match specs.last_mut() {
            Some(last) if !item.contains('=') => {
                last.push(',');
                last.push_str(item);
            }
            _ => specs.push(item.to_string()),
        }
    }
    specs.iter().map(|s| s.parse()).collect()
}

/// A broker as the controller is told of it: its inter-broker address (the
/// one probed) and, for a broker with several listeners, all of them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerAddress {
    pub id: i32,
    pub host: String,
    pub port: u16,
    pub listeners: Vec<Endpoint>,
}

impl std::str::FromStr for BrokerAddress {
    type Err = String;
    /// `ID=HOST:PORT`, or `ID=NAME://HOST:PORT,NAME2://HOST:PORT,…` for a
    /// broker with several listeners, the inter-broker one first (as its
    /// `advertised.listeners`, reordered).
    fn from_str(s: &str) -> Result<Self, String> {
        let (id, addr) = s
            .split_once('=')
            .ok_or_else(|| format!("'{s}' is not ID=HOST:PORT"))?;
        let id = id
            .parse()
            .map_err(|_| format!("'{id}' is not a broker id"))?;
        if !addr.contains("://") {
            let HostPort { host, port } = addr.parse()?;
            return Ok(BrokerAddress {
                id,
                host,
                port,
                listeners: Vec::new(),
            });
        }
        let mut listeners: Vec<Endpoint> = Vec::new();
        for item in addr.split(',') {
            let (name, addr) = item
                .split_once("://")
                .ok_or_else(|| format!("'{item}' is not NAME://HOST:PORT"))?;
            if listeners.iter().any(|l| l.name == name) {
                return Err(format!("listener '{name}' is named twice"));
            }
            let HostPort { host, port } = addr.parse()?;
            listeners.push(Endpoint {
                name: name.to_string(),
                host,
                port,
            });
        }
        Ok(BrokerAddress {
            id,
            host: listeners[0].host.clone(),
            port: listeners[0].port,
            listeners,
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
        // Every broker reads the same volume: the first answer will do.
        let mut moving = None;
        for (i, (b, result)) in config.brokers.iter().zip(probes).enumerate() {
            match result {
                Ok(r) => {
                    failures[i] = 0;
                    active_groups.extend(r.groups);
                    moving.get_or_insert(r.moving);
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
                listeners: b.listeners.clone(),
            });
        }
        active_groups.sort();
        active_groups.dedup();
        let moving = moving.unwrap_or_default();
        let next = recompute_with(previous.as_ref(), &observed, &active_groups, &moving);
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
                        moved = moving.len(),
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

#[cfg(test)]
mod tests;
