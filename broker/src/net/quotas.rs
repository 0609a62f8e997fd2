//! Kafka's connection quotas: `max.connections` (broker-wide: the listener
//! stops accepting until a connection closes, as Apache's acceptor waits
//! for a slot) and `max.connections.per.ip` (a connection over it is closed
//! at once, with a log line naming the address).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;

pub struct ConnectionQuotas {
    max: usize,
    max_per_ip: usize,
    counts: Mutex<Counts>,
    /// A connection closed: the listener may accept again.
    freed: Notify,
}

#[derive(Default)]
struct Counts {
    total: usize,
    per_ip: HashMap<IpAddr, usize>,
}

/// Why a connection was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Refused {
    #[error("the broker already has the configured maximum of {0} connections (max.connections)")]
    Broker(usize),
    #[error(
        "the address already has the configured maximum of {0} connections \
         (max.connections.per.ip)"
    )]
    PerIp(usize),
}

/// One open connection's place in the quotas, given back when dropped.
pub struct ConnectionSlot {
    quotas: Arc<ConnectionQuotas>,
    ip: IpAddr,
}

impl ConnectionQuotas {
    /// Quotas of `max` connections in all and `max_per_ip` from one address.
    pub fn new(max: usize, max_per_ip: usize) -> Arc<ConnectionQuotas> {
        Arc::new(ConnectionQuotas {
            max,
            max_per_ip,
            counts: Mutex::new(Counts::default()),
            freed: Notify::new(),
        })
    }

    /// Returns once the broker is below `max.connections`.
    pub async fn wait_for_slot(&self) {
        loop {
            let freed = self.freed.notified();
            if self.counts.lock().total < self.max {
                return;
            }
            freed.await;
        }
    }

    /// Counts a new connection from `ip`, or says why it may not stay.
    pub fn acquire(self: &Arc<Self>, ip: IpAddr) -> Result<ConnectionSlot, Refused> {
        let mut counts = self.counts.lock();
        if counts.total >= self.max {
            return Err(Refused::Broker(self.max));
        }
        let from_ip = counts.per_ip.entry(ip).or_insert(0);
        if *from_ip >= self.max_per_ip {
            if *from_ip == 0 {
                counts.per_ip.remove(&ip);
            }
            return Err(Refused::PerIp(self.max_per_ip));
        }
        *from_ip += 1;
        counts.total += 1;
        Ok(ConnectionSlot {
            quotas: self.clone(),
            ip,
        })
    }

    /// Connections counted now.
    pub fn open(&self) -> usize {
        self.counts.lock().total
    }
}

impl Drop for ConnectionSlot {
    fn drop(&mut self) {
        let mut counts = self.quotas.counts.lock();
        counts.total -= 1;
        if let Some(n) = counts.per_ip.get_mut(&self.ip) {
            *n -= 1;
            if *n == 0 {
                counts.per_ip.remove(&self.ip);
            }
        }
        drop(counts);
        self.quotas.freed.notify_waiters();
    }
}

#[cfg(test)]
mod tests;
