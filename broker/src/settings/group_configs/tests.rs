//! Apache's `GroupConfigTest` and `GroupConfigManagerTest`, by name, and
//! the IncrementalAlterConfigs operations on a group.

use super::*;
use crate::group::configs::GroupConfigs;
use crate::group::consumer::config::ConsumerTiming;

fn props(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

fn broker() -> ConsumerGroupConfig {
    ConsumerGroupConfig::default()
}

fn valid_group_config() -> BTreeMap<String, String> {
    props(&[
        (CONSUMER_SESSION_TIMEOUT_MS, "45000"),
        (CONSUMER_HEARTBEAT_INTERVAL_MS, "5000"),
        (SHARE_SESSION_TIMEOUT_MS, "45000"),
        (SHARE_HEARTBEAT_INTERVAL_MS, "5000"),
        (SHARE_RECORD_LOCK_DURATION_MS, "30000"),
    ])
}

#[test]
fn test_from_props_invalid() {
    for def in &DEFINITIONS {
        for bad in ["not_a_number", "-0.1", "1.2"] {
            let e = validate(&props(&[(def.name, bad)]), &broker()).unwrap_err();
            assert_eq!(
                e.0,
                format!(
                    "Invalid value {bad} for configuration {}: Not a number of type INT",
                    def.name
                )
            );
        }
        // Below the floor every group config has (1, or 1000 for the lock).
        let e = validate(&props(&[(def.name, "0")]), &broker()).unwrap_err();
        assert!(e.0.starts_with("Invalid value 0 for configuration"), "{e}");
    }
}

#[test]
fn test_invalid_props() {
    let cases = [
        (
            CONSUMER_SESSION_TIMEOUT_MS,
            "1",
            "consumer.session.timeout.ms must be greater than or equal to group.consumer.min.session.timeout.ms",
        ),
        (
            CONSUMER_SESSION_TIMEOUT_MS,
            "70000",
            "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
        ),
        (
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            "1",
            "consumer.heartbeat.interval.ms must be greater than or equal to group.consumer.min.heartbeat.interval.ms",
        ),
        (
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            "70000",
            "consumer.heartbeat.interval.ms must be less than or equal to group.consumer.max.heartbeat.interval.ms",
        ),
        (
            SHARE_SESSION_TIMEOUT_MS,
            "1",
            "share.session.timeout.ms must be greater than or equal to group.share.min.session.timeout.ms",
        ),
        (
            SHARE_SESSION_TIMEOUT_MS,
            "70000",
            "share.session.timeout.ms must be less than or equal to group.share.max.session.timeout.ms",
        ),
        (
            SHARE_HEARTBEAT_INTERVAL_MS,
            "1",
            "share.heartbeat.interval.ms must be greater than or equal to group.share.min.heartbeat.interval.ms",
        ),
        (
            SHARE_HEARTBEAT_INTERVAL_MS,
            "70000",
            "share.heartbeat.interval.ms must be less than or equal to group.share.max.heartbeat.interval.ms",
        ),
        (
            SHARE_RECORD_LOCK_DURATION_MS,
            "10000",
            "share.record.lock.duration.ms must be greater than or equal to group.share.min.record.lock.duration.ms",
        ),
        (
            SHARE_RECORD_LOCK_DURATION_MS,
            "70000",
            "share.record.lock.duration.ms must be less than or equal to group.share.max.record.lock.duration.ms",
        ),
    ];
    assert_eq!(validate(&valid_group_config(), &broker()), Ok(()));
    for (name, value, message) in cases {
        let mut p = valid_group_config();
        p.insert(name.to_string(), value.to_string());
        assert_eq!(
            validate(&p, &broker()),
            Err(InvalidConfig(message.to_string())),
            "{name}={value}"
        );
    }
}

#[test]
fn a_session_timeout_must_exceed_the_heartbeat_interval() {
    let wide = ConsumerGroupConfig {
        min_session_timeout_ms: 1_000,
        min_heartbeat_interval_ms: 1_000,
        ..broker()
    };
    let p = props(&[
        (CONSUMER_SESSION_TIMEOUT_MS, "10000"),
        (CONSUMER_HEARTBEAT_INTERVAL_MS, "10000"),
    ]);
    assert_eq!(
        validate(&p, &wide),
        Err(InvalidConfig(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                .into()
        ))
    );
}

#[test]
fn the_broker_settings_stand_in_for_what_a_group_does_not_override() {
    // Apache's `testFromPropsWithDefaultValue`, with the broker's settings
    // as the defaults: a group overriding only its session timeout keeps
    // the broker's heartbeat interval, and is checked against it.
    let b = ConsumerGroupConfig {
        session_timeout_ms: 30_000,
        min_session_timeout_ms: 1_000,
        heartbeat_interval_ms: 3_000,
        min_heartbeat_interval_ms: 1_000,
        ..broker()
    };
    let mut configs = GroupConfigs::default();
    configs.set("g", props(&[(CONSUMER_SESSION_TIMEOUT_MS, "20000")]));
    assert_eq!(
        configs.consumer_timing("g", &b),
        ConsumerTiming {
            session_timeout_ms: 20_000,
            heartbeat_interval_ms: 3_000
        }
    );
    assert_eq!(
        configs.consumer_timing("other", &b),
        ConsumerTiming {
            session_timeout_ms: 30_000,
            heartbeat_interval_ms: 3_000
        }
    );
    // 3,000 is within the broker's bounds but not above its interval.
    assert_eq!(
        validate(&props(&[(CONSUMER_SESSION_TIMEOUT_MS, "3000")]), &b),
        Err(InvalidConfig(
            "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"
                .into()
        ))
    );
}

#[test]
fn test_invalid_config_name() {
    let p = props(&[
        (CONSUMER_SESSION_TIMEOUT_MS, "50000"),
        ("invalid.config.name", "10"),
    ]);
    assert_eq!(
        validate(&p, &broker()),
        Err(InvalidConfig(
            "Unknown group config name: invalid.config.name".into()
        ))
    );
}

#[test]
fn operations_set_and_delete_and_refuse_append_and_subtract() {
    let set = |name: &str, v: &str| (name.to_string(), AlterOp::Set, Some(v.to_string()));
    let current = apply_ops(
        &BTreeMap::new(),
        &[
            set(CONSUMER_SESSION_TIMEOUT_MS, " 50000 "),
            set(CONSUMER_HEARTBEAT_INTERVAL_MS, "10000"),
        ],
        &broker(),
    )
    .unwrap();
    // Written back as Apache writes an INT.
    assert_eq!(
        current,
        props(&[
            (CONSUMER_SESSION_TIMEOUT_MS, "50000"),
            (CONSUMER_HEARTBEAT_INTERVAL_MS, "10000"),
        ])
    );
    let deleted = apply_ops(
        &current,
        &[(CONSUMER_HEARTBEAT_INTERVAL_MS.into(), AlterOp::Delete, None)],
        &broker(),
    )
    .unwrap();
    assert_eq!(deleted, props(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]));
    for (op, name) in [(AlterOp::Append, "APPEND"), (AlterOp::Subtract, "SUBTRACT")] {
        assert_eq!(
            apply_ops(
                &current,
                &[(CONSUMER_SESSION_TIMEOUT_MS.into(), op, Some("1".into()))],
                &broker()
            ),
            Err(InvalidConfig(format!(
                "Can't {name} to key consumer.session.timeout.ms because its type is not LIST."
            )))
        );
    }
}

#[test]
fn describe_names_the_group_override_and_else_the_broker_value() {
    let b = ConsumerGroupConfig {
        heartbeat_interval_ms: 6_000,
        ..broker()
    };
    let described = describe(&props(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]), &b);
    let names: Vec<&str> = described.iter().map(|d| d.name).collect();
    assert_eq!(
        names,
        [
            CONSUMER_SESSION_TIMEOUT_MS,
            CONSUMER_HEARTBEAT_INTERVAL_MS,
            SHARE_SESSION_TIMEOUT_MS,
            SHARE_HEARTBEAT_INTERVAL_MS,
            SHARE_RECORD_LOCK_DURATION_MS
        ]
    );
    let session = &described[0];
    assert_eq!(
        (session.value.as_str(), session.source),
        ("50000", ConfigSource::GroupConfig)
    );
    assert_eq!(session.synonyms.len(), 1);
    assert_eq!(session.synonyms[0].source, ConfigSource::GroupConfig);
    let interval = &described[1];
    assert_eq!(
        (interval.value.as_str(), interval.source),
        ("6000", ConfigSource::DefaultConfig)
    );
    assert_eq!(described[4].value, "30000");
    assert!(described.iter().all(|d| d.kind.code() == 3));
}

#[test]
fn a_group_with_no_override_left_has_no_entry() {
    let mut configs = GroupConfigs::default();
    configs.set("g", props(&[(CONSUMER_SESSION_TIMEOUT_MS, "50000")]));
    configs.set("g", BTreeMap::new());
    assert_eq!(configs, GroupConfigs::default());
}
