//! SASL and ACLs end to end on a 3-broker local cluster started as
//! `kaas-broker local --sasl --admin-password ...` starts it: librdkafka
//! produces, consumes in a group and commits over SASL_PLAINTEXT with PLAIN
//! (the rdkafka crate is built without OpenSSL, which its SCRAM needs;
//! confluent-kafka runs SCRAM, `e2e/clients/python/sasl.py`); a wrong
//! password is an authentication error at once; a SCRAM user created
//! through the Kafka API is held to its ACLs (SCRAM-SHA-256 and -512 by
//! kaas-client); a request before authentication closes the connection.

mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::client_config;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_client::scram::Mechanism;
use kaas_client::{KafkaClient, SaslCredentials, Security};
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};
use rdkafka::ClientContext;

const ADMIN_PASSWORD: &str = "admin-secret";
const T: Duration = Duration::from_secs(20);

async fn cluster(dir: &std::path::Path) -> LocalCluster {
    let mut c = LocalClusterConfig::new(3, dir.to_path_buf());
    c.base_port = 0;
    c.sasl_admin_password = Some(ADMIN_PASSWORD.into());
    LocalCluster::start(c).await.unwrap()
}

fn sasl(bootstrap: &str, mechanism: &str, user: &str, password: &str) -> ClientConfig {
    let mut c = client_config(bootstrap);
    c.set("security.protocol", "SASL_PLAINTEXT")
        .set("sasl.mechanism", mechanism)
        .set("sasl.username", user)
        .set("sasl.password", password);
    c
}

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

fn creds(mechanism: &str, user: &str, password: &str) -> SaslCredentials {
    SaslCredentials {
        mechanism: mechanism.into(),
        user: user.into(),
        password: password.into(),
    }
}

async fn create_topic_as_admin(addr: &str, name: &str) {
    let admin = creds("SCRAM-SHA-512", "admin", ADMIN_PASSWORD);
    let mut c = KafkaClient::connect_as(addr, T, &Security::sasl(&admin))
        .await
        .unwrap();
    let r = c
        .send(
            &CreateTopicsRequest::default().with_topics(vec![
                create_topics_request::CreatableTopic::default()
                    .with_name(TopicName(s(name)))
                    .with_num_partitions(3)
                    .with_replication_factor(1),
            ]),
            5,
        )
        .await
        .unwrap();
    assert_eq!(r.topics[0].error_code, 0, "{name} created");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_produces_consumes_and_commits_over_sasl_plain() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    create_topic_as_admin(&cluster.addrs[0].to_string(), "sasl-orders").await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let producer: ThreadedProducer<DefaultProducerContext> =
            sasl(&b, "PLAIN", "admin", ADMIN_PASSWORD).create().unwrap();
        for i in 0..30 {
            let v = format!("v{i}");
            producer
                .send(BaseRecord::<(), _>::to("sasl-orders").payload(&v))
                .map_err(|(e, _)| e)
                .unwrap();
        }
        producer.flush(T).unwrap();
        let consumer_config = sasl(&b, "PLAIN", "admin", ADMIN_PASSWORD);
        common::consume_in_group_and_commit(&consumer_config, "sasl-orders", "sasl-group", 30);
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}

/// Collects librdkafka's errors.
#[derive(Clone, Default)]
struct Errors(Arc<Mutex<Vec<KafkaError>>>);

impl ClientContext for Errors {
    fn error(&self, error: KafkaError, _reason: &str) {
        self.0.lock().unwrap().push(error);
    }
}

impl rdkafka::producer::ProducerContext for Errors {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_password_is_an_authentication_error_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    tokio::task::spawn_blocking(move || {
        let mechanism = "PLAIN";
        let errors = Errors::default();
        let _producer: ThreadedProducer<Errors> = sasl(&bootstrap, mechanism, "admin", "wrong")
            .create_with_context(errors.clone())
            .unwrap();
        let started = Instant::now();
        let authentication_error = || {
            errors.0.lock().unwrap().iter().any(|e| {
                e.rdkafka_error_code() == Some(rdkafka::types::RDKafkaErrorCode::Authentication)
            })
        };
        while !authentication_error() {
            assert!(
                started.elapsed() < Duration::from_secs(5),
                "{mechanism}: no authentication error within 5 s: {:?}",
                errors.0.lock().unwrap()
            );
            // The producer's own thread serves the callbacks.
            std::thread::sleep(Duration::from_millis(50));
        }
    })
    .await
    .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scram_user_made_through_the_kafka_api_is_held_to_its_acls() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let addr = cluster.addrs[0].to_string();
    create_topic_as_admin(&addr, "granted").await;
    create_topic_as_admin(&addr, "denied").await;
    let admin = creds("SCRAM-SHA-512", "admin", ADMIN_PASSWORD);
    let mut a = KafkaClient::connect_as(&addr, T, &Security::sasl(&admin))
        .await
        .unwrap();
    // alice: a SCRAM-SHA-256 credential, the salted password computed here
    // as an admin client does.
    common::upsert_scram_user(&mut a, "alice", Mechanism::ScramSha256, "alice-pw").await;
    let r = a
        .send(
            &CreateAclsRequest::default().with_creations(vec![
                create_acls_request::AclCreation::default()
                    .with_resource_type(2)
                    .with_resource_name(s("granted"))
                    .with_resource_pattern_type(3)
                    .with_principal(s("User:alice"))
                    .with_host(s("*"))
                    .with_operation(4)
                    .with_permission_type(3),
            ]),
            3,
        )
        .await
        .unwrap();
    assert_eq!(r.results[0].error_code, 0);

    // The user authenticates on another broker within the refresh delay.
    let alice = creds("SCRAM-SHA-256", "alice", "alice-pw");
    let other = cluster.addrs[1].to_string();
    let login = Security::sasl(&alice);
    let pause = Duration::from_millis(100);
    let mut c = kaas_testkit::retry(
        Duration::from_secs(5),
        pause,
        "alice to log in",
        async || {
            KafkaClient::connect_as(&other, T, &login)
                .await
                .map_err(|e| format!("{e:#}"))
        },
    )
    .await;
    // Metadata shows alice only what she may describe (Write implies it).
    let m = c
        .send(&MetadataRequest::default().with_topics(None), 9)
        .await
        .unwrap();
    let visible: Vec<String> = m
        .topics
        .iter()
        .filter_map(|t| t.name.as_ref().map(|n| n.0.to_string()))
        .collect();
    assert_eq!(visible, ["granted"]);
    let produce_to = |topic: &'static str| {
        ProduceRequest::default()
            .with_acks(-1)
            .with_timeout_ms(5_000)
            .with_topic_data(vec![produce_request::TopicProduceData::default()
                .with_name(TopicName(s(topic)))
                .with_partition_data(vec![
                    produce_request::PartitionProduceData::default()
                        .with_index(0)
                        .with_records(Some(kaas_testkit::records::record_batch(
                            [bytes::Bytes::from_static(b"hello")],
                            None,
                        ))),
                ])])
    };
    // Asked of the leader of partition 0 of each topic.
    let routing = cluster.brokers[0].routing().unwrap();
    for (topic, want) in [
        ("granted", 0),
        ("denied", E::TopicAuthorizationFailed.code()),
    ] {
        let leader = routing.owner_of_partition(topic, 0).unwrap();
        let mut c = KafkaClient::connect_as(
            &cluster.addrs[leader as usize].to_string(),
            T,
            &Security::sasl(&alice),
        )
        .await
        .unwrap();
        let r = c.send(&produce_to(topic), 9).await.unwrap();
        assert_eq!(
            r.responses[0].partition_responses[0].error_code, want,
            "{topic}"
        );
    }
    // No group rights: FindCoordinator says nothing of the group.
    let r = c
        .send(
            &FindCoordinatorRequest::default()
                .with_key(s("any-group"))
                .with_key_type(0),
            3,
        )
        .await
        .unwrap();
    assert_eq!(r.error_code, E::GroupAuthorizationFailed.code());
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_before_authentication_closes_the_connection() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = cluster(dir.path()).await;
    let addr = cluster.addrs[0].to_string();
    // ApiVersions is served before authentication.
    let mut c = KafkaClient::connect(&addr, T).await.unwrap();
    let v = c.send(&ApiVersionsRequest::default(), 0).await.unwrap();
    assert_eq!(v.error_code, 0);
    // Metadata is not: the connection closes without an answer.
    assert!(c.send(&MetadataRequest::default(), 9).await.is_err());
    // A failed login answers SASL_AUTHENTICATION_FAILED, then closes.
    let mut c = KafkaClient::connect(&addr, T).await.unwrap();
    let e = c
        .authenticate(&creds("SCRAM-SHA-512", "admin", "wrong"))
        .await
        .unwrap_err();
    assert!(
        format!("{e:#}").contains(&E::SaslAuthenticationFailed.code().to_string()),
        "{e:#}"
    );
    assert!(c.is_closed(Duration::from_secs(2)).await);
    // The other brokers serve authenticated clients meanwhile.
    let admin = creds("SCRAM-SHA-256", "admin", ADMIN_PASSWORD);
    let mut ok = KafkaClient::connect_as(&cluster.addrs[1].to_string(), T, &Security::sasl(&admin))
        .await
        .unwrap();
    let m = ok.send(&MetadataRequest::default(), 9).await.unwrap();
    assert_eq!(m.brokers.len(), 3);
    cluster.shutdown().await;
}

/// One SASL broker whose sessions last `connections.max.reauth.ms` = 2 s.
/// A request that blocks longer than a session (a JoinGroup waiting out the
/// initial rebalance delay) leaves the client no moment to re-authenticate
/// before the next: here the delay is shorter.
async fn reauth_cluster(dir: &std::path::Path) -> LocalCluster {
    let mut c = LocalClusterConfig::new(1, dir.to_path_buf());
    c.base_port = 0;
    c.sasl_admin_password = Some(ADMIN_PASSWORD.into());
    c.tune = |b| {
        b.listeners[0]
            .sasl
            .as_mut()
            .expect("a SASL broker")
            .max_reauth_ms = 2_000;
        b.groups.core.initial_rebalance_delay_ms = 200;
    };
    LocalCluster::start(c).await.unwrap()
}

/// KIP-368 on the wire: the broker tells the session's lifetime; a request
/// after it closes the connection unserved; re-authenticating before it
/// renews the session; re-authenticating as someone else is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_expire_after_connections_max_reauth_ms_unless_renewed() {
    const LIFETIME: Duration = Duration::from_secs(2);
    let dir = tempfile::tempdir().unwrap();
    let cluster = reauth_cluster(dir.path()).await;
    let addr = cluster.addrs[0].to_string();
    let admin = creds("SCRAM-SHA-512", "admin", ADMIN_PASSWORD);
    let metadata = MetadataRequest::default().with_topics(Some(vec![]));
    let broker = &cluster.brokers[0];

    let mut renewed = KafkaClient::connect(&addr, T).await.unwrap();
    let mut lapsed = KafkaClient::connect(&addr, T).await.unwrap();
    let started = Instant::now();
    assert_eq!(renewed.authenticate(&admin).await.unwrap(), LIFETIME);
    assert_eq!(lapsed.authenticate(&admin).await.unwrap(), LIFETIME);
    // At 60% of the lifetime one connection renews its session (PLAIN this
    // time would be refused: the mechanism may not change).
    tokio::time::sleep_until((started + LIFETIME * 6 / 10).into()).await;
    assert_eq!(renewed.authenticate(&admin).await.unwrap(), LIFETIME);
    assert_eq!(broker.metrics.reauthentications.get(), 1);
    // At 130%: the first session is over, the renewed one is not.
    tokio::time::sleep_until((started + LIFETIME * 13 / 10).into()).await;
    assert!(renewed.send(&metadata, 12).await.is_ok(), "renewed: served");
    assert!(lapsed.send(&metadata, 12).await.is_err(), "lapsed: closed");
    assert_eq!(broker.metrics.expired_sessions.get(), 1);

    // Re-authenticating as another user is refused and closes.
    let mut c = KafkaClient::connect(&addr, T).await.unwrap();
    c.authenticate(&admin).await.unwrap();
    common::upsert_scram_user(&mut c, "bob", Mechanism::ScramSha512, "bob-pw").await;
    let err = c
        .authenticate(&creds("SCRAM-SHA-512", "bob", "bob-pw"))
        .await
        .unwrap_err();
    assert!(
        format!("{err:#}").contains(
            "Cannot change principals during re-authentication from User.admin: User.bob"
        ),
        "{err:#}"
    );
    assert!(c.is_closed(T).await);
    cluster.shutdown().await;
}

/// librdkafka re-authenticates by itself (KIP-368) while it produces and
/// consumes across several session lifetimes: nothing is lost, no error
/// reaches the application, and the broker renewed its sessions.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_re_authenticates_across_session_lifetimes() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = reauth_cluster(dir.path()).await;
    let bootstrap = cluster.bootstrap();
    create_topic_as_admin(&cluster.addrs[0].to_string(), "renewed").await;
    let b = bootstrap.clone();
    tokio::task::spawn_blocking(move || {
        let config = sasl(&b, "SCRAM-SHA-256", "admin", ADMIN_PASSWORD);
        let producer: ThreadedProducer<DefaultProducerContext> = config.create().unwrap();
        // One record every 100 ms for 5 s: two and a half lifetimes.
        for i in 0..50 {
            let v = format!("v{i}");
            producer
                .send(BaseRecord::<(), _>::to("renewed").payload(&v))
                .map_err(|(e, _)| e)
                .unwrap();
            std::thread::sleep(Duration::from_millis(100));
        }
        producer.flush(T).unwrap();
        common::consume_in_group_and_commit(&config, "renewed", "renewed-group", 50);
    })
    .await
    .unwrap();
    let renewed = cluster.brokers[0].metrics.reauthentications.get();
    assert!(renewed >= 2, "{renewed} sessions renewed");
    assert_eq!(cluster.brokers[0].metrics.expired_sessions.get(), 0);
    cluster.shutdown().await;
}

/// A broker's own calls to another broker (WriteTxnMarkers, transaction
/// verification) go over one kept, authenticated connection; when the peer
/// ends it (here its SASL session expires) a new one replaces it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_to_peers_reuse_an_authenticated_connection() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = LocalClusterConfig::new(2, dir.path().to_path_buf());
    c.base_port = 0;
    c.sasl_admin_password = Some(ADMIN_PASSWORD.into());
    c.tune = |b| {
        b.listeners[0]
            .sasl
            .as_mut()
            .expect("a SASL broker")
            .max_reauth_ms = 1_000
    };
    let cluster = LocalCluster::start(c).await.unwrap();
    let (from, to) = (&cluster.brokers[0], &cluster.brokers[1]);
    let peer = cluster.addrs[1].to_string();
    let versions = ApiVersionsRequest::default();
    let ask = || from.peers.send(&peer, &versions, 2);
    for _ in 0..10 {
        assert_eq!(ask().await.unwrap().error_code, 0);
    }
    assert_eq!(from.peers.opened(), 1, "ten calls, one connection");
    assert_eq!(from.peers.idle_count(), 1);
    // Past the session's end the kept connection is closed by the peer at
    // the next request; the call succeeds over a new one.
    tokio::time::sleep(Duration::from_millis(1_200)).await;
    assert_eq!(ask().await.unwrap().error_code, 0);
    assert_eq!(to.metrics.expired_sessions.get(), 1);
    assert_eq!(from.peers.opened(), 2);
    assert_eq!(from.peers.idle_count(), 1);
    cluster.shutdown().await;
}

/// The Java client 3.9.1 re-authenticates by itself too (KIP-368 is the
/// Java client's): producing and consuming across several session
/// lifetimes, nothing fails and no session expires.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_java_client_re_authenticates_across_session_lifetimes() {
    let dir = tempfile::tempdir().unwrap();
    let cluster = reauth_cluster(dir.path()).await;
    create_topic_as_admin(&cluster.addrs[0].to_string(), "java-reauth").await;
    let (_classes, classpath) = common::compile_java("Reauth");
    let args = vec![
        "-cp".to_string(),
        classpath,
        "Reauth".to_string(),
        cluster.bootstrap(),
    ];
    tokio::task::spawn_blocking(move || common::run_checks("java", &args))
        .await
        .unwrap();
    let renewed = cluster.brokers[0].metrics.reauthentications.get();
    assert!(renewed >= 2, "{renewed} sessions renewed");
    assert_eq!(cluster.brokers[0].metrics.expired_sessions.get(), 0);
    cluster.shutdown().await;
}
