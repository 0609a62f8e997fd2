//! Group configs on the wire: DescribeConfigs, IncrementalAlterConfigs
//! and AlterConfigs on GROUP resources, kept on the shared volume, in
//! force at the group's next consumer-protocol heartbeat, seen by another
//! broker at its next look, refused with Apache's codes and messages,
//! nothing stored by a refusal or a validate-only change.

use std::sync::Arc;

use kafka_protocol::messages::*;
use kafka_protocol::protocol::StrBytes;

use super::broker_configs::{alter, config, describe, Answer};
use crate::api::tests::{call_at, one_broker};
use crate::api::{Err, RequestKind, ResponseKind};
use crate::broker::{Broker, BrokerConfig};

const SET: i8 = 0;
const DELETE: i8 = 1;
const APPEND: i8 = 2;
const GROUP: i8 = 32;
/// `ConfigSource` codes.
const DEFAULT: i8 = 5;
const GROUP_CONFIG: i8 = 8;

fn s(v: &str) -> StrBytes {
    StrBytes::from_string(v.to_string())
}

/// A consumer-protocol member `m` joining `group` (to topic `t`): its
/// answer's heartbeat interval.
async fn heartbeat_interval(broker: &Arc<Broker>, group: &str, epoch: i32) -> i32 {
    let req = ConsumerGroupHeartbeatRequest::default()
        .with_group_id(s(group).into())
        .with_member_id(s("m"))
        .with_member_epoch(epoch)
        .with_rebalance_timeout_ms(5000)
        .with_subscribed_topic_names(Some(vec![s("t").into()]))
        .with_topic_partitions(Some(Vec::new()));
    let ResponseKind::ConsumerGroupHeartbeat(r) =
        call_at(broker, 0, RequestKind::ConsumerGroupHeartbeat(req)).await
    else {
        panic!("not a heartbeat answer")
    };
    assert_eq!(r.error_code, 0, "{:?}", r.error_message);
    r.heartbeat_interval_ms
}

#[tokio::test]
async fn group_configs_are_described_altered_and_followed_by_every_broker() {
    let dir = tempfile::tempdir().unwrap();
    let (broker, _) = one_broker(dir.path()).await;
    let ok: Answer = (0, None);

    // No override: the broker's values, DEFAULT_CONFIG, typed INT; the
    // group need not exist.
    let d = describe(&broker, GROUP, "g").await;
    assert_eq!(d.error_code, 0);
    let names: Vec<&str> = d.configs.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "consumer.session.timeout.ms",
            "consumer.heartbeat.interval.ms",
            "share.session.timeout.ms",
            "share.heartbeat.interval.ms",
            "share.record.lock.duration.ms"
        ]
    );
    assert!(d.configs.iter().all(|c| c.config_type == 3 && !c.read_only));
    assert_eq!(
        config(&d, "consumer.session.timeout.ms"),
        (Some("45000".into()), DEFAULT, vec![DEFAULT])
    );
    assert_eq!(heartbeat_interval(&broker, "g", 0).await, 5000);

    // Set: described as GROUP_CONFIG, handed out at the next heartbeat.
    let set = [
        ("consumer.session.timeout.ms", SET, Some("50000")),
        ("consumer.heartbeat.interval.ms", SET, Some("10000")),
    ];
    assert_eq!(alter(&broker, GROUP, "g", &set, false).await, ok);
    let d = describe(&broker, GROUP, "g").await;
    assert_eq!(
        config(&d, "consumer.heartbeat.interval.ms"),
        (Some("10000".into()), GROUP_CONFIG, vec![GROUP_CONFIG])
    );
    assert_eq!(heartbeat_interval(&broker, "g", 1).await, 10000);
    // Another group keeps the broker's.
    assert_eq!(
        config(
            &describe(&broker, GROUP, "h").await,
            "consumer.heartbeat.interval.ms"
        )
        .1,
        DEFAULT
    );

    // Another broker on the volume sees them, and a change made through
    // this one at its next look.
    let other =
        crate::serve::open(BrokerConfig::new(1, dir.path().into(), "127.0.0.1", 9093)).unwrap();
    assert_eq!(
        config(
            &describe(&other, GROUP, "g").await,
            "consumer.session.timeout.ms"
        )
        .0,
        Some("50000".into())
    );
    let delete = [("consumer.heartbeat.interval.ms", DELETE, None)];
    assert_eq!(alter(&broker, GROUP, "g", &delete, false).await, ok);
    other.group_configs.refresh().unwrap();
    assert_eq!(
        config(
            &describe(&other, GROUP, "g").await,
            "consumer.heartbeat.interval.ms"
        ),
        (Some("5000".into()), DEFAULT, vec![DEFAULT])
    );
    assert_eq!(heartbeat_interval(&broker, "g", 1).await, 5000);

    // Refusals, and nothing stored by them or by validate_only.
    let stored = broker.group_configs.current();
    for (name, ops, code, says) in [
        (
            "g",
            vec![("dummy.doesntexist", SET, Some("1"))],
            Err::InvalidConfig,
            "Unknown group config name: dummy.doesntexist",
        ),
        (
            "g",
            vec![("consumer.session.timeout.ms", SET, Some("soon"))],
            Err::InvalidConfig,
            "Invalid value soon for configuration consumer.session.timeout.ms: Not a number of type INT",
        ),
        (
            "g",
            vec![("consumer.session.timeout.ms", SET, Some("70000"))],
            Err::InvalidConfig,
            "consumer.session.timeout.ms must be less than or equal to group.consumer.max.session.timeout.ms",
        ),
        (
            "g",
            vec![("consumer.session.timeout.ms", APPEND, Some("1"))],
            Err::InvalidConfig,
            "Can't APPEND to key consumer.session.timeout.ms because its type is not LIST.",
        ),
        (
            "",
            vec![("consumer.session.timeout.ms", SET, Some("50000"))],
            Err::InvalidRequest,
            "Default group resources are not allowed.",
        ),
        // The name before the values, as Apache's validator.
        (
            "",
            vec![("consumer.session.timeout.ms", SET, Some("soon"))],
            Err::InvalidRequest,
            "Default group resources are not allowed.",
        ),
        (
            "g",
            vec![("consumer.session.timeout.ms", SET, None)],
            Err::InvalidRequest,
            "Null value not supported for : consumer.session.timeout.ms",
        ),
    ] {
        let (got, message) = alter(&broker, GROUP, name, &ops, false).await;
        assert_eq!(got, code.code(), "{ops:?}");
        assert_eq!(message.as_deref(), Some(says), "{ops:?}");
    }
    let valid = [("consumer.session.timeout.ms", SET, Some("55000"))];
    assert_eq!(alter(&broker, GROUP, "g", &valid, true).await, ok);
    assert_eq!(broker.group_configs.current(), stored);
    let d = describe(&broker, GROUP, "").await;
    assert_eq!(
        (
            d.error_code,
            d.error_message.as_ref().map(|m| m.to_string())
        ),
        (
            Err::InvalidRequest.code(),
            Some("Group name must not be empty".to_string())
        )
    );

    // AlterConfigs replaces the group's whole set.
    use alter_configs_request::{AlterConfigsResource, AlterableConfig};
    let req = AlterConfigsRequest::default().with_resources(vec![AlterConfigsResource::default()
        .with_resource_type(GROUP)
        .with_resource_name(s("g"))
        .with_configs(vec![AlterableConfig::default()
            .with_name(s("consumer.heartbeat.interval.ms"))
            .with_value(Some(s("6000")))])]);
    let ResponseKind::AlterConfigs(r) = call_at(&broker, 2, RequestKind::AlterConfigs(req)).await
    else {
        panic!("not an AlterConfigs response")
    };
    assert_eq!(r.responses[0].error_code, 0);
    assert_eq!(
        broker.group_configs.current().of("g"),
        [(
            "consumer.heartbeat.interval.ms".to_string(),
            "6000".to_string()
        )]
        .into()
    );
    let on_disk = std::fs::read_to_string(dir.path().join("__cluster/group_configs")).unwrap();
    assert!(on_disk.starts_with("kaas-group_configs "), "{on_disk}");
}
