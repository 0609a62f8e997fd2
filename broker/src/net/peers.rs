//! Connections to the other brokers, kept open between calls: a broker's
//! own requests (WriteTxnMarkers, transaction verification) would otherwise
//! pay a TCP, TLS and SCRAM handshake each.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use kaas_client::{KafkaClient, Security};
use kafka_protocol::protocol::{Decodable, HeaderVersion, Request};

/// Idle connections kept per broker; more in use at once are opened and
/// closed as needed.
const IDLE_PER_PEER: usize = 4;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

pub struct Peers {
    security: Security,
    idle: parking_lot::Mutex<HashMap<String, Vec<KafkaClient>>>,
    opened: AtomicU64,
}

impl std::fmt::Debug for Peers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Peers").finish_non_exhaustive()
    }
}

impl Peers {
    /// Connections that speak `security` (the broker's inter-broker TLS and
    /// login).
    pub fn new(security: Security) -> Peers {
        Peers {
            security,
            idle: parking_lot::Mutex::new(HashMap::new()),
            opened: AtomicU64::new(0),
        }
    }

    fn idle(&self) -> parking_lot::MutexGuard<'_, HashMap<String, Vec<KafkaClient>>> {
        self.idle.lock()
    }

    /// Sends `req` at `version` to the broker at `addr` (`host:port`) and
    /// returns its answer. A kept connection the peer has closed meanwhile
    /// (a restart, an expired session) is replaced once by a new one, so
    /// `req` must be safe to send twice, as the broker's own requests are.
    pub async fn send<R>(&self, addr: &str, req: &R, version: i16) -> anyhow::Result<R::Response>
    where
        R: Request,
        R::Response: Decodable + HeaderVersion,
    {
        let kept = self.idle().get_mut(addr).and_then(Vec::pop);
        if let Some(mut client) = kept {
            if let Ok(response) = client.send(req, version).await {
                self.keep(addr, client);
                return Ok(response);
            }
        }
        let mut client = KafkaClient::connect_as(addr, CONNECT_TIMEOUT, &self.security).await?;
        self.opened.fetch_add(1, Ordering::Relaxed);
        let response = client.send(req, version).await?;
        self.keep(addr, client);
        Ok(response)
    }

    fn keep(&self, addr: &str, client: KafkaClient) {
        let mut idle = self.idle();
        let kept = idle.entry(addr.to_string()).or_default();
        if kept.len() < IDLE_PER_PEER {
            kept.push(client);
        }
    }

    /// Connections kept open now (all peers).
    pub fn idle_count(&self) -> usize {
        self.idle().values().map(Vec::len).sum()
    }

    /// Connections opened so far (all peers).
    pub fn opened(&self) -> u64 {
        self.opened.load(Ordering::Relaxed)
    }
}
