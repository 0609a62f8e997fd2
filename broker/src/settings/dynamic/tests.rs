use super::*;
use crate::storage::topic_config::{describe as describe_topic, BrokerTopicDefaults};

fn map(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn op(name: &str, op: AlterOp, value: &str) -> (String, AlterOp, Option<String>) {
    (name.to_string(), op, Some(value.to_string()))
}

#[test]
fn set_and_delete_change_one_scope_and_alter_configs_replaces_it() {
    let current = map(&[("log.retention.ms", "1000"), ("compression.type", "gzip")]);
    let altered = alter(
        &current,
        &[
            op("log.retention.ms", AlterOp::Set, "2000"),
            ("compression.type".into(), AlterOp::Delete, None),
            op("log.cleaner.backoff.ms", AlterOp::Set, "100"),
        ],
        false,
    )
    .unwrap();
    assert_eq!(
        altered,
        map(&[
            ("log.retention.ms", "2000"),
            ("log.cleaner.backoff.ms", "100")
        ])
    );
    let replaced = alter(
        &current,
        &[op("log.segment.bytes", AlterOp::Set, "1048576")],
        true,
    )
    .unwrap();
    assert_eq!(replaced, map(&[("log.segment.bytes", "1048576")]));
}

#[test]
fn settings_kaas_does_not_change_at_run_time_are_refused_with_apaches_message() {
    let refused = alter(
        &BTreeMap::new(),
        &[
            op("listeners", AlterOp::Set, "PLAINTEXT://:9092"),
            op("max.connections", AlterOp::Set, "10"),
            op("log.retention.ms", AlterOp::Set, "10"),
        ],
        false,
    )
    .unwrap_err();
    let Refusal::InvalidRequest(message) = refused else {
        panic!("{refused:?}")
    };
    assert!(
        message.starts_with(
            "Cannot update these configs dynamically: Set(listeners, max.connections)"
        ),
        "{message}"
    );
    // A setting deleted is not checked: it leaves the set.
    let stored = map(&[("log.retention.ms", "10")]);
    assert_eq!(
        alter(
            &stored,
            &[("listeners".into(), AlterOp::Delete, None)],
            false
        )
        .unwrap(),
        stored
    );
}

#[test]
fn values_are_checked_as_the_broker_checks_them_at_start() {
    for (key, value, says) in [
        (
            "log.cleaner.backoff.ms",
            "-1",
            "log.cleaner.backoff.ms: '-1' is not a valid number",
        ),
        (
            "log.cleaner.dedupe.buffer.size",
            "0",
            "0 is below the minimum of 1",
        ),
        (
            "log.cleaner.io.max.bytes.per.second",
            "fast",
            "'fast' is not a valid number",
        ),
        (
            "log.retention.ms",
            "soon",
            "Invalid value soon for configuration log.retention.ms",
        ),
        (
            "compression.type",
            "brotli",
            "Invalid value brotli for configuration compression.type",
        ),
        (
            "log.cleanup.policy",
            "shred",
            "Invalid value shred for configuration log.cleanup.policy",
        ),
    ] {
        let refused = alter(&BTreeMap::new(), &[op(key, AlterOp::Set, value)], false);
        match refused {
            Err(Refusal::InvalidRequest(m)) => assert!(m.contains(says), "{key}: {m}"),
            other => panic!("{key}={value}: {other:?}"),
        }
    }
    // A value with a line break is one value, not a second setting.
    let refused = alter(
        &BTreeMap::new(),
        &[op("log.cleaner.backoff.ms", AlterOp::Set, "1\nlisteners=x")],
        false,
    );
    assert!(
        matches!(refused, Err(Refusal::InvalidRequest(_))),
        "{refused:?}"
    );
}

#[test]
fn append_and_subtract_work_on_list_settings_from_apaches_default() {
    let appended = alter(
        &BTreeMap::new(),
        &[op("log.cleanup.policy", AlterOp::Append, "compact,delete")],
        false,
    )
    .unwrap();
    assert_eq!(appended, map(&[("log.cleanup.policy", "delete,compact")]));
    let subtracted = alter(
        &appended,
        &[op("log.cleanup.policy", AlterOp::Subtract, "delete")],
        false,
    )
    .unwrap();
    assert_eq!(subtracted, map(&[("log.cleanup.policy", "compact")]));
    for (verb, o) in [("append", AlterOp::Append), ("subtract", AlterOp::Subtract)] {
        assert_eq!(
            alter(&BTreeMap::new(), &[op("log.retention.ms", o, "1")], false),
            Err(Refusal::InvalidConfig(format!(
                "Config value {verb} is not allowed for config key: log.retention.ms"
            )))
        );
    }
}

#[test]
fn a_brokers_own_cleaner_settings_win_over_every_brokers() {
    let started = CleanerConfig::default();
    let dynamic = DynamicConfigs {
        default: map(&[
            ("log.cleaner.backoff.ms", "100"),
            ("log.cleaner.io.max.bytes.per.second", "1000000"),
        ]),
        brokers: [
            (1, map(&[("log.cleaner.backoff.ms", "7")])),
            (2, map(&[("log.cleaner.backoff.ms", "9")])),
        ]
        .into(),
    };
    let (one, warning) = cleaner_config(started, &dynamic, 1);
    assert_eq!(warning, None);
    assert_eq!(one.backoff_ms, 7);
    assert_eq!(one.io_max_bytes_per_second, 1_000_000.0);
    assert_eq!(one.dedupe_buffer_size, started.dedupe_buffer_size);
    let (three, _) = cleaner_config(started, &dynamic, 3);
    assert_eq!(three.backoff_ms, 100);
    let (untouched, _) = cleaner_config(started, &DynamicConfigs::default(), 1);
    assert_eq!(untouched, started);
}

#[test]
fn the_document_round_trips_through_json() {
    let dynamic = DynamicConfigs {
        default: map(&[("log.retention.ms", "1000")]),
        brokers: [(3, map(&[("compression.type", "zstd")]))].into(),
    };
    let json = serde_json::to_string(&dynamic).unwrap();
    assert_eq!(
        serde_json::from_str::<DynamicConfigs>(&json).unwrap(),
        dynamic
    );
    assert_eq!(
        serde_json::from_str::<DynamicConfigs>("{}").unwrap(),
        DynamicConfigs::default()
    );
    let mut emptied = dynamic.clone();
    emptied.set(Scope::Broker(3), BTreeMap::new());
    assert!(emptied.brokers.is_empty());
}

fn entry<'a>(entries: &'a [BrokerEntry], name: &str) -> &'a BrokerEntry {
    entries
        .iter()
        .find(|e| e.name == name)
        .unwrap_or_else(|| panic!("{name} not described"))
}

#[test]
fn a_broker_is_described_with_its_settings_in_force_and_their_sources() {
    let defaults = vec![
        ("log.retention.hours", "168".to_string()),
        ("log.cleaner.backoff.ms", "15000".to_string()),
        ("listeners", "PLAINTEXT://:9092".to_string()),
    ];
    let started = vec![
        ("log.retention.hours", "24".to_string()),
        ("log.cleaner.backoff.ms", "15000".to_string()),
        ("listeners", "PLAINTEXT://:9092".to_string()),
    ];
    let dynamic = DynamicConfigs {
        default: map(&[
            ("log.retention.ms", "60000"),
            ("log.cleaner.backoff.ms", "50"),
        ]),
        brokers: [(0, map(&[("log.cleaner.backoff.ms", "5")]))].into(),
    };
    let own = describe(&started, &defaults, &dynamic, Scope::Broker(0));
    let backoff = entry(&own, "log.cleaner.backoff.ms");
    assert_eq!(backoff.value.as_deref(), Some("5"));
    assert_eq!(backoff.source, ConfigSource::DynamicBrokerConfig);
    assert!(!backoff.read_only);
    assert_eq!(
        backoff.synonyms,
        vec![
            (
                "log.cleaner.backoff.ms".into(),
                Some("5".into()),
                ConfigSource::DynamicBrokerConfig
            ),
            (
                "log.cleaner.backoff.ms".into(),
                Some("50".into()),
                ConfigSource::DynamicDefaultBrokerConfig
            ),
            (
                "log.cleaner.backoff.ms".into(),
                Some("15000".into()),
                ConfigSource::DefaultConfig
            ),
        ]
    );
    // Not among the settings started with: listed because it was changed.
    let retention_ms = entry(&own, "log.retention.ms");
    assert_eq!(retention_ms.value.as_deref(), Some("60000"));
    assert_eq!(
        retention_ms.source,
        ConfigSource::DynamicDefaultBrokerConfig
    );
    // Its synonym set at a higher precedence is dropped from its own list.
    let hours = entry(&own, "log.retention.hours");
    assert_eq!(hours.value.as_deref(), Some("24"));
    assert_eq!(hours.source, ConfigSource::StaticBrokerConfig);
    assert_eq!(hours.synonyms[0].0, "log.retention.hours");
    let listeners = entry(&own, "listeners");
    assert!(listeners.read_only);
    assert_eq!(listeners.source, ConfigSource::DefaultConfig);

    // The cluster-wide defaults: only those set, without any broker's own.
    let cluster = describe(&started, &defaults, &dynamic, Scope::Default);
    let names: Vec<&str> = cluster.iter().map(|e| e.name.as_str()).collect();
    assert_eq!(names, ["log.cleaner.backoff.ms", "log.retention.ms"]);
    let backoff = entry(&cluster, "log.cleaner.backoff.ms");
    assert_eq!(backoff.value.as_deref(), Some("50"));
    assert_eq!(backoff.source, ConfigSource::DynamicDefaultBrokerConfig);
    assert!(backoff
        .synonyms
        .iter()
        .all(|s| s.2 != ConfigSource::DynamicBrokerConfig));
}

#[test]
fn topic_configs_follow_the_dynamic_settings_above_the_static_ones() {
    let started = BrokerTopicDefaults {
        set: map(&[("log.retention.ms", "5000"), ("compression.type", "gzip")]),
        ..BrokerTopicDefaults::default()
    };
    let value = |d: &BrokerTopicDefaults, name: &str| {
        let c = describe_topic(&BTreeMap::new(), d)
            .into_iter()
            .find(|c| c.name == name)
            .unwrap();
        (c.value, c.source)
    };
    let every = started.with_dynamic(
        &map(&[
            ("log.retention.ms", "1000"),
            ("log.cleaner.backoff.ms", "5"),
        ]),
        &BTreeMap::new(),
    );
    assert!(!every.dynamic_default.contains_key("log.cleaner.backoff.ms"));
    assert_eq!(
        value(&every, "retention.ms"),
        ("1000".into(), ConfigSource::DynamicDefaultBrokerConfig)
    );
    assert_eq!(
        value(&every, "compression.type"),
        ("gzip".into(), ConfigSource::StaticBrokerConfig)
    );
    // Every broker's log.retention.hours wins over the static
    // log.retention.ms (a higher layer's synonyms come first), though the
    // source is the first synonym of the primary name's, as Apache's
    // `configSynonyms` drops those before it.
    let hours = started.with_dynamic(&map(&[("log.retention.hours", "1")]), &BTreeMap::new());
    assert_eq!(
        value(&hours, "retention.ms"),
        ("3600000".into(), ConfigSource::StaticBrokerConfig)
    );
    let own = started.with_dynamic(
        &map(&[("compression.type", "lz4")]),
        &map(&[("compression.type", "zstd")]),
    );
    assert_eq!(
        value(&own, "compression.type"),
        ("zstd".into(), ConfigSource::DynamicBrokerConfig)
    );
    let synonyms = describe_topic(&BTreeMap::new(), &own)
        .into_iter()
        .find(|c| c.name == "compression.type")
        .unwrap()
        .synonyms;
    let sources: Vec<ConfigSource> = synonyms.iter().map(|s| s.source).collect();
    assert_eq!(
        sources,
        [
            ConfigSource::DynamicBrokerConfig,
            ConfigSource::DynamicDefaultBrokerConfig,
            ConfigSource::StaticBrokerConfig,
            ConfigSource::DefaultConfig
        ]
    );
}

#[test]
fn cleaner_threads_change_within_apaches_bounds() {
    let started = CleanerConfig {
        threads: 4,
        ..CleanerConfig::default()
    };
    let with = |threads: &str| DynamicConfigs {
        default: map(&[("log.cleaner.threads", threads)]),
        ..DynamicConfigs::default()
    };
    let check = |threads: &str| check_cleaner_threads(&started, started, &with(threads), 0);
    for ok in ["2", "4", "8"] {
        assert_eq!(check(ok), Ok(()), "{ok}");
    }
    for (threads, says) in [
        (
            "1",
            "Log cleaner threads cannot be reduced to less than half the current value 4",
        ),
        (
            "9",
            "Log cleaner threads cannot be increased to more than double the current value 4",
        ),
        ("0", "Log cleaner threads should be at least 1"),
    ] {
        assert_eq!(
            check(threads),
            Err(Refusal::InvalidRequest(says.to_string())),
            "{threads}"
        );
    }
    let (config, _) = cleaner_config(started, &with("6"), 0);
    assert_eq!(config.threads, 6);
    // The dedupe buffer and the I/O limit are shared by the threads.
    let shared = CleanerConfig {
        threads: 2,
        io_max_bytes_per_second: 1_000_000.0,
        ..CleanerConfig::default()
    };
    assert_eq!(shared.io_max_bytes_per_second_per_thread(), 500_000.0);
    assert!(shared.map_capacity() * 2 <= CleanerConfig::default().map_capacity() + 1);
}
