//! The embedded default end to end: a 3-broker local cluster, librdkafka
//! producing 100,000 messages with acks=all to a 6-partition topic and
//! reading exactly those back, in order, from every broker's address,
//! before and after a restart of the whole cluster.

mod common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::{consume_all, create_topic};
use futures::future::join_all;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use rdkafka::producer::{FutureProducer, FutureRecord};

const MESSAGES: usize = 100_000;
const PARTITIONS: i32 = 6;

fn config(dir: &std::path::Path) -> LocalClusterConfig {
    let mut c = LocalClusterConfig::new(3, dir.to_path_buf());
    c.base_port = 0;
    c
}

/// What each partition must hold: message i goes to partition i % 6.
fn expected() -> BTreeMap<i32, Vec<String>> {
    let mut m: BTreeMap<i32, Vec<String>> = BTreeMap::new();
    for i in 0..MESSAGES {
        m.entry((i % PARTITIONS as usize) as i32)
            .or_default()
            .push(format!("message-{i}"));
    }
    m
}

fn check(got: BTreeMap<i32, Vec<(i64, String)>>, from: &str) {
    let want = expected();
    assert_eq!(got.len(), want.len(), "partitions read from {from}");
    for (p, msgs) in got {
        let offsets: Vec<i64> = msgs.iter().map(|(o, _)| *o).collect();
        assert_eq!(
            offsets,
            (0..offsets.len() as i64).collect::<Vec<_>>(),
            "offsets of p{p} from {from}"
        );
        let payloads: Vec<String> = msgs.into_iter().map(|(_, v)| v).collect();
        assert_eq!(payloads, want[&p], "payloads of p{p} from {from}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundred_thousand_messages_round_trip_through_every_broker_and_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    create_topic(&bootstrap, "orders", PARTITIONS).await;

    // Idempotent: a batch retried after a later one (a leader that moved
    // under load, a timeout) keeps its place, as Kafka promises only then.
    let producer: FutureProducer = common::client_config(&bootstrap)
        .set("acks", "all")
        .set("enable.idempotence", "true")
        .set("linger.ms", "5")
        .set("queue.buffering.max.messages", "200000")
        .create()
        .unwrap();
    let sends = (0..MESSAGES).map(|i| {
        let producer = producer.clone();
        async move {
            let payload = format!("message-{i}");
            let record = FutureRecord::<(), _>::to("orders")
                .partition((i % PARTITIONS as usize) as i32)
                .payload(&payload);
            producer.send(record, Duration::from_secs(60)).await
        }
    });
    for (i, r) in join_all(sends).await.into_iter().enumerate() {
        let delivery = r.unwrap_or_else(|(e, _)| panic!("message {i} not acknowledged: {e}"));
        assert_eq!(delivery.partition, (i % PARTITIONS as usize) as i32);
    }

    for addr in &cluster.addrs {
        let addr = addr.to_string();
        let got = tokio::task::block_in_place(|| {
            consume_all(
                &addr,
                "orders",
                PARTITIONS,
                MESSAGES,
                Duration::from_secs(120),
            )
        });
        check(got, &addr);
    }

    cluster.shutdown().await;
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    let got = tokio::task::block_in_place(|| {
        consume_all(
            &bootstrap,
            "orders",
            PARTITIONS,
            MESSAGES,
            Duration::from_secs(120),
        )
    });
    check(got, "the restarted cluster");
    cluster.shutdown().await;
}

/// Each codec librdkafka writes (gzip, snappy as raw blocks, lz4 frames)
/// is checked, stored and read back record for record. (zstd too, from
/// confluent-kafka's librdkafka in `e2e/clients/python/record_configs.py`:
/// the rdkafka crate here is built without libzstd.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_codec_librdkafka_writes_is_stored_and_read_back() {
    const COUNT: usize = 2_000;
    let dir = tempfile::tempdir().unwrap();
    let cluster = LocalCluster::start(config(dir.path())).await.unwrap();
    let bootstrap = cluster.bootstrap();
    for codec in ["none", "gzip", "snappy", "lz4"] {
        let topic = format!("codec-{codec}");
        create_topic(&bootstrap, &topic, 1).await;
        let producer: FutureProducer = common::client_config(&bootstrap)
            .set("acks", "all")
            .set("compression.codec", codec)
            .set("linger.ms", "20")
            .create()
            .unwrap();
        let payload = |i: usize| format!("{codec}-{i}-{}", "x".repeat(i % 300));
        let sends = (0..COUNT).map(|i| {
            let producer = producer.clone();
            let topic = topic.clone();
            async move {
                let value = payload(i);
                let record = FutureRecord::<(), _>::to(&topic).payload(&value);
                producer.send(record, Duration::from_secs(30)).await
            }
        });
        for (i, r) in join_all(sends).await.into_iter().enumerate() {
            r.unwrap_or_else(|(e, _)| panic!("{codec} message {i} not acknowledged: {e}"));
        }
        let got = tokio::task::block_in_place(|| {
            consume_all(&bootstrap, &topic, 1, COUNT, Duration::from_secs(60))
        });
        let read: Vec<String> = got[&0].iter().map(|(_, v)| v.clone()).collect();
        let sent: Vec<String> = (0..COUNT).map(payload).collect();
        assert_eq!(read, sent, "{codec}");
    }
    cluster.shutdown().await;
}
