//! Dynamic broker configs on the wire: IncrementalAlterConfigs and
//! AlterConfigs on BROKER resources, kept on the shared volume, described
//! with Apache's sources, in force at once on this broker's topics, open
//! partitions and cleaner, and on another broker at its next look; refused
//! with Apache's codes, nothing stored by a refusal or a validate-only
//! change.

use std::sync::Arc;

use kafka_protocol::messages::describe_configs_response::DescribeConfigsResult;
use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use crate::api::tests::{call_at, one_broker_with};
use crate::api::{Err, RequestKind, ResponseKind};
use crate::broker::{Broker, BrokerConfig};
use crate::storage::batch::tests::encode_batch;

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const TOPIC: i8 = 2;
const BROKER: i8 = 4;
/// `ConfigSource` codes.
const DYNAMIC_BROKER: i8 = 2;
const DYNAMIC_DEFAULT: i8 = 3;
const DEFAULT: i8 = 5;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

pub(in crate::api) type Answer = (i16, Option<String>);

pub(in crate::api) async fn alter(
    broker: &Arc<Broker>,
    kind: i8,
    name: &str,
    ops: &[(&str, i8, Option<&str>)],
    validate_only: bool,
) -> Answer {
    use incremental_alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let resource = AlterConfigsResource::default()
        .with_resource_type(kind)
        .with_resource_name(s(name))
        .with_configs(
            ops.iter()
                .map(|(k, op, v)| {
                    AlterableConfig::default()
                        .with_name(s(k))
                        .with_config_operation(*op)
                        .with_value(v.map(s))
                })
                .collect(),
        );
    let req = IncrementalAlterConfigsRequest::default()
        .with_resources(vec![resource])
        .with_validate_only(validate_only);
    match call_at(broker, 1, RequestKind::IncrementalAlterConfigs(req)).await {
        ResponseKind::IncrementalAlterConfigs(r) => {
            let r = &r.responses[0];
            (
                r.error_code,
                r.error_message.as_ref().map(|m| m.to_string()),
            )
        }
        other => panic!("{other:?}"),
    }
}

pub(in crate::api) async fn describe(
    broker: &Arc<Broker>,
    kind: i8,
    name: &str,
) -> DescribeConfigsResult {
    use describe_configs_request::DescribeConfigsResource;
    let req = DescribeConfigsRequest::default()
        .with_include_synonyms(true)
        .with_resources(vec![DescribeConfigsResource::default()
            .with_resource_type(kind)
            .with_resource_name(s(name))]);
    match call_at(broker, 4, RequestKind::DescribeConfigs(req)).await {
        ResponseKind::DescribeConfigs(r) => r.results.into_iter().next().unwrap(),
        other => panic!("{other:?}"),
    }
}

/// A config's value and source as `result` describes it, with its
/// synonyms' sources.
pub(in crate::api) fn config(
    result: &DescribeConfigsResult,
    name: &str,
) -> (Option<String>, i8, Vec<i8>) {
    let c = result
        .configs
        .iter()
        .find(|c| c.name.as_str() == name)
        .unwrap_or_else(|| panic!("{name} not described"));
    (
        c.value.as_ref().map(|v| v.to_string()),
        c.config_source,
        c.synonyms.iter().map(|s| s.source).collect(),
    )
}

#[tokio::test]
async fn broker_configs_change_at_run_time_for_every_broker_and_for_one() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, topic) = one_broker_with(dir.path(), Arc::new(crate::auth::AllowAll)).await;
    let partition = broker.storage.partition(&topic, 0).await.unwrap();
    let ok: Answer = (0, None);

    // For every broker: the topic without its own follows them at once.
    let every = [
        ("log.segment.bytes", SET, Some("1048576")),
        ("log.cleaner.backoff.ms", SET, Some("5")),
    ];
    assert_eq!(alter(&broker, BROKER, "", &every, false).await, ok);
    let t = describe(&broker, TOPIC, "t").await;
    assert_eq!(
        config(&t, "segment.bytes"),
        (
            Some("1048576".into()),
            DYNAMIC_DEFAULT,
            vec![DYNAMIC_DEFAULT, DEFAULT]
        )
    );
    let segments =
        || crate::storage::count_segment_files(&broker.storage.topics.topic_dir("t").join("0"));
    // About 2 MiB: past the new segment size, far below kaas's 256 MiB.
    for _ in 0..64 {
        partition.append(encode_batch(2_000, 0), 0).await.unwrap();
    }
    assert!(segments() > 1, "the open partition rolls at the new size");
    assert_eq!(broker.cleaner_config().backoff_ms, 5);

    let cluster = describe(&broker, BROKER, "").await;
    let names: Vec<&str> = cluster.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["log.cleaner.backoff.ms", "log.segment.bytes"]);
    assert!(cluster.configs.iter().all(|c| !c.read_only));
    assert_eq!(
        config(&cluster, "log.cleaner.backoff.ms"),
        (
            Some("5".into()),
            DYNAMIC_DEFAULT,
            vec![DYNAMIC_DEFAULT, DEFAULT]
        )
    );

    // For this broker: over every broker's.
    assert_eq!(
        alter(
            &broker,
            BROKER,
            "0",
            &[("log.segment.bytes", SET, Some("2097152"))],
            false
        )
        .await,
        ok
    );
    let own = describe(&broker, BROKER, "0").await;
    assert_eq!(
        config(&own, "log.segment.bytes"),
        (
            Some("2097152".into()),
            DYNAMIC_BROKER,
            vec![DYNAMIC_BROKER, DYNAMIC_DEFAULT, DEFAULT]
        )
    );
    // Each with its type (v3+): BOOLEAN 1, STRING 2, INT 3, LONG 5, DOUBLE 6.
    let kind = |name: &str| {
        own.configs
            .iter()
            .find(|c| c.name.as_str() == name)
            .map(|c| c.config_type)
    };
    assert_eq!(
        [
            "log.segment.bytes",
            "log.cleaner.backoff.ms",
            "log.cleaner.io.max.bytes.per.second",
            "auto.create.topics.enable",
            "log.dirs"
        ]
        .map(kind),
        [Some(3), Some(5), Some(6), Some(1), Some(2)]
    );
    let untyped: Vec<&str> = own
        .configs
        .iter()
        .filter(|c| c.config_type == 0)
        .map(|c| c.name.as_str())
        .collect();
    assert!(untyped.is_empty(), "no type: {untyped:?}");
    let t = describe(&broker, TOPIC, "t").await;
    assert_eq!(config(&t, "segment.bytes").1, DYNAMIC_BROKER);

    // Another broker on the volume: every broker's, not broker 0's own.
    let other =
        crate::serve::open(BrokerConfig::new(1, dir.path().into(), "127.0.0.1", 9093)).unwrap();
    let on_other = describe(&other, TOPIC, "t").await;
    assert_eq!(
        config(&on_other, "segment.bytes").0.as_deref(),
        Some("1048576")
    );
    assert_eq!(other.cleaner_config().backoff_ms, 5);
    // A change made through broker 0 reaches it at its next look.
    assert_eq!(
        alter(
            &broker,
            BROKER,
            "",
            &[("log.segment.bytes", DELETE, None)],
            false
        )
        .await,
        ok
    );
    other.dynamic_configs.refresh().unwrap();
    let on_other = describe(&other, TOPIC, "t").await;
    assert_eq!(
        config(&on_other, "segment.bytes"),
        (Some("268435456".into()), DEFAULT, vec![DEFAULT])
    );

    // log.cleaner.threads within Apache's bounds: at most double.
    let threads = |n: &'static str| [("log.cleaner.threads", SET, Some(n))];
    assert_eq!(alter(&broker, BROKER, "0", &threads("2"), false).await, ok);
    assert_eq!(broker.cleaner_config().threads, 2);
    let (code, message) = alter(&broker, BROKER, "0", &threads("5"), false).await;
    assert_eq!(code, Err::InvalidRequest.code());
    assert_eq!(
        message.as_deref(),
        Some("Log cleaner threads cannot be increased to more than double the current value 2")
    );

    // Refusals, and nothing stored by them or by validate_only.
    let stored = broker.dynamic_configs.current();
    for (name, ops, code, says) in [
        (
            "",
            vec![("listeners", SET, Some("PLAINTEXT://:9092"))],
            Err::InvalidRequest,
            "Cannot update these configs dynamically: Set(listeners)",
        ),
        (
            "",
            vec![("log.retention.ms", SET, Some("soon"))],
            Err::InvalidRequest,
            "Invalid value soon for configuration log.retention.ms",
        ),
        (
            "0",
            vec![("log.retention.ms", APPEND, Some("1"))],
            Err::InvalidConfig,
            "Config value append is not allowed for config key: log.retention.ms",
        ),
        (
            "7",
            vec![("log.retention.ms", SET, Some("1"))],
            Err::InvalidRequest,
            "Unexpected broker id, expected 0, but received 7",
        ),
    ] {
        let (got, message) = alter(&broker, BROKER, name, &ops, false).await;
        assert_eq!(got, code.code(), "{ops:?}");
        assert!(message.as_deref().unwrap().contains(says), "{message:?}");
    }
    assert_eq!(
        alter(
            &broker,
            BROKER,
            "",
            &[("log.retention.ms", SET, Some("1000"))],
            true
        )
        .await,
        ok
    );
    assert_eq!(broker.dynamic_configs.current(), stored);

    // AlterConfigs replaces every broker's whole set.
    use alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let req = AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(BROKER)
        .with_resource_name(s(""))
        .with_configs(vec![AlterableConfig::default()
            .with_name(s("log.cleanup.policy"))
            .with_value(Some(s("compact")))])]);
    let ResponseKind::AlterConfigs(r) = call_at(&broker, 2, RequestKind::AlterConfigs(req)).await
    else {
        panic!("not an AlterConfigs response")
    };
    assert_eq!(r.responses[0].error_code, 0);
    let current = broker.dynamic_configs.current();
    assert_eq!(
        current.default,
        [("log.cleanup.policy".to_string(), "compact".to_string())].into()
    );
    assert_eq!(broker.cleaner_config().backoff_ms, 15_000);
    let t = describe(&broker, TOPIC, "t").await;
    assert_eq!(config(&t, "cleanup.policy").0.as_deref(), Some("compact"));
    let on_disk = std::fs::read_to_string(dir.path().join("__cluster/broker_configs")).unwrap();
    assert!(on_disk.starts_with("kaas-broker_configs "), "{on_disk}");
}
