//! Apache's messages for refused topic configs (`ConfigDef`, `LogConfig`)
//! and DescribeConfigs' values, sources and synonyms
//! (`ConfigHelper.createTopicConfigEntry`).

use super::*;

fn configs(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn refused(pairs: &[(&str, &str)]) -> String {
    validate(&configs(pairs)).unwrap_err().0
}

#[test]
fn an_unknown_name_is_refused() {
    assert_eq!(
        refused(&[("dummy.doesntexist", "1")]),
        "Unknown topic config name: dummy.doesntexist"
    );
    // Broker names are not topic configs.
    assert_eq!(
        refused(&[("log.retention.ms", "1")]),
        "Unknown topic config name: log.retention.ms"
    );
}

#[test]
fn a_value_of_the_wrong_type_is_refused() {
    assert_eq!(
        refused(&[("retention.ms", "abc")]),
        "Invalid value abc for configuration retention.ms: Not a number of type LONG"
    );
    assert_eq!(
        refused(&[("segment.bytes", "2147483648")]),
        "Invalid value 2147483648 for configuration segment.bytes: Not a number of type INT"
    );
    assert_eq!(
        refused(&[("preallocate", "yes")]),
        "Invalid value yes for configuration preallocate: Expected value to be either true or false"
    );
    assert_eq!(
        refused(&[("min.cleanable.dirty.ratio", "half")]),
        "Invalid value half for configuration min.cleanable.dirty.ratio: Not a number of type DOUBLE"
    );
}

#[test]
fn a_value_out_of_its_range_is_refused() {
    for (name, value, message) in [
        (
            "retention.ms",
            "-5",
            "Invalid value -5 for configuration retention.ms: Value must be at least -1",
        ),
        (
            "segment.bytes",
            "1000",
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            "min.cleanable.dirty.ratio",
            "2",
            "Invalid value 2.0 for configuration min.cleanable.dirty.ratio: Value must be no more than 1",
        ),
        (
            "min.insync.replicas",
            "0",
            "Invalid value 0 for configuration min.insync.replicas: Value must be at least 1",
        ),
        (
            "compression.type",
            "brotli",
            "Invalid value brotli for configuration compression.type: String must be one of: uncompressed, zstd, lz4, snappy, gzip, producer",
        ),
        (
            "message.timestamp.type",
            "foo",
            "Invalid value foo for configuration message.timestamp.type: String must be one of: CreateTime, LogAppendTime",
        ),
        (
            "cleanup.policy",
            "delete,foo",
            "Invalid value foo for configuration cleanup.policy: String must be one of: compact, delete",
        ),
        (
            "compression.gzip.level",
            "10",
            "Invalid value 10 for configuration compression.gzip.level: Value must be between 1 and 9 or equal to -1",
        ),
        (
            "compression.lz4.level",
            "18",
            "Invalid value 18 for configuration compression.lz4.level: Value must be no more than 17",
        ),
        (
            "leader.replication.throttled.replicas",
            "a,b",
            "Invalid value [a, b] for configuration leader.replication.throttled.replicas: leader.replication.throttled.replicas must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...",
        ),
    ] {
        assert_eq!(refused(&[(name, value)]), message, "{name}={value}");
    }
}

/// Apache parses in `LogConfig`'s definition order: the first failure
/// there is the one reported, whatever the request's order.
#[test]
fn the_first_failure_in_definition_order_is_reported() {
    assert_eq!(
        refused(&[("retention.ms", "abc"), ("segment.bytes", "1")]),
        "Invalid value 1 for configuration segment.bytes: Value must be at least 1048576"
    );
}

#[test]
fn the_compaction_lags_must_not_cross() {
    assert_eq!(
        refused(&[
            ("min.compaction.lag.ms", "10"),
            ("max.compaction.lag.ms", "5")
        ]),
        "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)"
    );
}

#[test]
fn valid_values_pass_and_print_as_their_type_prints_them() {
    let given = configs(&[
        ("cleanup.policy", "compact, delete"),
        ("min.cleanable.dirty.ratio", "1"),
        ("retention.ms", " 1000 "),
        ("compression.gzip.level", "-1"),
        ("leader.replication.throttled.replicas", "0:1,1:2"),
        ("follower.replication.throttled.replicas", "*"),
        ("unclean.leader.election.enable", "TRUE"),
    ]);
    validate(&given).unwrap();
    let n = normalized(&given);
    assert_eq!(n["cleanup.policy"], "compact,delete");
    assert_eq!(n["min.cleanable.dirty.ratio"], "1.0");
    assert_eq!(n["retention.ms"], "1000");
    assert_eq!(n["unclean.leader.election.enable"], "true");
}

fn described<'a>(all: &'a [DescribedConfig], name: &str) -> &'a DescribedConfig {
    all.iter().find(|c| c.name == name).unwrap()
}

fn synonym(name: &str, value: &str, source: ConfigSource) -> ConfigSynonym {
    ConfigSynonym {
        name: name.into(),
        value: value.into(),
        source,
    }
}

#[test]
fn every_config_is_described_with_apaches_defaults() {
    let all = describe(&BTreeMap::new(), &BrokerTopicDefaults::default());
    assert_eq!(all.len(), TOPIC_CONFIGS.len());
    let retention = described(&all, "retention.ms");
    assert_eq!(
        (retention.value.as_str(), retention.source, retention.kind),
        ("604800000", ConfigSource::DefaultConfig, ConfigType::Long)
    );
    // Apache's quirk: log.retention.hours comes after the primary
    // log.retention.ms, which has no default: no synonyms.
    assert!(retention.synonyms.is_empty());
    let segment = described(&all, "segment.bytes");
    assert_eq!(
        segment.synonyms,
        vec![synonym(
            "log.segment.bytes",
            "1073741824",
            ConfigSource::DefaultConfig
        )]
    );
    assert_eq!(described(&all, "cleanup.policy").value, "delete");
    assert_eq!(described(&all, "min.cleanable.dirty.ratio").value, "0.5");
    assert!(described(&all, "remote.storage.enable").synonyms.is_empty());
}

#[test]
fn a_topic_override_then_the_broker_settings_are_the_synonyms() {
    let broker = BrokerTopicDefaults {
        set: configs(&[
            ("log.retention.ms", "5000"),
            ("log.segment.bytes", "2097152"),
        ]),
        defaults: configs(&[("log.segment.bytes", "268435456")]),
        ..Default::default()
    };
    let all = describe(&configs(&[("retention.ms", "1000")]), &broker);
    let retention = described(&all, "retention.ms");
    assert_eq!(
        (retention.value.as_str(), retention.source),
        ("1000", ConfigSource::TopicConfig)
    );
    assert_eq!(
        retention.synonyms,
        vec![
            synonym("retention.ms", "1000", ConfigSource::TopicConfig),
            synonym("log.retention.ms", "5000", ConfigSource::StaticBrokerConfig),
            // Apache lists the broker defaults after what is set.
            synonym("log.retention.hours", "168", ConfigSource::DefaultConfig),
        ]
    );
    let segment = described(&all, "segment.bytes");
    assert_eq!(
        (segment.value.as_str(), segment.source),
        ("2097152", ConfigSource::StaticBrokerConfig)
    );
    assert_eq!(
        segment.synonyms,
        vec![
            synonym(
                "log.segment.bytes",
                "2097152",
                ConfigSource::StaticBrokerConfig
            ),
            synonym(
                "log.segment.bytes",
                "268435456",
                ConfigSource::DefaultConfig
            ),
        ]
    );
}

#[test]
fn a_broker_setting_in_hours_is_converted_but_keeps_apaches_source() {
    let broker = BrokerTopicDefaults {
        set: configs(&[("log.retention.hours", "24")]),
        ..Default::default()
    };
    let all = describe(&BTreeMap::new(), &broker);
    let retention = described(&all, "retention.ms");
    assert_eq!(retention.value, "86400000");
    assert_eq!(retention.source, ConfigSource::DefaultConfig);
    assert!(retention.synonyms.is_empty());
}

/// What partition logs act on: the topic's override, else the broker's
/// settings by Apache's precedence (ms over minutes over hours), else
/// the defaults; `cleanup.policy` without `delete` turns retention off.
#[test]
fn log_settings_follow_overrides_then_broker_settings() {
    use crate::storage::cleaner::CompactionPolicy;
    use crate::storage::log::LogConfig;
    use crate::storage::records::Codec;
    use crate::storage::retention::{BrokerRetention, RetentionPolicy};
    use crate::storage::validator::RecordPolicy;
    let none = BTreeMap::new();
    let kaas = BrokerTopicDefaults::of(
        &LogConfig::default(),
        &BrokerRetention::default(),
        &BTreeMap::new(),
    );
    assert_eq!(
        log_settings(&none, &kaas),
        LogSettings {
            segment_bytes: 256 << 20,
            segment_ms: 604_800_000,
            segment_jitter_ms: 0,
            index_interval_bytes: 4096,
            max_message_bytes: 1_048_588,
            retention: RetentionPolicy::default(),
            compaction: CompactionPolicy::default(),
            records: RecordPolicy::default(),
        }
    );
    let broker = BrokerTopicDefaults::of(
        &LogConfig {
            segment_bytes: 1 << 20,
            ..LogConfig::default()
        },
        &BrokerRetention {
            minutes: Some(90),
            hours: Some(1),
            bytes: Some(1 << 30),
            ..BrokerRetention::default()
        },
        &BTreeMap::new(),
    );
    let s = log_settings(&none, &broker);
    assert_eq!(
        (s.segment_bytes, s.retention.ms, s.retention.bytes),
        (1 << 20, 90 * 60_000, 1 << 30)
    );
    let described = describe(&none, &broker);
    let retention_ms = described.iter().find(|c| c.name == "retention.ms").unwrap();
    assert_eq!(retention_ms.value, "5400000");
    let overrides = configs(&[
        ("retention.ms", "-1"),
        ("retention.bytes", "1000"),
        ("segment.bytes", "2000000"),
        ("cleanup.policy", "compact"),
        ("max.message.bytes", "2000"),
        ("delete.retention.ms", "5000"),
        ("min.compaction.lag.ms", "10"),
        ("max.compaction.lag.ms", "20000"),
        ("min.cleanable.dirty.ratio", "0.25"),
        ("message.timestamp.type", "LogAppendTime"),
        ("message.timestamp.before.max.ms", "1000"),
        ("message.timestamp.after.max.ms", "2000"),
        ("compression.type", "zstd"),
        ("compression.zstd.level", "-7"),
        ("segment.jitter.ms", "500"),
    ]);
    assert_eq!(
        log_settings(&overrides, &broker),
        LogSettings {
            segment_bytes: 2_000_000,
            segment_ms: 604_800_000,
            segment_jitter_ms: 500,
            index_interval_bytes: 4096,
            max_message_bytes: 2000,
            retention: RetentionPolicy {
                ms: -1,
                bytes: 1000,
                delete: false,
            },
            compaction: CompactionPolicy {
                compact: true,
                delete_retention_ms: 5000,
                min_compaction_lag_ms: 10,
                max_compaction_lag_ms: 20_000,
                min_cleanable_dirty_ratio: 0.25,
            },
            records: RecordPolicy {
                compact: true,
                log_append_time: true,
                timestamp_before_max_ms: 1000,
                timestamp_after_max_ms: 2000,
                compression: Some(Codec::Zstd { level: -7 }),
            },
        }
    );
    let both = configs(&[("cleanup.policy", "compact,delete")]);
    assert!(log_settings(&both, &broker).retention.delete);
    for (codec, expected) in [
        ("producer", None),
        ("uncompressed", Some(Codec::None)),
        ("gzip", Some(Codec::Gzip { level: -1 })),
        ("snappy", Some(Codec::Snappy)),
        ("lz4", Some(Codec::Lz4 { level: 9 })),
        ("zstd", Some(Codec::Zstd { level: 3 })),
    ] {
        let topic = configs(&[("compression.type", codec)]);
        assert_eq!(log_settings(&topic, &broker).records.compression, expected);
    }
}

/// Apache's broker settings for topic defaults (`log.cleanup.policy`,
/// `compression.type`, `log.message.timestamp.type`, `log.roll.hours`):
/// checked in the topic config's unit, in force for topics without their
/// own, described as STATIC_BROKER_CONFIG with the broker key as synonym.
#[test]
fn broker_settings_default_the_topic_configs_they_name() {
    use crate::storage::log::LogConfig;
    use crate::storage::records::Codec;
    use crate::storage::retention::BrokerRetention;
    let names: Vec<&str> = broker_settings().collect();
    let unique: std::collections::BTreeSet<&&str> = names.iter().collect();
    assert_eq!(unique.len(), names.len(), "one flag each");
    for own in [
        "log.segment.bytes",
        "log.retention.ms",
        "log.retention.hours",
    ] {
        assert!(!names.contains(&own), "{own} has its own field");
    }
    for key in [
        "log.cleanup.policy",
        "compression.type",
        "log.message.timestamp.type",
        "log.message.timestamp.after.max.ms",
        "log.roll.hours",
        "log.roll.jitter.ms",
        "message.max.bytes",
        "log.cleaner.delete.retention.ms",
    ] {
        assert!(names.contains(&key), "{key}");
    }
    assert_eq!(check_broker_setting("compression.type", "zstd"), Ok(()));
    assert_eq!(check_broker_setting("log.roll.hours", "2"), Ok(()));
    assert_eq!(
        check_broker_setting("compression.type", "brotli"),
        Err(
            "Invalid value brotli for configuration compression.type: String must be one of: \
             uncompressed, zstd, lz4, snappy, gzip, producer"
                .into()
        )
    );
    assert!(check_broker_setting("log.message.timestamp.type", "Now").is_err());
    assert!(
        check_broker_setting("log.roll.hours", "0").is_err(),
        "at least 1 ms"
    );
    assert_eq!(topic_config_of("log.roll.hours"), Some("segment.ms"));

    let given = configs(&[
        ("log.cleanup.policy", "compact"),
        ("compression.type", "zstd"),
        ("log.message.timestamp.type", "LogAppendTime"),
        ("log.roll.hours", "2"),
    ]);
    let broker =
        BrokerTopicDefaults::of(&LogConfig::default(), &BrokerRetention::default(), &given);
    let s = log_settings(&BTreeMap::new(), &broker);
    assert!(s.compaction.compact && s.records.compact);
    assert!(s.records.log_append_time);
    assert_eq!(s.records.compression, Some(Codec::Zstd { level: 3 }));
    assert_eq!(s.segment_ms, 2 * 3_600_000);
    let own = log_settings(
        &configs(&[("message.timestamp.type", "CreateTime")]),
        &broker,
    );
    assert!(!own.records.log_append_time, "a topic's own config wins");
    let described = describe(&BTreeMap::new(), &broker);
    let ts = described
        .iter()
        .find(|c| c.name == "message.timestamp.type")
        .unwrap();
    assert_eq!(
        (ts.value.as_str(), ts.source),
        ("LogAppendTime", ConfigSource::StaticBrokerConfig)
    );
    assert_eq!(ts.synonyms[0].name, "log.message.timestamp.type");
}
