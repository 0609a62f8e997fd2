//! Client quotas on the wire (issue #33): a request flood over its
//! `request_percentage` is throttled (`throttle_time_ms`, the connection
//! muted) while another client is not; quotas set through one broker are
//! described by every broker and survive a restart of the cluster.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use kaas_broker::client_quotas::rate::RateConfig;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_client::KafkaClient;
use kafka_protocol::messages::alter_client_quotas_request::{EntityData, EntryData, OpData};
use kafka_protocol::messages::describe_client_quotas_request::ComponentData;
use kafka_protocol::messages::{
    AlterClientQuotasRequest, DescribeClientQuotasRequest, MetadataRequest,
};
use kafka_protocol::protocol::StrBytes;

const WAIT: Duration = Duration::from_secs(10);

async fn cluster(dir: &std::path::Path, brokers: usize) -> LocalCluster {
    let mut config = LocalClusterConfig::new(brokers, dir.to_path_buf());
    config.base_port = 0;
    // Rates over 2 windows of 1 s (Apache's default is 11): quick tests.
    config.tune = |b| {
        b.quota_window = RateConfig {
            samples: 2,
            window_ms: 1000,
        }
    };
    LocalCluster::start(config).await.unwrap()
}

async fn client(cluster: &LocalCluster, broker: usize, client_id: &str) -> KafkaClient {
    KafkaClient::connect(&cluster.addrs[broker].to_string(), WAIT)
        .await
        .unwrap()
        .with_client_id(client_id)
}

/// Sets `key` of the entity `client-id=<client_id>`.
async fn set_quota(admin: &mut KafkaClient, client_id: &str, key: &str, value: f64) {
    let entry = EntryData::default()
        .with_entity(vec![EntityData::default()
            .with_entity_type(StrBytes::from_static_str("client-id"))
            .with_entity_name(Some(StrBytes::from_string(
                client_id.to_string(),
            )))])
        .with_ops(vec![OpData::default()
            .with_key(StrBytes::from_string(key.to_string()))
            .with_value(value)]);
    let r = admin
        .send(
            &AlterClientQuotasRequest::default().with_entries(vec![entry]),
            1,
        )
        .await
        .unwrap();
    assert_eq!(
        r.entries[0].error_code, 0,
        "{:?}",
        r.entries[0].error_message
    );
}

/// Every client-id quota a broker describes.
async fn client_id_quotas(c: &mut KafkaClient) -> BTreeMap<String, BTreeMap<String, f64>> {
    let r = c
        .send(
            &DescribeClientQuotasRequest::default().with_components(vec![ComponentData::default()
                .with_entity_type(StrBytes::from_static_str("client-id"))
                .with_match_type(2)
                // kafka-protocol's default is "", not null.
                .with_match(None)]),
            1,
        )
        .await
        .unwrap();
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.entries
        .unwrap_or_default()
        .iter()
        .map(|e| {
            let name = e.entity[0].entity_name.as_deref().unwrap_or("").to_string();
            let values = e
                .values
                .iter()
                .map(|v| (v.key.to_string(), v.value))
                .collect();
            (name, values)
        })
        .collect()
}

/// Metadata requests one after another until one answers a throttle
/// (bounded); how many were answered and the throttle seen.
async fn flood(c: &mut KafkaClient, most: usize) -> (usize, i32) {
    for n in 1..=most {
        let r = c
            .send(&MetadataRequest::default().with_topics(None), 12)
            .await
            .unwrap();
        if r.throttle_time_ms > 0 {
            return (n, r.throttle_time_ms);
        }
    }
    (most, 0)
}

/// `request_percentage` of 1 (a hundredth of one thread's time): a client
/// flooding Metadata requests is soon answered with a throttle and its
/// connection muted for it; a client without a quota flooding beside it is
/// never throttled; the throttle is counted on `/metrics`' counters.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn request_percentage_holds_a_request_flood() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path(), 1).await;
    let mut admin = client(&cluster, 0, "admin").await;
    set_quota(&mut admin, "flood", "request_percentage", 1.0).await;

    let mut flooding = client(&cluster, 0, "flood").await;
    let (answered, throttle_ms) = flood(&mut flooding, 100_000).await;
    assert!(
        throttle_ms > 0,
        "no throttle after {answered} Metadata requests over 1% of a thread"
    );
    // Muted: the next request is not served before the throttle ends.
    let asked = Instant::now();
    flooding
        .send(&MetadataRequest::default().with_topics(None), 12)
        .await
        .unwrap();
    assert!(
        asked.elapsed() >= Duration::from_millis(throttle_ms as u64 * 9 / 10),
        "answered {:?} into a {throttle_ms} ms throttle",
        asked.elapsed()
    );

    let mut free = client(&cluster, 0, "free").await;
    assert_eq!(
        flood(&mut free, answered).await.1,
        0,
        "a client without a quota"
    );

    let text = cluster.brokers[0].metrics.render();
    assert!(
        text.lines()
            .any(|l| l.starts_with("kaas_throttled_responses_total{quota=\"request\"} ")),
        "{text}"
    );
    cluster.shutdown().await;
}

/// Quotas set through one broker are described by every broker (each
/// follows them on the volume) and by the brokers of the next start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quotas_reach_every_broker_and_survive_a_restart() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path(), 3).await;
    let mut admin = client(&cluster, 0, "admin").await;
    set_quota(&mut admin, "app", "producer_byte_rate", 1048576.0).await;
    set_quota(&mut admin, "app", "consumer_byte_rate", 2097152.0).await;
    let want = BTreeMap::from([(
        "app".to_string(),
        BTreeMap::from([
            ("consumer_byte_rate".to_string(), 2097152.0),
            ("producer_byte_rate".to_string(), 1048576.0),
        ]),
    )]);
    // The broker that took them describes them at once.
    assert_eq!(client_id_quotas(&mut admin).await, want);
    for b in 1..3 {
        let mut c = client(&cluster, b, "admin").await;
        let what = format!("broker {b} to follow");
        kaas_testkit::retry(WAIT, Duration::from_millis(50), &what, async || {
            let got = client_id_quotas(&mut c).await;
            if got == want {
                Ok(())
            } else {
                Err(format!("it describes {got:?}"))
            }
        })
        .await;
    }
    cluster.shutdown().await;

    let cluster = self::cluster(dir.path(), 3).await;
    for b in 0..3 {
        let mut c = client(&cluster, b, "admin").await;
        assert_eq!(
            client_id_quotas(&mut c).await,
            want,
            "broker {b} after a restart"
        );
    }
    cluster.shutdown().await;
}
