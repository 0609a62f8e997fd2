//! Shared helpers for the broker's end-to-end tests: real clients
//! (librdkafka through the `rdkafka` crate) against real brokers.

#![allow(dead_code)]

pub mod procs;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::consumer::{BaseConsumer, Consumer};
use rdkafka::error::{KafkaError, RDKafkaErrorCode};
use rdkafka::message::Message;
use rdkafka::{Offset, TopicPartitionList};

pub fn client_config(bootstrap: &str) -> ClientConfig {
    let mut c = ClientConfig::new();
    c.set("bootstrap.servers", bootstrap)
        .set("broker.address.family", "v4")
        .set("topic.metadata.refresh.interval.ms", "1000");
    c
}

/// Creates a topic, asking again while librdkafka fails the call itself:
/// right after a cluster starts, a Metadata response taken before every
/// broker was published alive makes librdkafka drop the broker it was
/// asking (DestroyBroker). A retry that finds the topic made takes it.
pub async fn create_topic(bootstrap: &str, name: &str, partitions: i32) {
    create_topic_with(&client_config(bootstrap), name, partitions).await
}

/// [`create_topic`] by a client of `config` (address and security).
pub async fn create_topic_with(config: &ClientConfig, name: &str, partitions: i32) {
    let admin: AdminClient<DefaultClientContext> = config.create().expect("admin");
    let mut attempt = 0;
    loop {
        attempt += 1;
        let results = admin
            .create_topics(
                &[NewTopic::new(name, partitions, TopicReplication::Fixed(1))],
                &AdminOptions::new().operation_timeout(Some(Duration::from_secs(10))),
            )
            .await;
        match results {
            Ok(results) => {
                for r in results {
                    match r {
                        Ok(_) => {}
                        Err((_, RDKafkaErrorCode::TopicAlreadyExists)) if attempt > 1 => {}
                        Err(e) => panic!("topic {name} not created: {e:?}"),
                    }
                }
                return;
            }
            Err(e) if attempt < 5 => {
                eprintln!("create_topics {name}: {e}; asking again");
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            Err(e) => panic!("create_topics {name}: {e}"),
        }
    }
}

pub type Consumed = BTreeMap<i32, Vec<(i64, String)>>;

/// Reads every partition of `topic` from the beginning until `expected`
/// messages arrived; returns partition -> [(offset, payload)] in order.
pub fn consume_all(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    expected: usize,
    within: Duration,
) -> Consumed {
    consume_until(bootstrap, topic, partitions, within, |_, count| {
        count >= expected
    })
}

/// Reads every partition of `topic` from the beginning until `done` holds.
pub fn consume_until(
    bootstrap: &str,
    topic: &str,
    partitions: i32,
    within: Duration,
    done: impl Fn(&Consumed, usize) -> bool,
) -> Consumed {
    let consumer: BaseConsumer = client_config(bootstrap)
        .set("group.id", "kaas-test-reader")
        .set("enable.auto.commit", "false")
        .set("check.crcs", "true")
        .set("fetch.wait.max.ms", "100")
        .create()
        .expect("consumer");
    let mut tpl = TopicPartitionList::new();
    for p in 0..partitions {
        tpl.add_partition_offset(topic, p, Offset::Beginning)
            .unwrap();
    }
    consumer.assign(&tpl).expect("assign");
    let mut got: BTreeMap<i32, Vec<(i64, String)>> = BTreeMap::new();
    let mut count = 0;
    let deadline = Instant::now() + within;
    while !done(&got, count) {
        assert!(
            Instant::now() < deadline,
            "only {count} messages arrived from {bootstrap} before the deadline"
        );
        match consumer.poll(Duration::from_millis(200)) {
            Some(Ok(m)) => {
                let payload = String::from_utf8(m.payload().expect("payload").to_vec()).unwrap();
                got.entry(m.partition())
                    .or_default()
                    .push((m.offset(), payload));
                count += 1;
            }
            // librdkafka reports lost connections and retries by itself.
            Some(Err(KafkaError::MessageConsumption(
                RDKafkaErrorCode::BrokerTransportFailure | RDKafkaErrorCode::AllBrokersDown,
            ))) => {}
            Some(Err(e)) => panic!("consumer error from {bootstrap}: {e}"),
            None => {}
        }
    }
    got
}

/// Subscribes a consumer of `config` (a client's settings: address and
/// security) in `group` to `topic`, consumes `records` records, commits
/// synchronously and asserts that the group's committed offsets add up to
/// `records` (a partition that got no record has none). Blocking.
pub fn consume_in_group_and_commit(config: &ClientConfig, topic: &str, group: &str, records: i64) {
    use rdkafka::consumer::{BaseConsumer, CommitMode};
    let consumer: BaseConsumer = config
        .clone()
        .set("group.id", group)
        .set("auto.offset.reset", "earliest")
        .set("enable.auto.commit", "false")
        .create()
        .unwrap();
    consumer.subscribe(&[topic]).unwrap();
    let (mut got, deadline) = (0, Instant::now() + Duration::from_secs(30));
    while got < records {
        assert!(
            Instant::now() < deadline,
            "consumed {got} of {records} from {topic}"
        );
        if let Some(m) = consumer.poll(Duration::from_millis(200)) {
            m.expect("no consumer error");
            got += 1;
        }
    }
    consumer.commit_consumer_state(CommitMode::Sync).unwrap();
    let committed: i64 = consumer
        .committed(Duration::from_secs(20))
        .unwrap()
        .elements()
        .iter()
        .filter_map(|e| match e.offset() {
            Offset::Offset(o) => Some(o),
            _ => None,
        })
        .sum();
    assert_eq!(committed, records, "{group}'s committed offsets on {topic}");
}

/// Creates (or replaces) `user`'s SCRAM credential for `mechanism` through
/// AlterUserScramCredentials on `admin` (a client logged in with the right
/// to), the salted password computed here as an admin client does (4096
/// iterations, salt `<user>-salt`).
pub async fn upsert_scram_user(
    admin: &mut kaas_client::KafkaClient,
    user: &str,
    mechanism: kaas_client::scram::Mechanism,
    password: &str,
) {
    use kafka_protocol::messages::alter_user_scram_credentials_request::ScramCredentialUpsertion;
    use kafka_protocol::messages::AlterUserScramCredentialsRequest;
    let salt = format!("{user}-salt").into_bytes();
    let salted = kaas_client::scram::salted_password(mechanism, password.as_bytes(), &salt, 4096);
    let r = admin
        .send(
            &AlterUserScramCredentialsRequest::default().with_upsertions(vec![
                ScramCredentialUpsertion::default()
                    .with_name(kafka_protocol::protocol::StrBytes::from_string(user.into()))
                    .with_mechanism(mechanism.code())
                    .with_iterations(4096)
                    .with_salt(salt.into())
                    .with_salted_password(salted.into()),
            ]),
            0,
        )
        .await
        .expect("AlterUserScramCredentials answered");
    assert_eq!(r.results[0].error_code, 0, "{user}'s credential stored");
}

/// Polls `check` until it holds or `within` passes.
pub async fn eventually<F: FnMut() -> bool>(within: Duration, what: &str, mut check: F) {
    let deadline = Instant::now() + within;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for: {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The e2e client programs and scripts.
pub fn clients_dir() -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../e2e/clients")
}

/// Runs a client program (blocking) and asserts that it succeeded and
/// printed "all checks passed", as the e2e/clients programs do.
pub fn run_checks(program: &str, args: &[String]) {
    let out = std::process::Command::new(program)
        .args(args)
        .env("KAFKAJS_NO_PARTITIONER_WARNING", "1")
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run {program}: {e} (scripts/install-test-deps installs it)")
        });
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "{program} {args:?}:\n{stdout}\n{stderr}"
    );
    assert!(
        stdout.contains("all checks passed"),
        "{program} {args:?}:\n{stdout}\n{stderr}"
    );
}

/// Compiles `e2e/clients/c/{name}.c` against the system librdkafka
/// (Debian's librdkafka-dev, 2.0.2; scripts/install-test-deps installs it)
/// into a fresh folder; returns the folder and the program's path.
pub fn compile_c(name: &str) -> (tempfile::TempDir, String) {
    let out = tempfile::tempdir().unwrap();
    let program = out.path().join(name).to_string_lossy().into_owned();
    let compiled = std::process::Command::new("cc")
        .arg("-o")
        .arg(&program)
        .arg(clients_dir().join(format!("c/{name}.c")))
        .arg("-lrdkafka")
        .output()
        .expect("cc (scripts/install-test-deps installs librdkafka-dev)");
    assert!(
        compiled.status.success(),
        "cc failed (scripts/install-test-deps installs librdkafka-dev): {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    (out, program)
}

/// Compiles `e2e/clients/java/{class}.java`, and the classes it uses from
/// that folder, against the Java client's jars (kafka-clients 3.9.1;
/// scripts/install-test-deps fetches them and a JDK) into a fresh folder;
/// returns the folder and the classpath to run with.
pub fn compile_java(class: &str) -> (tempfile::TempDir, String) {
    let lib = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../target/java-clients/pyflink/lib");
    let jars = [
        "kafka-clients",
        "slf4j-api",
        "lz4-java",
        "snappy-java",
        "zstd-jni",
    ]
    .iter()
    .map(|j| lib.join(format!("{j}.jar")).to_string_lossy().into_owned())
    .collect::<Vec<_>>()
    .join(":");
    let classes = tempfile::tempdir().unwrap();
    let source = clients_dir().join(format!("java/{class}.java"));
    let compiled = std::process::Command::new("javac")
        .args(["-cp", &jars, "-sourcepath"])
        .arg(clients_dir().join("java"))
        .arg("-d")
        .arg(classes.path())
        .arg(&source)
        .output()
        .expect("javac (scripts/install-test-deps installs a JDK and the client)");
    assert!(
        compiled.status.success(),
        "javac failed (scripts/install-test-deps fetches the client jars): {}",
        String::from_utf8_lossy(&compiled.stderr)
    );
    let classpath = format!("{}:{jars}", classes.path().display());
    (classes, classpath)
}

/// A plain HTTP/1.1 GET; returns (status, body).
pub fn http_get(addr: impl std::net::ToSocketAddrs, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
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
