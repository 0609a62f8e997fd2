//! The accept loop of a listener. Takes a bound socket so tests can bind
//! port 0.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;
use tracing::{debug, error, info, info_span, warn, Instrument};

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
///
/// Connections are accepted on a thread of their own ([`accept`]), which
/// never touches the volume, and served on the runtime this is called on.
/// A request blocked in a read or write of a stalled volume holds a runtime
/// thread, and a tokio runtime with a thread blocked in a system call may
/// leave every socket unpolled until it returns; the acceptor still refuses
/// new connections at once while the volume stalls (and the volume
/// watchdog cuts the open ones), so clients go to another broker instead
/// of waiting out their request timeouts.
pub async fn run_listener(
    tcp: TcpListener,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) {
    let tracker = TaskTracker::new();
    let local = tcp.local_addr().ok();
    info!(broker = broker.id(), listener = listener.name(), addr = ?local, "listening");
    // The acceptor stops with `shutdown`, or when this future is dropped
    // (its task aborted, its runtime gone): it must not outlive what it
    // hands connections to.
    let stop_accepting = shutdown.child_token();
    let _stop_on_drop = stop_accepting.clone().drop_guard();
    let outcome = match spawn_acceptor(
        tcp,
        listener.clone(),
        broker.clone(),
        tracker.clone(),
        stop_accepting,
        shutdown,
    ) {
        Ok(accepting) => accepting
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e))),
        Err(e) => Err(e),
    };
    if let Err(e) = outcome {
        error!(broker = broker.id(), listener = listener.name(), error = %e,
               "cannot accept connections");
    }
    tracker.close();
    tracker.wait().await;
    info!(
        broker = broker.id(),
        listener = listener.name(),
        "listener stopped"
    );
}

/// Starts the acceptor's thread, with a runtime of its own, on `tcp`; it
/// hands connections to the runtime this is called on. What its accept
/// loop ended with comes through the receiver.
fn spawn_acceptor(
    tcp: TcpListener,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    tracker: TaskTracker,
    stop: CancellationToken,
    shutdown: CancellationToken,
) -> std::io::Result<tokio::sync::oneshot::Receiver<std::io::Result<()>>> {
    let tcp = tcp.into_std()?;
    let serving = tokio::runtime::Handle::current();
    let (done, accepting) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("kaas-accept".into())
        .spawn(move || {
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .and_then(|rt| {
                    rt.block_on(accept(
                        tcp, listener, broker, serving, tracker, stop, shutdown,
                    ))
                });
            let _ = done.send(result);
        })?;
    Ok(accepting)
}

/// The accept loop, on the acceptor's own runtime until `stop`: refuses a
/// connection at once while the broker cannot serve, registers it with the
/// volume watchdog, and hands it to `serving` (served until `shutdown`).
async fn accept(
    tcp: std::net::TcpListener,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    serving: tokio::runtime::Handle,
    tracker: TaskTracker,
    stop: CancellationToken,
    shutdown: CancellationToken,
) -> std::io::Result<()> {
    let tcp = TcpListener::from_std(tcp)?;
    // max.connections and max.connections.per.ip count the broker's
    // connections, whichever listener took them.
    let quotas = broker.connection_quotas.clone();
    loop {
        // At max.connections the listener waits; clients queue in the backlog.
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            _ = quotas.wait_for_slot() => {}
        }
        tokio::select! {
            _ = stop.cancelled() => return Ok(()),
            accepted = tcp.accept() => match accepted {
                Ok((stream, peer)) => {
                    if let Err(why) = broker.tenancy.status() {
                        // Nothing could be acknowledged: the client goes to another broker.
                        debug!(client = %peer, reason = %why, "closing a new connection: this broker cannot serve");
                        continue;
                    }
                    let slot = match quotas.acquire(peer.ip()) {
                        Ok(slot) => slot,
                        Err(refused) => {
                            warn!(broker = broker.id(), client = %peer, "refused a connection: {refused}");
                            continue;
                        }
                    };
                    let _ = stream.set_nodelay(true);
                    let stream = match stream.into_std() {
                        Ok(stream) => stream,
                        Err(e) => {
                            warn!(client = %peer, error = %e, "cannot hand a connection over");
                            continue;
                        }
                    };
                    // Cut when the volume stalls (crate::volume), here: the
                    // runtime that serves it may be the one held up.
                    let registered = broker.tenancy.sockets.register(&stream);
                    let (broker, listener, shutdown) = (broker.clone(), listener.clone(), shutdown.clone());
                    // Every log line of the connection names the broker and the client.
                    let span = info_span!("connection", broker = broker.id(), client = %peer);
                    tracker.spawn_on(
                        async move {
                            match TcpStream::from_std(stream) {
                                Ok(mut stream) => {
                                    serve(&mut stream, peer, listener, broker, shutdown).await;
                                    // Unregistered before the socket closes (net::sockets).
                                    drop(registered);
                                    drop(stream);
                                }
                                // Closed already (a failed registration with the
                                // runtime, which does not happen short of memory).
                                Err(e) => warn!(error = %e, "cannot serve a connection"),
                            }
                            drop(slot);
                        }
                        .instrument(span),
                        &serving,
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
}

/// A TLS handshake not finished by then closes the connection.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// One accepted connection: the TLS handshake on a TLS listener, then the
/// Kafka protocol.
async fn serve(
    stream: &mut TcpStream,
    peer: SocketAddr,
    listener: Arc<Listener>,
    broker: Arc<Broker>,
    shutdown: CancellationToken,
) {
    let Some(tls) = listener.tls.clone() else {
        // Plain TCP's halves: no lock between reading and writing.
        serve_connection(
            stream.split(),
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
