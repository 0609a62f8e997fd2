//! Several listeners per broker, as Apache's `listeners`,
//! `advertised.listeners`, `listener.security.protocol.map` and
//! `inter.broker.listener.name`: three `serve` processes each with a
//! BROKERS listener (SASL_PLAINTEXT, the one brokers and the controller
//! use) and a CLIENT listener (SASL_SSL, advertised under another host
//! name). Metadata and FindCoordinator answer with the addresses of the
//! listener the request came in on, so a TLS client never gets sent to the
//! plaintext port; a transaction over partitions of every broker commits,
//! its markers sent broker to broker on BROKERS.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use kaas_client::{ClientTls, KafkaClient, SaslCredentials, Security};
use kaas_testkit::pki::TestPki;
use kaas_testkit::{ClusterOptions, ProcessCluster};
use kafka_protocol::messages::{FindCoordinatorRequest, MetadataRequest};
use kafka_protocol::protocol::StrBytes;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::Message;

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kaas-broker");
const T: Duration = Duration::from_secs(20);
const ADMIN_PASSWORD: &str = "admin-secret";
/// The CLIENT listener's advertised host: not the BROKERS one's.
const CLIENT_HOST: &str = "localhost";

fn admin(tls: Option<ClientTls>) -> Security {
    Security {
        tls,
        sasl: Some(SaslCredentials {
            mechanism: "SCRAM-SHA-512".into(),
            user: "admin".into(),
            password: ADMIN_PASSWORD.into(),
        }),
    }
}

/// What every broker shares; each one's `listeners` and
/// `advertised.listeners` come from the cluster's `--override`s.
fn server_properties(pki: &TestPki, dir: &std::path::Path) -> std::path::PathBuf {
    let keystore = pki.server_keystore().unwrap();
    let file = dir.join("server.properties");
    std::fs::write(
        &file,
        format!(
            "listener.security.protocol.map=BROKERS:SASL_PLAINTEXT,CLIENT:SASL_SSL\n\
             inter.broker.listener.name=BROKERS\n\
             listener.name.client.ssl.keystore.type=PEM\n\
             listener.name.client.ssl.keystore.location={}\n\
             sasl.enabled.mechanisms=SCRAM-SHA-512\n\
             sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n\
             group.initial.rebalance.delay.ms=200\n",
            keystore.display(),
        ),
    )
    .unwrap();
    file
}

fn endpoints(md: &kafka_protocol::messages::MetadataResponse) -> BTreeSet<String> {
    md.brokers
        .iter()
        .map(|b| format!("{}:{}", b.host.as_str(), b.port))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_listener_is_answered_with_its_own_addresses() {
    let pki = TestPki::for_hosts(&["127.0.0.1", CLIENT_HOST]).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = server_properties(&pki, dir.path());
    let opts = ClusterOptions::new(BIN, 3)
        .client_listener("BROKERS", "CLIENT", CLIENT_HOST)
        .serve_arg("--config", file.display())
        .serve_arg("--admin-password", ADMIN_PASSWORD)
        .controller_arg("--admin-password", ADMIN_PASSWORD);
    // Returns once the controller's probes on BROKERS saw every broker.
    let cluster = ProcessCluster::start(Some(dir.path()), opts).await.unwrap();
    let brokers: BTreeSet<String> = (0..3).map(|id| cluster.addr(id)).collect();
    let clients: BTreeSet<String> = (0..3).map(|id| cluster.client_addr(id).unwrap()).collect();
    assert!(brokers.is_disjoint(&clients));

    // Raw requests on each listener: Metadata names that listener's
    // addresses; FindCoordinator the coordinator's on it.
    let tls = ClientTls::new(&pki.ca_cert, None).unwrap();
    let mut on_client = KafkaClient::connect_as(
        &cluster.client_addr(1).unwrap(),
        T,
        &admin(Some(tls.clone())),
    )
    .await
    .unwrap();
    let mut on_brokers = KafkaClient::connect_as(&cluster.addr(1), T, &admin(None))
        .await
        .unwrap();
    let metadata = MetadataRequest::default().with_topics(None);
    // Every broker follows the assignment with all of them alive within
    // its poll interval (the cluster started once the file said so).
    let what = "broker 1 to see all three alive";
    kaas_testkit::retry(T, Duration::from_millis(50), what, async || match on_client
        .send(&metadata, 12)
        .await
        .unwrap()
        .brokers
        .len()
    {
        3.. => Ok(()),
        n => Err(format!("it sees {n}")),
    })
    .await;
    for version in [1, 12] {
        let md = on_client.send(&metadata, version).await.unwrap();
        assert_eq!(endpoints(&md), clients, "Metadata v{version} on CLIENT");
        let md = on_brokers.send(&metadata, version).await.unwrap();
        assert_eq!(endpoints(&md), brokers, "Metadata v{version} on BROKERS");
    }
    let routing = cluster.routing().expect("an assignment");
    let find = |group: &str| {
        FindCoordinatorRequest::default()
            .with_coordinator_keys(vec![StrBytes::from_string(group.to_string())])
    };
    for group in ["g-one", "g-two", "g-three", "g-four"] {
        let owner = routing.owner_of_group(group).unwrap() as usize;
        let c = &on_client.send(&find(group), 4).await.unwrap().coordinators[0];
        assert_eq!(c.error_code, 0);
        assert_eq!(
            format!("{}:{}", c.host.as_str(), c.port),
            cluster.client_addr(owner).unwrap(),
            "{group} on CLIENT"
        );
        let c = &on_brokers.send(&find(group), 4).await.unwrap().coordinators[0];
        assert_eq!(
            format!("{}:{}", c.host.as_str(), c.port),
            cluster.addr(owner),
            "{group} on BROKERS"
        );
    }

    // librdkafka over CLIENT only (TLS: a connection to a BROKERS port
    // fails): produce, consume in a group, commit; then a transaction over
    // partitions of every broker, its markers sent on BROKERS.
    let config = client_config(&cluster.client_addr(0).unwrap(), &pki);
    common::create_topic_with(&config, "two-listeners", 6).await;
    tokio::task::spawn_blocking(move || {
        let producer: ThreadedProducer<DefaultProducerContext> = config.create().unwrap();
        for i in 0..30 {
            let v = format!("v{i}");
            producer
                .send(
                    BaseRecord::<(), _>::to("two-listeners")
                        .payload(&v)
                        .partition(i % 6),
                )
                .map_err(|(e, _)| e)
                .unwrap();
        }
        producer.flush(T).unwrap();
        common::consume_in_group_and_commit(&config, "two-listeners", "two-listeners-group", 30);

        let transactional: ThreadedProducer<DefaultProducerContext> = config
            .clone()
            .set("transactional.id", "two-listeners-txn")
            .create()
            .unwrap();
        transactional.init_transactions(T).unwrap();
        transactional.begin_transaction().unwrap();
        for p in 0..6 {
            transactional
                .send(
                    BaseRecord::<(), _>::to("two-listeners")
                        .payload("txn")
                        .partition(p),
                )
                .map_err(|(e, _)| e)
                .unwrap();
        }
        transactional.commit_transaction(T).expect("committed");

        let reader: BaseConsumer = config
            .clone()
            .set("group.id", "two-listeners-reader")
            .set("auto.offset.reset", "earliest")
            .set("isolation.level", "read_committed")
            .create()
            .unwrap();
        reader.subscribe(&["two-listeners"]).unwrap();
        let (mut txn, deadline) = (0, Instant::now() + T);
        while txn < 6 {
            assert!(Instant::now() < deadline, "read {txn} of 6 committed");
            if let Some(m) = reader.poll(Duration::from_millis(200)) {
                if m.expect("no consumer error").payload() == Some(b"txn") {
                    txn += 1;
                }
            }
        }
    })
    .await
    .unwrap();

    let logs = cluster.logs();
    assert!(
        logs.contains("listener.security.protocol.map=BROKERS:SASL_PLAINTEXT,CLIENT:SASL_SSL"),
        "the effective configuration: {logs}"
    );
    assert!(!logs.contains(ADMIN_PASSWORD), "a password in the logs");
    cluster.shutdown();
}

fn client_config(bootstrap: &str, pki: &TestPki) -> ClientConfig {
    let mut config = ClientConfig::new();
    config
        .set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("security.protocol", "SASL_SSL")
        .set("ssl.ca.location", pki.ca_cert.to_str().unwrap())
        .set("sasl.mechanism", "SCRAM-SHA-512")
        .set("sasl.username", "admin")
        .set("sasl.password", ADMIN_PASSWORD);
    config
}
