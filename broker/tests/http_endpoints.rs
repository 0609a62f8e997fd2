//! Health, readiness and Prometheus metrics over HTTP.

use std::io::{Read, Write};

use kaas_broker::local::{LocalCluster, LocalClusterConfig};

/// A plain HTTP/1.1 GET; returns (status, body).
fn get(addr: std::net::SocketAddr, path: &str) -> (u16, String) {
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw[9..12].parse().unwrap();
    let body = raw
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(2, dir.path().to_path_buf());
    config.base_port = 0;
    config.http = Some("127.0.0.1:0".parse().unwrap());
    let cluster = LocalCluster::start(config).await.unwrap();
    let http = cluster.http_addrs.clone();
    let (health, ready, metrics, missing) = tokio::task::spawn_blocking(move || {
        (
            get(http[0], "/healthz"),
            get(http[1], "/readyz"),
            get(http[0], "/metrics"),
            get(http[0], "/nope"),
        )
    })
    .await
    .unwrap();
    assert_eq!(health, (200, "ok\n".to_string()));
    assert_eq!(ready.0, 200, "{}", ready.1);
    assert!(ready.1.contains("assignment version"));
    assert_eq!(metrics.0, 200);
    // The controller's probes went through the broker and were counted.
    assert!(
        metrics
            .1
            .contains("kaas_requests_total{api=\"ApiVersions\"}"),
        "{}",
        metrics.1
    );
    assert!(
        metrics.1.contains("kaas_assignment_version "),
        "{}",
        metrics.1
    );
    assert_eq!(missing.0, 404);
    cluster.shutdown().await;
}
