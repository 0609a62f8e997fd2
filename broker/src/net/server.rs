//! The accept loop of a listener. Takes a bound socket so tests can bind
//! port 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, info, info_span, warn, Instrument};

use super::connection::serve_connection;
use super::listener::Listener;
use crate::auth::Principal;
use crate::broker::Broker;

/// Serves the broker's first (inter-broker) listener on `tcp`: see
/// [`run_listener`].
pub async fn run(tcp: TcpListener, broker: Arc<Broker>, shutdown: CancellationToken) {
    let listener = broker.listeners[0].clone();
    run_listener(tcp, listener, broker, shutdown).await
}

/// Serves connections to `listener` accepted on `tcp` until `shutdown`
/// fires, then waits for open connections to finish the requests they
/// already read.
pub async fn run_listener(
    tcp: TcpListener,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) {
    let tracker = TaskTracker::new();
    let local = tcp.local_addr().ok();
    // max.connections and max.connections.per.ip count the broker's
    // connections, whichever listener took them.
    let quotas = broker.connection_quotas.clone();
    info!(broker = broker.id(), listener = listener.name(), addr = ?local, "listening");
    loop {
        // At max.connections the listener waits; clients queue in the backlog.
        tokio::select! {
            _ = shutdown.cancelled() => break,
            _ = quotas.wait_for_slot() => {}
        }
        tokio::select! {
            _ = shutdown.cancelled() => break,
            accepted = tcp.accept() => match accepted {
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
                    let listener = listener.clone();
                    let shutdown = shutdown.clone();
                    // Every log line of the connection names the broker and the client.
                    let span = info_span!("connection", broker = broker.id(), client = %peer);
                    tracker.spawn(
                        async move {
                            serve(stream, peer, listener, broker, shutdown).await;
                            drop(slot);
                        }
                        .instrument(span),
                    );
                }
                Err(e) => {
                    // Out of file descriptors and the like: back off, go on.
                    warn!(error = %e, "accept failed");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                }
            }
        }
    }
    tracker.close();
    tracker.wait().await;
    info!(
        broker = broker.id(),
        listener = listener.name(),
        "listener stopped"
    );
}

/// A TLS handshake not finished by then closes the connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One accepted connection: the TLS handshake on a TLS listener, then the
/// Kafka protocol.
async fn serve(
    stream: TcpStream,
    peer: SocketAddr,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) {
    if let Err(why) = broker.tenancy.status() {
        // Nothing could be acknowledged: the client goes to another broker.
        debug!(client = %peer, reason = %why, "closing a new connection: the volume does not answer");
        return;
    }
    // Cut when the volume stalls (crate::volume); until the connection ends.
    let _registered = broker.tenancy.sockets.register(&stream);
    let Some(tls) = listener.tls.clone() else {
        // Plain TCP's owned halves: no lock between reading and writing.
        serve_connection(
            stream.into_split(),
            peer,
            listener,
            Principal::anonymous(),
            broker,
            shutdown,
        )
        .await;
        return;
    };
    let handshake = tokio::time::timeout(HANDSHAKE_TIMEOUT, tls.acceptor().accept(stream));
    let stream = tokio::select! {
        _ = shutdown.cancelled() => return,
        done = handshake => match done {
            Ok(Ok(stream)) => stream,
            Ok(Err(e)) => {
                warn!(client = %peer, error = %e, "TLS handshake failed");
                broker.metrics.failed_authentications.inc();
                return;
            }
            Err(_) => {
                warn!(client = %peer, "TLS handshake not finished in {HANDSHAKE_TIMEOUT:?}: closing");
                return;
            }
        },
    };
    // A client certificate names the principal (a SASL exchange may still
    // replace it).
    let principal = match tls.principal(stream.get_ref().1) {
        Ok(p) => p,
        Err(e) => {
            warn!(client = %peer, error = %e, "refused a client certificate");
            broker.metrics.failed_authentications.inc();
            return;
        }
    };
    debug!(client = %peer, %principal, "TLS established");
    let halves = tokio::io::split(stream);
    serve_connection(halves, peer, listener, principal, broker, shutdown).await;
}
