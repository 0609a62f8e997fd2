//! The command line's tests: flags, environment and server.properties
//! resolving to the same brokers.

use super::*;
use crate::group::assignor::BuiltinAssignor;
use crate::group::consumer::heartbeat::MigrationPolicy;

pub(super) fn parse(args: &[&str]) -> Command {
    let mut argv = vec!["kaas-broker"];
    argv.extend_from_slice(args);
    Cli::try_parse_from(argv).expect("parses").command
}

pub(super) fn resolve(args: &[&str]) -> anyhow::Result<Resolved> {
    parse(args).resolve()
}

pub(super) fn serve(args: &[&str]) -> Serve {
    match resolve(args).unwrap() {
        Resolved::Serve(s) => s,
        _ => panic!("not serve"),
    }
}

pub(super) fn config_file(text: &str) -> tempfile::NamedTempFile {
    let f = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(f.path(), text).unwrap();
    f
}

#[test]
fn a_server_properties_file_gives_the_same_broker_as_the_same_flags() {
    let flags = serve(&[
        "serve",
        "--id",
        "2",
        "--data",
        "/volume/kaas",
        "--listen",
        "0.0.0.0:19092",
        "--advertise",
        "kaas-2.kaas:19092",
        "--no-auto-create-topics",
        "--default-partitions",
        "6",
        "--segment-bytes",
        "1048576",
        "--group-initial-rebalance-delay-ms",
        "250",
        "--group-min-session-timeout-ms",
        "1000",
        "--group-max-session-timeout-ms",
        "60000",
        "--group-max-size",
        "50",
        "--group-consumer-session-timeout-ms",
        "20000",
        "--group-consumer-min-session-timeout-ms",
        "10000",
        "--group-consumer-max-session-timeout-ms",
        "30000",
        "--group-consumer-heartbeat-interval-ms",
        "1000",
        "--group-consumer-min-heartbeat-interval-ms",
        "500",
        "--group-consumer-max-heartbeat-interval-ms",
        "2000",
        "--group-consumer-max-size",
        "40",
        "--group-consumer-assignors",
        "range,org.apache.kafka.coordinator.group.assignor.UniformAssignor",
        "--group-consumer-regex-refresh-interval-ms",
        "30000",
        "--group-consumer-migration-policy",
        "upgrade",
        "--offsets-retention-minutes",
        "60",
        "--offsets-retention-check-interval-ms",
        "30000",
        "--max-connections",
        "500",
        "--max-connections-per-ip",
        "20",
        "--max-frame-bytes",
        "2097152",
        "--group-idle-unload-ms",
        "1000",
        "--max-loaded-groups",
        "10",
        "--group-log-sync",
        "volume",
        "--shutdown-drain-ms",
        "5000",
        "--transaction-max-timeout-ms",
        "600000",
        "--transactional-id-expiration-ms",
        "86400000",
        "--transaction-abort-timed-out-transaction-cleanup-interval-ms",
        "5000",
        "--transaction-remove-expired-transaction-cleanup-interval-ms",
        "60000",
        "--producer-id-expiration-ms",
        "3600000",
        "--producer-id-expiration-check-interval-ms",
        "30000",
        "--log-retention-ms",
        "-1",
        "--log-retention-minutes",
        "90",
        "--log-retention-bytes",
        "1073741824",
        "--log-retention-check-interval-ms",
        "1000",
        "--log-cleaner-enable",
        "false",
        "--log-cleaner-backoff-ms",
        "250",
        "--log-cleaner-dedupe-buffer-size",
        "1048576",
        "--log-cleaner-io-max-bytes-per-second",
        "5000000",
        "--log-cleaner-threads",
        "3",
        "--lag-metrics-max-partitions",
        "500",
        "--log-cleanup-policy",
        "compact",
        "--compression-type",
        "zstd",
        "--log-message-timestamp-type",
        "LogAppendTime",
        "--log-roll-hours",
        "2",
        "--http",
        "127.0.0.1:18080",
    ]);
    let file = config_file(
        "# Apache's names\n\
         node.id=2\n\
         log.dirs=/volume/kaas\n\
         listeners=PLAINTEXT://:19092,CONTROLLER://:19093\n\
         controller.listener.names=CONTROLLER\n\
         advertised.listeners=PLAINTEXT://kaas-2.kaas:19092\n\
         auto.create.topics.enable=false\n\
         num.partitions=6\n\
         log.segment.bytes=1048576\n\
         group.initial.rebalance.delay.ms=250\n\
         group.min.session.timeout.ms=1000\n\
         group.max.session.timeout.ms=60000\n\
         group.max.size=50\n\
         group.consumer.session.timeout.ms=20000\n\
         group.consumer.min.session.timeout.ms=10000\n\
         group.consumer.max.session.timeout.ms=30000\n\
         group.consumer.heartbeat.interval.ms=1000\n\
         group.consumer.min.heartbeat.interval.ms=500\n\
         group.consumer.max.heartbeat.interval.ms=2000\n\
         group.consumer.max.size=40\n\
         group.consumer.assignors=range, uniform\n\
         group.consumer.regex.refresh.interval.ms=30000\n\
         group.consumer.migration.policy=UPGRADE\n\
         offsets.retention.minutes : 60\n\
         offsets.retention.check.interval.ms=30000\n\
         max.connections=500\n\
         max.connections.per.ip=20\n\
         socket.request.max.bytes=2097152\n\
         kaas.group.idle.unload.ms=1000\n\
         kaas.max.loaded.groups=10\n\
         kaas.group.log.sync=volume\n\
         kaas.shutdown.drain.ms=5000\n\
         transaction.max.timeout.ms=600000\n\
         transactional.id.expiration.ms=86400000\n\
         transaction.abort.timed.out.transaction.cleanup.interval.ms=5000\n\
         transaction.remove.expired.transaction.cleanup.interval.ms=60000\n\
         producer.id.expiration.ms=3600000\n\
         producer.id.expiration.check.interval.ms=30000\n\
         log.retention.ms=-1\n\
         log.retention.minutes=90\n\
         log.retention.bytes=1073741824\n\
         log.retention.check.interval.ms=1000\n\
         log.cleaner.enable=false\n\
         log.cleaner.backoff.ms=250\n\
         log.cleaner.dedupe.buffer.size=1048576\n\
         log.cleaner.io.max.bytes.per.second=5000000\n\
         log.cleaner.threads=3\n\
         kaas.lag.metrics.max.partitions=500\n\
         log.cleanup.policy=compact\n\
         compression.type=zstd\n\
         log.message.timestamp.type=LogAppendTime\n\
         log.roll.hours=2\n\
         kaas.http.listen=127.0.0.1:18080\n",
    );
    let from_file = serve(&["serve", "--config", file.path().to_str().unwrap()]);
    let consumer = &flags.config.groups.core.consumer;
    assert_eq!(
        (
            consumer.session_timeout_ms,
            (
                consumer.min_session_timeout_ms,
                consumer.max_session_timeout_ms
            ),
            consumer.heartbeat_interval_ms,
            (
                consumer.min_heartbeat_interval_ms,
                consumer.max_heartbeat_interval_ms
            ),
            consumer.max_size,
            consumer.assignors.clone(),
            consumer.migration_policy,
            consumer.regex_refresh_interval_ms
        ),
        (
            20_000,
            (10_000, 30_000),
            1_000,
            (500, 2_000),
            40,
            vec![BuiltinAssignor::Range, BuiltinAssignor::Uniform],
            MigrationPolicy::Upgrade,
            30_000
        ),
        "the KIP-848 group settings took"
    );
    let t = &flags.config.transactions;
    assert_eq!(
        (
            t.core.max_timeout_ms,
            t.core.id_expiration_ms,
            t.abort_check_interval_ms,
            t.expiry_check_interval_ms,
            flags.config.producer_id_expiration_ms,
            flags.config.producer_id_expiration_check_interval_ms
        ),
        (600_000, 86_400_000, 5_000, 60_000, 3_600_000, 30_000),
        "the transaction and producer settings took"
    );
    let r = &flags.config.log_retention;
    assert_eq!(
        (r.ms, r.minutes, r.hours, r.bytes, r.check_interval_ms),
        (Some(-1), Some(90), None, Some(1 << 30), 1_000),
        "the log retention settings took"
    );
    let c = &flags.config.log_cleaner;
    assert_eq!(
        (
            c.enable,
            c.backoff_ms,
            c.dedupe_buffer_size,
            c.io_max_bytes_per_second,
            c.threads
        ),
        (false, 250, 1 << 20, 5e6, 3),
        "the log cleaner settings took"
    );
    assert_eq!(flags.config.lag_metrics_max_partitions, 500);
    assert_eq!(
        flags.config.groups.core.offsets_retention_check_interval_ms,
        30_000
    );
    assert_eq!(from_file.effective(), flags.effective());
    assert_eq!(
        format!("{:?}", from_file.config),
        format!("{:?}", flags.config)
    );
    assert_eq!(from_file.listen, flags.listen);
    let shown = settings::effective_line(&from_file.effective());
    assert_eq!(
        flags
            .config
            .topic_defaults
            .get("log.message.timestamp.type"),
        Some(&"LogAppendTime".to_string()),
        "a topic default took"
    );
    for key in [
        "num.partitions=6",
        "kaas.shutdown.drain.ms=5000",
        "log.dirs=/volume/kaas",
        "log.cleanup.policy=compact",
        "log.roll.hours=2",
    ] {
        assert!(shown.contains(key), "{key} in {shown}");
    }
    assert_eq!(
        from_file.warnings,
        ["listeners: controller listener 'CONTROLLER' ignored (kaas has no KRaft controller quorum)"]
    );
}

#[test]
fn flags_override_the_file_and_the_file_overrides_the_defaults() {
    let file = config_file("node.id=1\nlog.dirs=/from/file\nnum.partitions=3\ngroup.max.size=7\n");
    let s = serve(&[
        "serve",
        "--config",
        file.path().to_str().unwrap(),
        "--default-partitions",
        "9",
    ]);
    assert_eq!(s.config.default_partitions, 9, "the flag wins");
    assert_eq!(s.config.groups.core.max_group_size, 7, "the file's");
    assert_eq!(s.config.data_dir, PathBuf::from("/from/file"));
    let defaults = BrokerConfig::new(1, "/from/file".into(), "127.0.0.1", 9092);
    assert_eq!(
        s.config.groups.core.initial_rebalance_delay_ms,
        defaults.groups.core.initial_rebalance_delay_ms,
        "unset everywhere: the default"
    );
    assert_eq!(s.listen, DEFAULT_LISTEN.parse().unwrap());
    assert_eq!(
        (
            s.config.listeners[0].advertised_host.as_str(),
            s.config.listeners[0].advertised_port
        ),
        ("127.0.0.1", 9092),
        "advertised defaults to the listener"
    );
}

#[test]
fn unknown_keys_are_warned_about_by_name_and_ignored() {
    let file =
        config_file("node.id=0\nlog.dirs=/d\nnum.network.threads=3\nzookeeper.connect=zk:2181\n");
    let s = serve(&["serve", "--config", file.path().to_str().unwrap()]);
    assert_eq!(s.warnings.len(), 2);
    assert!(s.warnings[0].starts_with("num.network.threads: not a kaas setting"));
    assert!(s.warnings[1].starts_with("zookeeper.connect: not a kaas setting"));
}

#[test]
fn bad_values_are_refused_naming_the_key_and_the_reason() {
    for (text, key, reason) in [
        (
            "num.partitions=zero",
            "num.partitions",
            "'zero' is not a valid number",
        ),
        (
            "num.partitions=0",
            "num.partitions",
            "0 is below the minimum of 1",
        ),
        (
            "auto.create.topics.enable=yes",
            "auto.create.topics.enable",
            "'yes' is not true or false",
        ),
        ("log.dirs=/a,/b", "log.dirs", "one shared folder"),
        (
            "compression.type=brotli",
            "compression.type",
            "Invalid value brotli for configuration compression.type",
        ),
        (
            "log.message.timestamp.after.max.ms=-5",
            "log.message.timestamp.after.max.ms",
            "Value must be at least 0",
        ),
        (
            "listeners=SECRET://:9093",
            "listeners",
            "'SECRET' is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
        ),
        (
            "listeners=SSL://:9093\nadvertised.listeners=PLAINTEXT://h:9093",
            "advertised.listeners",
            "'PLAINTEXT' is not a listener of `listeners`",
        ),
        (
            "ssl.keystore.type=JKS",
            "ssl.keystore.type",
            "PEM files only",
        ),
        (
            "ssl.key.password=pw",
            "ssl.key.password",
            "unencrypted PEM keys",
        ),
        (
            "ssl.client.auth=maybe",
            "ssl.client.auth",
            "none, requested, required",
        ),
        (
            "ssl.principal.mapping.rules=RULE:(",
            "ssl.principal.mapping.rules",
            "",
        ),
        (
            "sasl.enabled.mechanisms=SCRAM-SHA-512,GSSAPI",
            "sasl.enabled.mechanisms",
            "'GSSAPI' is not served by kaas",
        ),
        (
            "sasl.enabled.mechanisms=OAUTHBEARER",
            "sasl.enabled.mechanisms",
            "'OAUTHBEARER' is not served by kaas",
        ),
        (
            "authorizer.class.name=kafka.security.authorizer.AclAuthorizer",
            "authorizer.class.name",
            "StandardAuthorizer",
        ),
        ("super.users=admin", "super.users", ""),
        (
            "allow.everyone.if.no.acl.found=maybe",
            "allow.everyone.if.no.acl.found",
            "not true or false",
        ),
        (
            "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;",
            "sasl.jaas.config",
            "username",
        ),
        (
            "listeners=PLAINTEXT://:9092,OTHER://:9094",
            "listeners",
            "'OTHER' is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL",
        ),
        (
            "listeners=CLIENT://:9092,BROKERS://:9094\n\
             listener.security.protocol.map=CLIENT:SSL,BROKERS:SSL",
            "inter.broker.listener.name",
            "none named PLAINTEXT",
        ),
        (
            "listeners=CLIENT://:9092,BROKERS://:9094\n\
             listener.security.protocol.map=CLIENT:SSL,BROKERS:SSL\n\
             inter.broker.listener.name=INTERNAL",
            "inter.broker.listener.name",
            "'INTERNAL' is not a listener of CLIENT, BROKERS",
        ),
        (
            "listeners=SSL://:9092,SSL://:9094",
            "listeners",
            "named twice",
        ),
        (
            "listener.name.client.ssl.client.auth=sometimes",
            "listener.name.client.ssl.client.auth",
            "none, requested, required",
        ),
        ("listeners=kafka:9092", "listeners", "NAME://HOST:PORT"),
        (
            "listeners=PLAINTEXT://kafka.example:9092",
            "listeners",
            "not an IP address",
        ),
        (
            "kaas.group.log.sync=sometimes",
            "kaas.group.log.sync",
            "journal, volume, file",
        ),
        (
            "group.min.session.timeout.ms=9000\ngroup.max.session.timeout.ms=8000",
            "group.min.session.timeout.ms",
            "above group.max.session.timeout.ms",
        ),
    ] {
        let err = Settings::from_properties(text).unwrap_err();
        assert_eq!(err.key, key, "{text}");
        assert!(err.reason.contains(reason), "{text}: {}", err.reason);
    }
    // Through the command: the file's path, the key and the reason.
    let file = config_file("node.id=1\nlog.dirs=/d\nnum.partitions=-2\n");
    let err = resolve(&["serve", "--config", file.path().to_str().unwrap()]).unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains(&file.path().display().to_string()), "{text}");
    assert!(
        text.contains("num.partitions: -2 is below the minimum of 1"),
        "{text}"
    );
}

/// The retention settings' bounds hold for flags as for the file.
#[test]
fn log_retention_bounds_hold_for_flags_and_files() {
    let refused = |args: &[&str]| format!("{:#}", resolve(args).unwrap_err());
    let base = ["serve", "--id", "0", "--data", "/d"];
    let text = refused(&[&base[..], &["--log-retention-hours", "-2"]].concat());
    assert!(
        text.contains("log.retention.hours: -2 is below the minimum of -1"),
        "{text}"
    );
    let text = refused(&[&base[..], &["--log-retention-check-interval-ms", "0"]].concat());
    assert!(
        text.contains("log.retention.check.interval.ms: 0 is below the minimum of 1"),
        "{text}"
    );
    let text = refused(&[&base[..], &["--compression-type", "brotli"]].concat());
    assert!(
        text.contains("compression.type: Invalid value brotli"),
        "a topic default's flag is checked as the file's key: {text}"
    );
    let text = refused(&[&base[..], &["--log-cleaner-io-max-bytes-per-second", "0.5"]].concat());
    assert!(
        text.contains("log.cleaner.io.max.bytes.per.second: 0.5 is below the minimum of 1"),
        "{text}"
    );
    let file = config_file("log.retention.ms=-5\n");
    let text = refused(&[&base[..], &["--config", file.path().to_str().unwrap()]].concat());
    assert!(
        text.contains("log.retention.ms: -5 is below the minimum of -1"),
        "{text}"
    );
}

/// Apache `GroupCoordinatorConfig`'s checks of the consumer group
/// settings together, wherever each comes from.
#[test]
fn consumer_group_bounds_and_assignors_are_checked_as_apache_checks_them() {
    let refused = |args: &[&str]| format!("{:#}", resolve(args).unwrap_err());
    fn with<'a>(more: &[&'a str]) -> Vec<&'a str> {
        let base = ["serve", "--id", "0", "--data", "/d"];
        base.iter().chain(more).copied().collect()
    }
    let text = refused(&with(&["--group-consumer-session-timeout-ms", "20000"]));
    assert!(
        text.contains("group.consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms"),
        "{text}"
    );
    let text = refused(&with(&["--group-consumer-heartbeat-interval-ms", "20000"]));
    assert!(
        text.contains("group.consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms"),
        "{text}"
    );
    let text = refused(&with(&[
        "--group-consumer-session-timeout-ms",
        "6000",
        "--group-consumer-min-session-timeout-ms",
        "6000",
        "--group-consumer-heartbeat-interval-ms",
        "6000",
    ]));
    assert!(
        text.contains("group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms"),
        "{text}"
    );
    // A file's bound and a flag's value meet.
    let file = config_file("group.consumer.min.heartbeat.interval.ms=500\n");
    let path = file.path().to_str().unwrap();
    let ok = serve(&with(&[
        "--config",
        path,
        "--group-consumer-heartbeat-interval-ms",
        "1000",
    ]));
    assert_eq!(ok.config.groups.core.consumer.heartbeat_interval_ms, 1_000);

    for (list, reason) in [
        ("", "an assignor's name is empty"),
        ("uniform,range,uniform", "uniform is listed twice"),
        ("sticky", "unknown assignor \"sticky\""),
        ("com.example.MyAssignor", "custom assignor classes"),
    ] {
        let file = config_file(&format!("group.consumer.assignors={list}\n"));
        let from_file = with(&["--config", file.path().to_str().unwrap()]);
        let from_flag = with(&["--group-consumer-assignors", list]);
        for args in [from_file, from_flag] {
            let text = match Cli::try_parse_from(std::iter::once("kaas-broker").chain(args)) {
                Err(e) => e.to_string(),
                Ok(cli) => format!("{:#}", cli.command.resolve().unwrap_err()),
            };
            assert!(
                text.contains("group.consumer.assignors")
                    || text.contains("--group-consumer-assignors"),
                "{list}: {text}"
            );
            assert!(text.contains(reason), "{list}: {text}");
        }
    }
}

#[test]
fn the_id_comes_from_the_pod_name_ordinal() {
    assert_eq!(id_of_pod(Some("demo-0")).unwrap(), 0);
    assert_eq!(id_of_pod(Some("kaas-prod-12")).unwrap(), 12);
    for bad in ["demo", "demo-", "demo-x1", "-", "demo-01", "demo-+1"] {
        let err = id_of_pod(Some(bad)).unwrap_err().to_string();
        assert!(err.contains(&format!("'{bad}'")), "{err}");
    }
    assert!(id_of_pod(None)
        .unwrap_err()
        .to_string()
        .contains("POD_NAME is not set"));
    // And it cannot be given together with --id.
    let mut argv = vec!["kaas-broker", "serve", "--id", "1", "--id-from-pod-name"];
    argv.extend(["--data", "/d"]);
    assert!(Cli::try_parse_from(argv).is_err());
}

#[test]
fn a_missing_id_or_folder_says_where_to_give_it() {
    let err = resolve(&["serve", "--data", "/d"]).unwrap_err();
    assert!(err.to_string().contains("node.id"), "{err}");
    let err = resolve(&["serve", "--id", "1"]).unwrap_err();
    assert!(err.to_string().contains("log.dirs"), "{err}");
}

#[test]
fn local_takes_its_host_and_base_port_from_listeners() {
    let file =
        config_file("listeners=PLAINTEXT://127.0.0.2:29092\nlog.dirs=/d\nnum.partitions=4\n");
    let local = |args: &[&str]| match resolve(args).unwrap() {
        Resolved::Local(l) => l,
        _ => panic!("not local"),
    };
    let l = local(&["local", "--config", file.path().to_str().unwrap()]);
    assert_eq!((l.host.as_str(), l.base_port), ("127.0.0.2", 29092));
    assert_eq!(l.data, PathBuf::from("/d"));
    assert_eq!(l.settings.value("num.partitions"), Some("4"));
    let plain = local(&["local"]);
    assert_eq!((plain.host.as_str(), plain.base_port), ("127.0.0.1", 9092));
    assert_eq!(plain.data, PathBuf::from("./data"));
}

#[test]
fn secrets_are_masked_in_the_effective_configuration() {
    let shown = settings::masked(vec![
        (
            "sasl.jaas.config",
            "org.apache...PlainLoginModule password=\"s3cret\";".into(),
        ),
        ("ssl.keystore.password", "s3cret".into()),
        ("num.partitions", "3".into()),
    ]);
    assert_eq!(
        shown,
        [
            ("sasl.jaas.config", "[hidden]".to_string()),
            ("ssl.keystore.password", "[hidden]".to_string()),
            ("num.partitions", "3".to_string()),
        ]
    );
    let line =
        settings::effective_line(&serve(&["serve", "--id", "0", "--data", "/d"]).effective());
    assert!(
        line.starts_with("node.id=0 listeners=PLAINTEXT://127.0.0.1:9092 "),
        "{line}"
    );
}

/// DescribeConfigs gives every broker setting a type (from v3): each
/// setting a broker lists, every optional one given, and each that
/// AlterConfigs changes at run time.
#[test]
fn every_broker_setting_has_a_type() {
    use crate::storage::topic_config::{broker_settings, ConfigType};
    let file = config_file(
        "log.retention.minutes=5\nlog.retention.ms=60000\nlog.cleanup.policy=compact\n",
    );
    let s = serve(&[
        "serve",
        "--id",
        "0",
        "--data",
        "/d",
        "--config",
        file.path().to_str().unwrap(),
        "--http",
        "127.0.0.1:8080",
    ]);
    let listed: Vec<&str> = s.effective().into_iter().map(|(k, _)| k).collect();
    assert!(listed.contains(&"log.retention.minutes") && listed.contains(&"kaas.http.listen"));
    for key in listed.into_iter().chain(broker_settings()) {
        assert!(settings::setting_type(key).is_some(), "{key} has no type");
    }
    for (key, kind) in [
        ("num.partitions", ConfigType::Int),
        ("log.retention.hours", ConfigType::Int),
        ("log.retention.ms", ConfigType::Long),
        ("log.roll.hours", ConfigType::Int),
        ("log.cleanup.policy", ConfigType::List),
        ("auto.create.topics.enable", ConfigType::Boolean),
        ("log.cleaner.io.max.bytes.per.second", ConfigType::Double),
        ("log.cleaner.dedupe.buffer.size", ConfigType::Long),
        ("sasl.jaas.config", ConfigType::Password),
    ] {
        assert_eq!(settings::setting_type(key), Some(kind), "{key}");
    }
    assert_eq!(settings::setting_type("no.such.setting"), None);
}

mod security;
