//! kafka-python and kafkajs drive the same group flows as librdkafka;
//! confluent-kafka and the Java client run KIP-848 consumer groups and
//! transactions; confluent-kafka manages SCRAM users and meets the ACL
//! APIs: the scripts in e2e/clients check each
//! behaviour and exit non-zero on the first difference from Apache Kafka.
//! `scripts/install-test-deps` installs the clients.

mod common;

use common::clients_dir;
use kaas_broker::broker::BrokerConfig;
use kaas_broker::local::{LocalCluster, LocalClusterConfig};

async fn run_script(program: &str, script: &str) {
    let script = clients_dir().join(script).to_string_lossy().into_owned();
    run(program, vec![script]).await
}

/// Runs `program <args...> <bootstrap>` against a 3-broker local cluster;
/// the program prints "all checks passed".
async fn run(program: &str, args: Vec<String>) {
    run_on(program, args, None).await
}

/// What every cluster of these tests changes of the defaults.
fn quick_groups(b: &mut BrokerConfig) {
    b.groups.core.initial_rebalance_delay_ms = 200;
    // KIP-848 members heartbeat every second (5 s by default).
    b.groups.core.consumer.heartbeat_interval_ms = 1_000;
    b.groups.core.consumer.min_heartbeat_interval_ms = 1_000;
}

/// `run` on a cluster started as `local --sasl --admin-password PASSWORD`
/// when a password is given.
async fn run_on(program: &str, args: Vec<String>, sasl_admin_password: Option<&str>) {
    run_tuned(program, args, sasl_admin_password, quick_groups).await
}

/// `run_on` with the brokers' settings made by `tune`.
async fn run_tuned(
    program: &str,
    args: Vec<String>,
    sasl_admin_password: Option<&str>,
    tune: fn(&mut BrokerConfig),
) {
    run_prepared(program, args, sasl_admin_password, tune, |_| {}).await
}

/// `run_tuned`, `prepare` given the data folder before the brokers start.
async fn run_prepared(
    program: &str,
    args: Vec<String>,
    sasl_admin_password: Option<&str>,
    tune: fn(&mut BrokerConfig),
    prepare: fn(&std::path::Path),
) {
    let dir = tempfile::tempdir().unwrap();
    prepare(dir.path());
    let mut config = LocalClusterConfig::new(3, dir.path().to_path_buf());
    config.base_port = 0;
    config.sasl_admin_password = sasl_admin_password.map(str::to_string);
    config.tune = tune;
    let cluster = LocalCluster::start(config).await.unwrap();
    let mut args = args;
    args.push(cluster.bootstrap());
    let program = program.to_string();
    tokio::task::spawn_blocking(move || common::run_checks(&program, &args))
        .await
        .unwrap();
    cluster.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_group_and_admin_flows() {
    run_script("python3", "python/groups.py").await;
}

/// KIP-848: 3 then 4 then 3 members with `group.protocol=consumer`, a
/// ledger of their callbacks: no partition owned twice, every record
/// consumed and committed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_consumer_protocol_group() {
    run_script("python3", "python/consumer_protocol.py").await;
}

/// KIP-848 regular-expression subscriptions: two members on a regex share
/// the matching topics' partitions, a matching topic created later joins
/// them, the topic that does not match stays out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_regex_subscription_with_the_consumer_protocol() {
    run_script("python3", "python/consumer_regex.py").await;
}

/// Online migration: a rolling restart of 3 confluent-kafka consumers from
/// `group.protocol=classic` to `consumer` and back converts the group both
/// ways, with a ledger: no partition owned twice, no committed offset lost.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_rolls_a_group_from_classic_to_consumer_and_back() {
    run_script("python3", "python/migration.py").await;
}

/// The same rolling migration with the Java client 3.9.1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_rolls_a_group_from_classic_to_consumer_and_back() {
    let (_classes, classpath) = common::compile_java("Migration");
    run("java", vec!["-cp".into(), classpath, "Migration".into()]).await;
}

/// The Java client 3.9.1 producing with each of its codecs (snappy in
/// xerial's framing, which librdkafka does not write) and reading back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_produces_and_reads_every_codec() {
    let (_classes, classpath) = common::compile_java("Codecs");
    run("java", vec!["-cp".into(), classpath, "Codecs".into()]).await;
}

/// The same with the Java client 3.9.1.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_consumer_protocol_group() {
    let (_classes, classpath) = common::compile_java("ConsumerProtocol");
    run(
        "java",
        vec!["-cp".into(), classpath, "ConsumerProtocol".into()],
    )
    .await;
}

/// Retention by size and by time, and retention.ms altered on a live
/// topic, with brokers that check every half second.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_retention_by_size_and_time() {
    let script = common::clients_dir().join("python/retention.py");
    run_tuned(
        "python3",
        vec![script.to_string_lossy().into_owned()],
        None,
        |b| {
            quick_groups(b);
            b.log_retention.check_interval_ms = 500;
        },
    )
    .await;
}

/// Compaction: each key's last record at its offset, tombstones gone
/// after delete.retention.ms, keyless records refused, with two cleaner
/// threads that look every 200 ms (both after the same log: one cleans it
/// at a time).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_compaction() {
    let script = common::clients_dir().join("python/compaction.py");
    run_tuned(
        "python3",
        vec![script.to_string_lossy().into_owned()],
        None,
        |b| {
            quick_groups(b);
            b.log_cleaner.backoff_ms = 200;
            b.log_cleaner.threads = 2;
        },
    )
    .await;
}

/// The same at issue #17's scale: 1,000,000 updates over 10,000 keys
/// (2,000 of them deleted), each key's last value at its offset, the
/// tombstones gone after delete.retention.ms.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_compaction_of_a_million_records() {
    let script = common::clients_dir().join("python/compaction.py");
    let script = script.to_string_lossy().into_owned();
    run_tuned(
        "python3",
        [script.as_str(), "1000000", "10000", "16"]
            .map(String::from)
            .to_vec(),
        None,
        |b| {
            quick_groups(b);
            b.log_cleaner.backoff_ms = 200;
        },
    )
    .await;
}

/// The Java admin client 3.9.1 on topics: configs described and altered
/// with each operation, more partitions, DeleteRecords, DescribeLogDirs,
/// DescribeCluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_admin_manages_topics() {
    let (_classes, classpath) = common::compile_java("TopicAdmin");
    run("java", vec!["-cp".into(), classpath, "TopicAdmin".into()]).await;
}

/// Topics as confluent-kafka and kafka-python manage them: more partitions
/// (a decrease refused), DeleteRecords, DescribeCluster; kafka-python's
/// incremental config operations, INVALID_CONFIG and DescribeLogDirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_admin_clients_manage_topics() {
    run_script("python3", "python/topic_admin.py").await;
}

/// Replicas and leadership with kafka-python: a manual replica assignment
/// kept and led by each first replica, a reassignment listed and made by
/// the controller, a preferred election that needs none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafka_python_reassigns_partitions_and_elects_leaders() {
    run_script("python3", "python/reassignments.py").await;
}

/// librdkafka's 0113 `h_delete_topic` with Debian's librdkafka 2.0.2 (the
/// one kcat uses): a cooperative-sticky consumer loses the partition of a
/// topic deleted under it, keeps the other, and closes at once. 2.0.2
/// never finishes destroying the handle after this, against any broker
/// (librdkafka #4187, fixed in 2.1.0), so the program checks the destroy
/// only on a librdkafka that has the fix; `groups::a_cooperative_consumer_closes_after_a_subscribed_topic_is_deleted`
/// checks it with librdkafka 2.12.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn librdkafka_2_0_closes_a_cooperative_consumer_after_a_topic_is_deleted() {
    let (_dir, program) = common::compile_c("coop_delete_topic");
    run(&program, vec![]).await;
}

/// Topic configs: created, described with sources and synonyms, refused
/// with INVALID_CONFIG; a broker's settings described.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_topic_configs() {
    run_script("python3", "python/topic_configs.py").await;
}

/// Group configs (KIP-848): a group's session timeout and heartbeat
/// interval set, described with their sources, refused out of the
/// broker's bounds, deleted, with confluent-kafka and kafka-python, while
/// a consumer-protocol consumer of the group reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_admin_clients_manage_group_configs() {
    run_script("python3", "python/group_configs.py").await;
}

/// A topic's record configs: LogAppendTime seen by the producer and the
/// consumer, timestamps out of bounds refused with INVALID_TIMESTAMP,
/// compression.type recompressing a producer's lz4.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_record_configs() {
    run_script("python3", "python/record_configs.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kafkajs_group_and_admin_flows() {
    run_script("node", "js/groups.js").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_transactions() {
    run_script("python3", "python/transactions.py").await;
}

/// Client quotas with the Java admin, producer and consumer: quotas set,
/// described, refused with Apache's messages and removed; a producer and a
/// consumer over their byte rates throttled and held near them. The
/// brokers measure over 2 windows of 1 s (Apache's default is 11) so the
/// run takes seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_quotas() {
    let (_classes, classpath) = common::compile_java("Quotas");
    let args = vec!["-cp".into(), classpath, "Quotas".into()];
    run_tuned("java", args, None, |b| {
        quick_groups(b);
        b.quota_window = kaas_broker::client_quotas::rate::RateConfig {
            samples: 2,
            window_ms: 1000,
        };
    })
    .await;
}

/// Client quotas as librdkafka meets them (confluent-kafka 2.16): a
/// producer and a consumer over their byte rates see the throttle callback
/// fire and are held to their quotas. The quotas are on the volume before
/// the brokers start (what a restart reads back); the brokers measure over
/// 2 windows of 1 s.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_is_throttled_by_client_quotas() {
    fn quotas(data: &std::path::Path) {
        use kaas_broker::client_quotas::{alter, Alteration, ClientQuotas, Entity, DOCUMENT};
        let cluster_dir = data.join("__cluster");
        std::fs::create_dir_all(&cluster_dir).unwrap();
        let doc =
            kaas_broker::followed::Followed::<ClientQuotas>::open(&cluster_dir, DOCUMENT, |_| {})
                .unwrap();
        let quota = |client_id: &str, key: &str, value: f64| Alteration {
            entity: Entity::of(&[("client-id", Some(client_id))]),
            ops: vec![(key.to_string(), Some(value))],
        };
        let outcomes = doc
            .update(|q| {
                alter(
                    q,
                    &[
                        quota("py-quota-producer", "producer_byte_rate", 100_000.0),
                        quota("py-quota-consumer", "consumer_byte_rate", 200_000.0),
                    ],
                    false,
                )
            })
            .unwrap();
        assert!(outcomes.iter().all(|(_, o)| o.is_ok()), "{outcomes:?}");
    }
    let script = common::clients_dir()
        .join("python/quotas.py")
        .to_string_lossy()
        .into_owned();
    run_prepared(
        "python3",
        vec![script],
        None,
        |b| {
            quick_groups(b);
            b.quota_window = kaas_broker::client_quotas::rate::RateConfig {
                samples: 2,
                window_ms: 1000,
            };
        },
        quotas,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn java_client_transactions() {
    let (_classes, classpath) = common::compile_java("Transactions");
    run("java", vec!["-cp".into(), classpath, "Transactions".into()]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_scram_users_and_acl_apis() {
    run_script("python3", "python/scram_users.py").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluent_kafka_over_sasl_scram_with_acls() {
    let script = clients_dir()
        .join("python/sasl.py")
        .to_string_lossy()
        .into_owned();
    run_on("python3", vec![script], Some("admin-secret")).await;
}
