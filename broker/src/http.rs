//! The broker's HTTP endpoints: `/healthz` (the process serves),
//! `/serving` (its data volume answers and no other broker fenced it: what
//! a pod's readiness asks), `/readyz` (that, and it follows an assignment
//! that counts it alive) and `/metrics`
//! (Prometheus text), and `/debug/groups` (the groups held in memory, for
//! the soak's ownership check).

use std::convert::Infallible;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tracing::{info, warn};

use crate::broker::Broker;

fn reply(status: StatusCode, content_type: &str, body: String) -> Response<Full<Bytes>> {
    Response::builder()
        .status(status)
        .header("content-type", content_type)
        .body(Full::new(Bytes::from(body)))
        .expect("static response parts are valid")
}

fn route(broker: &Broker, req: &Request<Incoming>) -> Response<Full<Bytes>> {
    match req.uri().path() {
        "/healthz" => reply(StatusCode::OK, "text/plain", "ok\n".into()),
        "/serving" => match broker.tenancy.status() {
            Ok(()) => reply(StatusCode::OK, "text/plain", "serving\n".into()),
            Err(why) => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!("not serving: {why}\n"),
            ),
        },
        "/readyz" => match (broker.routing(), broker.tenancy.status()) {
            (_, Err(why)) => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!("not ready: {why}\n"),
            ),
            (Some(r), Ok(())) if broker.is_alive_in(&r) => reply(
                StatusCode::OK,
                "text/plain",
                format!("ready: assignment version {}\n", r.version()),
            ),
            (Some(r), Ok(())) => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                format!(
                    "not ready: assignment version {} does not count this broker alive\n",
                    r.version()
                ),
            ),
            (None, Ok(())) => reply(
                StatusCode::SERVICE_UNAVAILABLE,
                "text/plain",
                "not ready: no assignment yet\n".into(),
            ),
        },
        "/metrics" => {
            broker.refresh_gauges();
            reply(
                StatusCode::OK,
                "application/openmetrics-text; version=1.0.0; charset=utf-8",
                broker.metrics.render(),
            )
        }
        "/debug/groups" => reply(StatusCode::OK, "application/json", debug_groups(broker)),
        _ => reply(StatusCode::NOT_FOUND, "text/plain", "not found\n".into()),
    }
}

/// The broker id, the assignment version it follows and every group
/// resident in its memory. A new assignment is installed before its sweep
/// runs, so an answer taken in between may list a group the version no
/// longer gives this broker: a checker must see it twice to call it a leak.
fn debug_groups(broker: &Broker) -> String {
    let version = broker.routing().map_or(0, |r| r.version());
    let resident = broker.groups.read(|core| core.resident_groups());
    serde_json::json!({
        "broker": broker.id(),
        "assignment_version": version,
        "resident": resident,
    })
    .to_string()
}

/// Serves the endpoints on a bound listener until `shutdown`.
pub async fn run(listener: TcpListener, broker: Arc<Broker>, shutdown: CancellationToken) {
    info!(addr = ?listener.local_addr().ok(), "http endpoints listening");
    loop {
        let (stream, _) = tokio::select! {
            _ = shutdown.cancelled() => return,
            accepted = listener.accept() => match accepted {
                Ok(a) => a,
                Err(e) => {
                    // Out of file descriptors and the like: back off, go on
                    // (as the Kafka listener does), rather than spin.
                    warn!(error = %e, "http accept failed");
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                }
            },
        };
        let broker = broker.clone();
        tokio::spawn(async move {
            let service = service_fn(move |req: Request<Incoming>| {
                let broker = broker.clone();
                async move {
                    if req.uri().path() == "/metrics" {
                        crate::lag::refresh(&broker).await;
                    }
                    Ok::<_, Infallible>(route(&broker, &req))
                }
            });
            let _ = http1::Builder::new()
                .serve_connection(TokioIo::new(stream), service)
                .await;
        });
    }
}
