//! Chaos: every so often `kill -9` one broker, then start it again, either
//! at once (its groups may never have moved, and it reloads them) or once
//! the controller has declared it dead and moved its groups (then they come
//! back). One broker down at most, so a majority always serves.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::cluster::Cluster;
use crate::stats::Stats;

pub struct Chaos {
    pub cluster: Arc<Cluster>,
    pub stats: Arc<Stats>,
    pub every: Duration,
    /// Chance a killed broker restarts at once rather than after the
    /// controller moved its groups away.
    pub p_immediate: f64,
    pub stop: Arc<AtomicBool>,
}

impl Chaos {
    async fn nap(&self, d: Duration) -> bool {
        let end = tokio::time::Instant::now() + d;
        while tokio::time::Instant::now() < end {
            if self.stop.load(Ordering::SeqCst) {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
        true
    }

    /// Runs until `stop`; every broker is up and alive when it returns (or
    /// the error says which is not).
    pub async fn run(self) -> anyhow::Result<()> {
        let n = self.cluster.len();
        while self.nap(self.every).await {
            let id = rand::random_range(0..n);
            if !self.cluster.is_up(id) {
                continue;
            }
            self.cluster.kill(id);
            self.stats.kills.inc();
            let immediate = rand::random_bool(self.p_immediate);
            if immediate {
                self.stats.restarts_at_once.inc();
                self.stats
                    .event(&format!("chaos: kill -9 broker {id}, restarting at once"));
            } else {
                self.stats.event(&format!(
                    "chaos: kill -9 broker {id}, restarting once its groups moved"
                ));
                if !self.cluster.wait_dead(id, Duration::from_secs(20)).await {
                    self.stats
                        .event(&format!("chaos: broker {id} never declared dead"));
                }
                // A little longer down, sometimes: its groups settle elsewhere.
                tokio::time::sleep(Duration::from_millis(rand::random_range(0..5000))).await;
            }
            self.cluster.spawn_broker(id)?;
            self.stats.restarts.inc();
            self.cluster
                .wait_alive(&[id], Duration::from_secs(30))
                .await?;
            self.stats.event(&format!("chaos: broker {id} alive again"));
        }
        Ok(())
    }
}
