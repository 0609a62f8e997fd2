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

/// `/debug/groups` lists the groups a broker holds in memory, under the
/// assignment version it follows: a committed group shows on its
/// coordinator only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn debug_groups_lists_resident_groups_on_their_coordinator() {
    use kafka_protocol::messages::offset_commit_request::{
        OffsetCommitRequestPartition, OffsetCommitRequestTopic,
    };
    use kafka_protocol::messages::{GroupId, OffsetCommitRequest, TopicName};
    use kafka_protocol::protocol::StrBytes;

    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(2, dir.path().to_path_buf());
    config.base_port = 0;
    config.http = Some("127.0.0.1:0".parse().unwrap());
    let cluster = LocalCluster::start(config).await.unwrap();
    cluster.brokers[0]
        .storage
        .topics
        .create_blocking("t", 1, Default::default(), false)
        .unwrap();
    let group = "debug-groups-probe";
    let routing = cluster.brokers[0].routing().expect("assignment");
    let owner = routing.owner_of_group(group).expect("an owner") as usize;
    let mut client = kaas_client::KafkaClient::connect(
        &cluster.addrs[owner].to_string(),
        std::time::Duration::from_secs(5),
    )
    .await
    .unwrap();
    let commit = OffsetCommitRequest::default()
        .with_group_id(GroupId(StrBytes::from_static_str(group)))
        .with_generation_id_or_member_epoch(-1)
        .with_topics(vec![OffsetCommitRequestTopic::default()
            .with_name(TopicName(StrBytes::from_static_str("t")))
            .with_partitions(vec![OffsetCommitRequestPartition::default()
                .with_partition_index(0)
                .with_committed_offset(7)])]);
    let resp = client.send(&commit, 7).await.unwrap();
    assert_eq!(resp.topics[0].partitions[0].error_code, 0);

    let http = cluster.http_addrs.clone();
    let answers = tokio::task::spawn_blocking(move || {
        http.iter()
            .map(|a| get(*a, "/debug/groups"))
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    for (id, (status, body)) in answers.iter().enumerate() {
        assert_eq!(*status, 200, "{body}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert_eq!(v["broker"], id as i64, "{body}");
        assert_eq!(v["assignment_version"], routing.version(), "{body}");
        let resident: Vec<&str> = v["resident"]
            .as_array()
            .unwrap()
            .iter()
            .map(|g| g.as_str().unwrap())
            .collect();
        assert_eq!(resident.contains(&group), id == owner, "{body}");
    }
    cluster.shutdown().await;
}
