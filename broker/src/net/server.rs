//! The accept loop. Takes a bound listener so tests can bind port 0.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, info_span, warn, Instrument};

use super::connection::serve_connection;
use super::quotas::ConnectionQuotas;
use crate::broker::Broker;

/// Serves connections until `shutdown` fires, then waits for open
/// connections to finish the requests they already read.
pub async fn run(listener: TcpListener, broker: Arc<Broker>, shutdown: CancellationToken) {
    let tracker = TaskTracker::new();
    let local = listener.local_addr().ok();
    let quotas = ConnectionQuotas::new(
        broker.config.max_connections,
        broker.config.max_connections_per_ip,
    );
    info!(broker = broker.id(), addr = ?local, "listening");
    loop {
        // At max.connections the listener waits; clients queue in the backlog.
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = quotas.wait_for_slot() => {}
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let slot = match quotas.acquire(peer.ip()) {
                        Ok(slot) => slot,
                        Err(refused) => {
                            warn!(broker = broker.id(), client = %peer, "refused a connection: {refused}");
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let broker = broker.clone();
                    let shutdown = shutdown.clone();
                    // Every log line of the connection names the broker and the client.
                    let span = info_span!("connection", broker = broker.id(), client = %peer);
                    tracker.spawn(
                        async move {
                            serve_connection(stream, peer, broker, shutdown).await;
                            drop(slot);
                        }
                        .instrument(span),
                    );
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, go on.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracker.close();
    tracker.wait().await;
    info!(broker = broker.id(), "listener stopped");
}
