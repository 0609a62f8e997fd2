//! `kaas-broker serve` secured as Apache's brokers are, from a
//! server.properties with Apache's keys: three broker processes serve
//! SASL_SSL (SCRAM-SHA-512 only) with the StandardAuthorizer, log in to
//! each other with the JAAS login of the file, and a `controller` process
//! probes them over TLS as the admin. librdkafka produces, consumes in a
//! group and commits as the admin; a user without ACLs is refused; plaintext
//! clients, PLAIN and a wrong password get nothing; no password reaches
//! the logs.

use std::time::Duration;

use kaas_client::{ClientTls, KafkaClient, SaslCredentials, Security};
use kaas_testkit::pki::TestPki;
use kaas_testkit::{ClusterOptions, ProcessCluster};
use kafka_protocol::messages::{ApiVersionsRequest, MetadataRequest};
use rdkafka::config::ClientConfig;
use rdkafka::producer::{BaseRecord, DefaultProducerContext, Producer, ThreadedProducer};

mod common;

const BIN: &str = env!("CARGO_BIN_EXE_kaas-broker");
const T: Duration = Duration::from_secs(20);
const ADMIN_PASSWORD: &str = "admin-secret";

fn security(pki: &TestPki, mechanism: &str, user: &str, password: &str) -> Security {
    Security {
        tls: Some(ClientTls::new(&pki.ca_cert, None).unwrap()),
        sasl: Some(SaslCredentials {
            mechanism: mechanism.into(),
            user: user.into(),
            password: password.into(),
        }),
    }
}

/// The server.properties every broker reads (`--listen` and `--id` come
/// from the command line, overriding the listener's address only).
fn server_properties(pki: &TestPki, dir: &std::path::Path) -> std::path::PathBuf {
    let keystore = pki.server_keystore().unwrap();
    let file = dir.join("server.properties");
    std::fs::write(
        &file,
        format!(
            "listeners=SASL_SSL://127.0.0.1:9092\n\
             ssl.keystore.type=PEM\n\
             ssl.keystore.location={}\n\
             ssl.truststore.type=PEM\n\
             ssl.truststore.location={}\n\
             sasl.enabled.mechanisms=SCRAM-SHA-512\n\
             sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n\
             listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=\
             org.apache.kafka.common.security.scram.ScramLoginModule required \
             username=\"admin\" password=\"{ADMIN_PASSWORD}\";\n\
             authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n\
             super.users=User:admin\n\
             group.initial.rebalance.delay.ms=200\n",
            keystore.display(),
            pki.ca_cert.display()
        ),
    )
    .unwrap();
    file
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_from_server_properties_speaks_sasl_ssl_with_the_authorizer_on() {
    let pki = TestPki::new("127.0.0.1").unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = server_properties(&pki, dir.path());
    // The admin's credentials are written to the volume by the brokers
    // (--admin-password, as from KAAS_ADMIN_PASSWORD or a Secret).
    let opts = ClusterOptions::new(BIN, 3)
        .serve_arg("--config", file.display())
        .serve_arg("--admin-password", ADMIN_PASSWORD)
        .controller_arg("--tls-ca", pki.ca_cert.display())
        .controller_arg("--admin-password", ADMIN_PASSWORD);
    // Start returns once the controller's TLS + SCRAM probes saw every
    // broker alive.
    let cluster = ProcessCluster::start(Some(dir.path()), opts).await.unwrap();
    let bootstrap = cluster.bootstrap();

    // librdkafka as the admin: produce, consume in a group, commit.
    let b = bootstrap.clone();
    let ca = pki.ca_cert.clone();
    tokio::task::spawn_blocking(move || {
        let mut config = ClientConfig::new();
        config
            .set("bootstrap.servers", &b)
            .set("broker.address.family", "v4")
            .set("security.protocol", "SASL_SSL")
            .set("ssl.ca.location", ca.to_str().unwrap())
            .set("sasl.mechanism", "SCRAM-SHA-512")
            .set("sasl.username", "admin")
            .set("sasl.password", ADMIN_PASSWORD);
        let producer: ThreadedProducer<DefaultProducerContext> = config.create().unwrap();
        for i in 0..20 {
            let v = format!("v{i}");
            producer
                .send(BaseRecord::<(), _>::to("secured").payload(&v))
                .map_err(|(e, _)| e)
                .unwrap();
        }
        producer.flush(T).unwrap();
        common::consume_in_group_and_commit(&config, "secured", "secured-group", 20);
    })
    .await
    .unwrap();

    // A user the admin creates, without ACLs: authenticated, sees no topic.
    let addr = cluster.addr(1);
    let mut admin = KafkaClient::connect_as(
        &addr,
        T,
        &security(&pki, "SCRAM-SHA-512", "admin", ADMIN_PASSWORD),
    )
    .await
    .unwrap();
    common::upsert_scram_user(
        &mut admin,
        "bob",
        kaas_client::scram::Mechanism::ScramSha512,
        "bob-pw",
    )
    .await;
    let all_topics = MetadataRequest::default().with_topics(None);
    let md = admin.send(&all_topics, 12).await.unwrap();
    assert!(md
        .topics
        .iter()
        .any(|t| t.name.as_ref().is_some_and(|n| n.0.as_str() == "secured")));
    let bob = security(&pki, "SCRAM-SHA-512", "bob", "bob-pw");
    // Every broker learns of bob within the refresh delay.
    let pause = Duration::from_millis(100);
    let mut bob_client = kaas_testkit::retry(T, pause, "bob to log in", async || {
        KafkaClient::connect_as(&cluster.addr(2), T, &bob)
            .await
            .map_err(|e| format!("{e:#}"))
    })
    .await;
    let md = bob_client.send(&all_topics, 12).await.unwrap();
    assert!(md.topics.is_empty(), "no ACL, no topic: {:?}", md.topics);

    // PLAIN is not enabled; a wrong password and plaintext get nothing.
    let plain = security(&pki, "PLAIN", "admin", ADMIN_PASSWORD);
    let err = KafkaClient::connect_as(&addr, T, &plain)
        .await
        .err()
        .unwrap();
    assert!(format!("{err:#}").contains("PLAIN refused"), "{err:#}");
    let wrong = security(&pki, "SCRAM-SHA-512", "admin", "guess");
    let err = KafkaClient::connect_as(&addr, T, &wrong)
        .await
        .err()
        .unwrap();
    assert!(
        format!("{err:#}").contains("SASL authentication failed"),
        "{err:#}"
    );
    let mut plaintext = KafkaClient::connect(&addr, T).await.unwrap();
    assert!(plaintext
        .send(&ApiVersionsRequest::default(), 3)
        .await
        .is_err());

    // The effective configuration is logged, without a password.
    let logs = cluster.logs();
    assert!(
        logs.contains("listeners=SASL_SSL://127.0.0.1:"),
        "the effective configuration: {logs}"
    );
    assert!(logs
        .contains("authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer"));
    assert!(!logs.contains(ADMIN_PASSWORD), "a password in the logs");
    cluster.shutdown();
}
