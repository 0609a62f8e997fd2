//! The accept loop. Takes a bound listener so tests can bind port 0.

use std::sync::Arc;

use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{info, warn};

use super::connection::serve_connection;
use crate::broker::Broker;

/// Serves connections until `shutdown` fires, then waits for open
/// connections to finish the requests they already read.
pub async fn run(listener: TcpListener, broker: Arc<Broker>, shutdown: CancellationToken) {
    let tracker = TaskTracker::new();
    let local = listener.local_addr().ok();
    info!(broker = broker.id(), addr = ?local, "listening");
    loop {
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, peer)) => {
                    let _ = stream.set_nodelay(true);
                    let broker = broker.clone();
                    let shutdown = shutdown.clone();
                    tracker.spawn(async move {
                        serve_connection(stream, peer, broker, shutdown).await;
                    });
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
