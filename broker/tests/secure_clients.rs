//! Stock clients over TLS: librdkafka (the rdkafka crate), confluent-kafka,
//! kafka-python, kafkajs and the Java client 3.9.1 each create a topic,
//! produce, consume in a group and commit over SASL_SSL with SCRAM-SHA-512
//! and over SSL with a client certificate (required by the brokers), on a
//! 3-broker local cluster whose brokers also reach each other over TLS.
//! They trust the test CA and check the brokers' host name. Over SASL_SSL
//! a wrong password is an authentication error within seconds, with
//! Apache's message. The scripts are in e2e/clients (`secure*`).

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use kaas_broker::local::{LocalCluster, LocalClusterConfig};
use kaas_broker::net::tls::{ClientAuth, TlsSettings};
use kaas_testkit::pki::TestPki;
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::error::KafkaError;
use rdkafka::producer::{BaseRecord, Producer, ThreadedProducer};
use rdkafka::types::RDKafkaErrorCode;
use rdkafka::ClientContext;

mod common;

const ADMIN_PASSWORD: &str = "admin-secret";
const T: Duration = Duration::from_secs(20);

#[derive(Clone, Copy, Debug)]
enum Mode {
    /// SSL, the client presenting a certificate.
    Ssl,
    /// SASL_SSL with SCRAM-SHA-512 as the admin.
    SaslSsl,
}

impl Mode {
    const BOTH: [Mode; 2] = [Mode::Ssl, Mode::SaslSsl];

    fn arg(self) -> &'static str {
        match self {
            Mode::Ssl => "ssl",
            Mode::SaslSsl => "sasl_ssl",
        }
    }
}

/// A TLS cluster and the certificates its clients use: in the PKI folder
/// `ca.pem`, the client's `app.pem` and `app.key`, and `app-keystore.pem`
/// (key, then certificate: a Java PEM key store).
struct Secured {
    pki: TestPki,
    cluster: LocalCluster,
    _data: tempfile::TempDir,
}

impl Secured {
    async fn start(mode: Mode) -> Secured {
        let pki = TestPki::new("127.0.0.1").unwrap();
        let (cert, key) = pki.client("app").unwrap();
        let keystore = [std::fs::read(key).unwrap(), std::fs::read(cert).unwrap()].concat();
        std::fs::write(pki.dir().join("app-keystore.pem"), keystore).unwrap();
        let data = tempfile::tempdir().unwrap();
        let mut config = LocalClusterConfig::new(3, data.path().to_path_buf());
        config.base_port = 0;
        config.tune = |b| b.groups.core.initial_rebalance_delay_ms = 200;
        config.tls = Some(TlsSettings {
            cert: pki.server_cert.clone(),
            key: pki.server_key.clone(),
            client_ca: Some(pki.ca_cert.clone()),
            client_auth: match mode {
                Mode::Ssl => ClientAuth::Required,
                Mode::SaslSsl => ClientAuth::None,
            },
            principal_mapper: Default::default(),
        });
        if let Mode::SaslSsl = mode {
            config.sasl_admin_password = Some(ADMIN_PASSWORD.into());
        }
        let cluster = LocalCluster::start(config).await.unwrap();
        Secured {
            pki,
            cluster,
            _data: data,
        }
    }

    fn file(&self, name: &str) -> PathBuf {
        self.pki.dir().join(name)
    }
}

/// Runs `program <args...> MODE PKI_DIR BOOTSTRAP` against a cluster of
/// each mode.
async fn run_in_both_modes(program: &str, args: Vec<String>) {
    for mode in Mode::BOTH {
        let secured = Secured::start(mode).await;
        let mut args = args.clone();
        args.extend([
            mode.arg().to_string(),
            secured.pki.dir().to_string_lossy().into_owned(),
            secured.cluster.bootstrap(),
        ]);
        let program = program.to_string();
        tokio::task::spawn_blocking(move || common::run_checks(&program, &args))
            .await
            .unwrap();
        secured.cluster.shutdown().await;
    }
}

fn script(path: &str) -> String {
    common::clients_dir()
        .join(path)
        .to_string_lossy()
        .into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_over_ssl_and_sasl_ssl() {
    run_in_both_modes("python3", vec![script("python/secure_confluent.py")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_over_ssl_and_sasl_ssl() {
    run_in_both_modes("python3", vec![script("python/secure_kafka_python.py")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafkajs_over_ssl_and_sasl_ssl() {
    run_in_both_modes("node", vec![script("js/secure.js")]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_over_ssl_and_sasl_ssl() {
    let (_classes, classpath) = common::compile_java("Secure");
    run_in_both_modes("java", vec!["-cp".into(), classpath, "Secure".into()]).await;
}

/// librdkafka's settings for `mode` (and `password` over SASL_SSL).
fn rdkafka_config(secured: &Secured, mode: Mode, password: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", secured.cluster.bootstrap())
        .set("broker.address.family", "v4")
        .set("ssl.ca.location", secured.file("ca.pem").to_str().unwrap())
        .set("ssl.endpoint.identification.algorithm", "https");
    match mode {
        Mode::Ssl => c
            .set("security.protocol", "SSL")
            .set(
                "ssl.certificate.location",
                secured.file("app.pem").to_str().unwrap(),
            )
            .set(
                "ssl.key.location",
                secured.file("app.key").to_str().unwrap(),
            ),
        Mode::SaslSsl => c
            .set("security.protocol", "SASL_SSL")
            .set("sasl.mechanism", "SCRAM-SHA-512")
            .set("sasl.username", "admin")
            .set("sasl.password", password),
    };
    c
}

/// Collects librdkafka's errors and their texts.
#[derive(Clone, Default)]
struct Errors(Arc<Mutex<Vec<(KafkaError, String)>>>);

impl ClientContext for Errors {
    fn error(&self, error: KafkaError, reason: &str) {
        self.0.lock().unwrap().push((error, reason.to_string()));
    }
}

impl rdkafka::producer::ProducerContext for Errors {
    type DeliveryOpaque = ();
    fn delivery(&self, _: &rdkafka::message::DeliveryResult<'_>, _: ()) {}
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_over_ssl_and_sasl_ssl() {
    const RECORDS: i64 = 30;
    for mode in Mode::BOTH {
        let secured = Secured::start(mode).await;
        let topic = format!("rd-{}", mode.arg());
        let admin: AdminClient<DefaultClientContext> =
            rdkafka_config(&secured, mode, ADMIN_PASSWORD)
                .create()
                .unwrap();
        let created = admin
            .create_topics(
                &[NewTopic::new(&topic, 3, TopicReplication::Fixed(1))],
                &AdminOptions::new().operation_timeout(Some(T)),
            )
            .await
            .unwrap();
        assert!(created[0].is_ok(), "{mode:?}: {created:?}");

        let config = rdkafka_config(&secured, mode, ADMIN_PASSWORD);
        let wrong_password = rdkafka_config(&secured, mode, "wrong");
        tokio::task::spawn_blocking(move || {
            let producer: ThreadedProducer<rdkafka::producer::DefaultProducerContext> =
                config.clone().set("acks", "all").create().unwrap();
            for i in 0..RECORDS {
                let v = format!("r{i}");
                producer
                    .send(
                        BaseRecord::<(), _>::to(&topic)
                            .payload(&v)
                            .partition((i % 3) as i32),
                    )
                    .map_err(|(e, _)| e)
                    .unwrap();
            }
            producer.flush(T).unwrap();

            common::consume_in_group_and_commit(
                &config,
                &topic,
                &format!("{topic}-group"),
                RECORDS,
            );

            if let Mode::SaslSsl = mode {
                let errors = Errors::default();
                let _refused: ThreadedProducer<Errors> =
                    wrong_password.create_with_context(errors.clone()).unwrap();
                let started = Instant::now();
                let refusal = || {
                    errors
                        .0
                        .lock()
                        .unwrap()
                        .iter()
                        .find(|(e, _)| {
                            e.rdkafka_error_code() == Some(RDKafkaErrorCode::Authentication)
                        })
                        .map(|(_, reason)| reason.clone())
                };
                while refusal().is_none() {
                    assert!(
                        started.elapsed() < Duration::from_secs(5),
                        "no authentication error within 5 s: {:?}",
                        errors.0.lock().unwrap()
                    );
                    // The producer's own thread serves the callbacks.
                    std::thread::sleep(Duration::from_millis(50));
                }
                assert!(
                    refusal().unwrap().contains("invalid credentials"),
                    "{:?}",
                    refusal()
                );
            }
        })
        .await
        .unwrap();
        secured.cluster.shutdown().await;
    }
}
