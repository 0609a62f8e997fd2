//! Health, readiness and Prometheus metrics over HTTP.

mod common;

use common::http_get as get;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_readiness_and_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(2, dir.path().to_path_buf());
    config.base_port = 0;
    config.http = Some("127.0.0.1:0".parse().unwrap());
    let cluster = LocalCluster::start(config).await.unwrap();
    let http = cluster.http_addrs.clone();
    let (health, ready, serving, metrics, missing) = tokio::task::spawn_blocking(move || {
        (
            get(http[0], "/healthz"),
            get(http[1], "/readyz"),
            get(http[1], "/serving"),
            get(http[0], "/metrics"),
            get(http[0], "/nope"),
        )
    })
    .await
    .unwrap();
    assert_eq!(health, (200, "ok\n".to_string()));
    assert_eq!(ready.0, 200, "{}", ready.1);
    assert!(ready.1.contains("assignment version"));
    assert_eq!(serving, (200, "serving\n".to_string()));
    assert_eq!(metrics.0, 200);
    assert!(metrics.1.contains("kaas_volume_healthy 1"), "{}", metrics.1);
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

/// Lag on `/metrics` matches what a client computes: librdkafka's committed
/// offsets of a group (OffsetFetch) and the partitions' high watermarks.
/// Only the group's coordinator exports the group's series; each leader
/// exports its partitions' end offsets.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lag_metrics_match_the_committed_offsets_and_high_watermarks() {
    use rdkafka::consumer::{BaseConsumer, CommitMode, Consumer};
    use rdkafka::producer::{FutureProducer, FutureRecord};
    use rdkafka::{ClientConfig, Offset, TopicPartitionList};
    use std::time::Duration;

    const TOPIC: &str = "lagged";
    const GROUP: &str = "lag-metrics";
    const PARTITIONS: i32 = 6;
    let dir = tempfile::tempdir().unwrap();
    let mut config = LocalClusterConfig::new(3, dir.path().to_path_buf());
    config.base_port = 0;
    config.http = Some("127.0.0.1:0".parse().unwrap());
    let cluster = LocalCluster::start(config).await.unwrap();
    cluster.brokers[0]
        .storage
        .topics
        .create_blocking(TOPIC, PARTITIONS, Default::default(), false)
        .unwrap();
    let bootstrap = cluster.bootstrap();
    let producer: FutureProducer = ClientConfig::new()
        .set("bootstrap.servers", &bootstrap)
        .set("acks", "all")
        .create()
        .unwrap();
    for i in 0..60 {
        producer
            .send(
                FutureRecord::<(), _>::to(TOPIC)
                    .partition(i % PARTITIONS)
                    .payload("x"),
                Duration::from_secs(10),
            )
            .await
            .unwrap();
    }
    let b = bootstrap.clone();
    let (committed, ends) = tokio::task::spawn_blocking(move || {
        let consumer: BaseConsumer = ClientConfig::new()
            .set("bootstrap.servers", &b)
            .set("group.id", GROUP)
            .create()
            .unwrap();
        let mut tpl = TopicPartitionList::new();
        for p in 0..PARTITIONS {
            // Partition p committed at 2p: partition 5 at its end (lag 0).
            tpl.add_partition_offset(TOPIC, p, Offset::Offset(2 * i64::from(p)))
                .unwrap();
        }
        consumer.commit(&tpl, CommitMode::Sync).unwrap();
        let committed: Vec<i64> = consumer
            .committed_offsets(tpl, Duration::from_secs(10))
            .unwrap()
            .elements()
            .iter()
            .map(|e| e.offset().to_raw().unwrap())
            .collect();
        let ends: Vec<i64> = (0..PARTITIONS)
            .map(|p| {
                consumer
                    .fetch_watermarks(TOPIC, p, Duration::from_secs(10))
                    .unwrap()
                    .1
            })
            .collect();
        (committed, ends)
    })
    .await
    .unwrap();
    assert_eq!(committed, [0, 2, 4, 6, 8, 10]);
    assert_eq!(ends, [10; 6]);

    let http = cluster.http_addrs.clone();
    let scraped = tokio::task::spawn_blocking(move || {
        http.iter()
            .map(|a| get(*a, "/metrics").1)
            .collect::<Vec<_>>()
    })
    .await
    .unwrap();
    let routing = cluster.brokers[0].routing().unwrap();
    let coordinator = routing.owner_of_group(GROUP).unwrap() as usize;
    for (id, text) in scraped.iter().enumerate() {
        for p in 0..PARTITIONS {
            let labels = format!("{{group=\"{GROUP}\",topic=\"{TOPIC}\",partition=\"{p}\"}}");
            let lag = format!(
                "kaas_group_lag{labels} {}",
                ends[p as usize] - committed[p as usize]
            );
            let end = format!("kaas_group_log_end_offset{labels} {}", ends[p as usize]);
            let offset = format!(
                "kaas_group_committed_offset{labels} {}",
                committed[p as usize]
            );
            for line in [&lag, &end, &offset] {
                assert_eq!(
                    text.lines().any(|l| l == line.as_str()),
                    id == coordinator,
                    "broker {id}, coordinator {coordinator}: {line}\n{text}"
                );
            }
            let led_here = routing.owner_of_partition(TOPIC, p) == Some(id as i32);
            let leo =
                format!("kaas_partition_log_end_offset{{topic=\"{TOPIC}\",partition=\"{p}\"}} 10");
            assert_eq!(
                text.lines().any(|l| l == leo),
                led_here,
                "broker {id}: {leo}\n{text}"
            );
        }
    }
    let sum = format!("kaas_group_topic_lag{{group=\"{GROUP}\",topic=\"{TOPIC}\"}} 30");
    assert!(
        scraped[coordinator].lines().any(|l| l == sum),
        "{}",
        scraped[coordinator]
    );
    cluster.shutdown().await;

    // Restarted, the group not used since: its coordinator reads its log
    // (without loading it) and exports the same lag.
    let mut config = LocalClusterConfig::new(3, dir.path().to_path_buf());
    config.base_port = 0;
    config.http = Some("127.0.0.1:0".parse().unwrap());
    let cluster = LocalCluster::start(config).await.unwrap();
    let at = cluster.http_addrs[coordinator];
    let text = tokio::task::spawn_blocking(move || get(at, "/metrics").1)
        .await
        .unwrap();
    for p in 0..PARTITIONS {
        let labels = format!("{{group=\"{GROUP}\",topic=\"{TOPIC}\",partition=\"{p}\"}}");
        let lag = format!("kaas_group_lag{labels} {}", 10 - 2 * p);
        assert!(
            text.lines().any(|l| l == lag),
            "after a restart: {lag}\n{text}"
        );
    }
    assert!(
        text.lines().any(|l| l == sum),
        "after a restart: {sum}\n{text}"
    );
    assert_eq!(
        cluster.brokers[coordinator]
            .groups
            .read(|c| c.num_resident_groups()),
        0,
        "read, not loaded"
    );
    cluster.shutdown().await;
}
