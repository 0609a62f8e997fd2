//! The checks and descriptions of group configs ([`crate::group::configs`],
//! Apache's `GroupConfig`), as IncrementalAlterConfigs, AlterConfigs and
//! DescribeConfigs on a GROUP resource apply them
//! (`kafka-configs --entity-type groups`). The `share.*` names are
//! accepted, checked and described as Apache's are; kaas serves no share
//! groups, so they change nothing.

use std::collections::BTreeMap;

use crate::group::configs::{
    CONSUMER_HEARTBEAT_INTERVAL_MS, CONSUMER_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS,
    SHARE_RECORD_LOCK_DURATION_MS, SHARE_SESSION_TIMEOUT_MS,
};
use crate::group::consumer::config::ConsumerGroupConfig;
use crate::storage::topic_config::{
    apply_alter_ops, int_at_least, parse_value, AlterOp, ConfigSource, ConfigSynonym,
    DescribedConfig, InvalidConfig, TopicConfigDef,
};

/// Apache's `group.share.*` broker defaults and bounds; kaas has no share
/// groups, so these are not settings.
const SHARE_SESSION_TIMEOUT: Bounds = Bounds::new(45_000, 45_000, 60_000);
const SHARE_HEARTBEAT_INTERVAL: Bounds = Bounds::new(5_000, 5_000, 15_000);
const SHARE_RECORD_LOCK_DURATION: Bounds = Bounds::new(30_000, 15_000, 60_000);

/// In Apache's definition order, which is the order they are parsed and
/// described in. The defaults written here are `GroupConfig`'s own; the
/// value in force without an override is the broker's ([`Bounds`]).
static DEFINITIONS: [TopicConfigDef; 5] = [
    int_at_least(
        CONSUMER_SESSION_TIMEOUT_MS,
        "45000",
        1,
        "The timeout to detect client failures when using the consumer group protocol.",
    ),
    int_at_least(
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        "5000",
        1,
        "The heartbeat interval given to the members of a consumer group.",
    ),
    int_at_least(
        SHARE_SESSION_TIMEOUT_MS,
        "45000",
        1,
        "The timeout to detect client failures when using the share group protocol.",
    ),
    int_at_least(
        SHARE_HEARTBEAT_INTERVAL_MS,
        "5000",
        1,
        "The heartbeat interval given to the members of a share group.",
    ),
    int_at_least(
        SHARE_RECORD_LOCK_DURATION_MS,
        "30000",
        1000,
        "The record acquisition lock duration in milliseconds for share groups.",
    ),
];

/// A broker's default for a group config and the range it allows.
#[derive(Debug, Clone, Copy)]
struct Bounds {
    default: i32,
    min: i32,
    max: i32,
}

impl Bounds {
    const fn new(default: i32, min: i32, max: i32) -> Bounds {
        Bounds { default, min, max }
    }
}

/// What the broker gives each group config: its value without an
/// override and its `group.*.min` / `max` settings.
fn bounds(name: &str, broker: &ConsumerGroupConfig) -> Bounds {
    match name {
        CONSUMER_SESSION_TIMEOUT_MS => Bounds::new(
            broker.session_timeout_ms,
            broker.min_session_timeout_ms,
            broker.max_session_timeout_ms,
        ),
        CONSUMER_HEARTBEAT_INTERVAL_MS => Bounds::new(
            broker.heartbeat_interval_ms,
            broker.min_heartbeat_interval_ms,
            broker.max_heartbeat_interval_ms,
        ),
        SHARE_SESSION_TIMEOUT_MS => SHARE_SESSION_TIMEOUT,
        SHARE_HEARTBEAT_INTERVAL_MS => SHARE_HEARTBEAT_INTERVAL,
        _ => SHARE_RECORD_LOCK_DURATION,
    }
}

/// The broker setting that bounds `name` from below or above, as Apache's
/// messages name it (`consumer.session.timeout.ms` is bounded by
/// `group.consumer.min.session.timeout.ms`).
fn bound_name(name: &str, upper: bool) -> String {
    let (protocol, rest) = name.split_once('.').unwrap_or(("", name));
    let end = if upper { "max" } else { "min" };
    format!("group.{protocol}.{end}.{rest}")
}

/// Apache's `GroupConfigManager.validate` of a group's overrides: every
/// name known, every value an INT at least its floor (in definition
/// order), then each within the broker's bounds and each session timeout
/// above its heartbeat interval, the broker's values standing in for
/// those not overridden.
pub fn validate(
    overrides: &BTreeMap<String, String>,
    broker: &ConsumerGroupConfig,
) -> Result<(), InvalidConfig> {
    if let Some(name) = overrides
        .keys()
        .find(|n| !DEFINITIONS.iter().any(|d| d.name == n.as_str()))
    {
        return Err(InvalidConfig(format!("Unknown group config name: {name}")));
    }
    let mut values: BTreeMap<&str, i32> = BTreeMap::new();
    for def in &DEFINITIONS {
        let value = match overrides.get(def.name) {
            Some(raw) => parse_value(def, raw)?
                .parse()
                .map_err(|_| InvalidConfig(format!("Not a number of type INT: {raw}")))?,
            None => bounds(def.name, broker).default,
        };
        values.insert(def.name, value);
    }
    let ranged = [
        CONSUMER_HEARTBEAT_INTERVAL_MS,
        CONSUMER_SESSION_TIMEOUT_MS,
        SHARE_HEARTBEAT_INTERVAL_MS,
        SHARE_SESSION_TIMEOUT_MS,
        SHARE_RECORD_LOCK_DURATION_MS,
    ];
    for name in ranged {
        let (value, b) = (values[name], bounds(name, broker));
        if value < b.min {
            return Err(InvalidConfig(format!(
                "{name} must be greater than or equal to {}",
                bound_name(name, false)
            )));
        }
        if value > b.max {
            return Err(InvalidConfig(format!(
                "{name} must be less than or equal to {}",
                bound_name(name, true)
            )));
        }
    }
    for (session, interval) in [
        (CONSUMER_SESSION_TIMEOUT_MS, CONSUMER_HEARTBEAT_INTERVAL_MS),
        (SHARE_SESSION_TIMEOUT_MS, SHARE_HEARTBEAT_INTERVAL_MS),
    ] {
        if values[session] <= values[interval] {
            return Err(InvalidConfig(format!(
                "{session} must be greater than {interval}"
            )));
        }
    }
    Ok(())
}

/// Apache's `incrementalAlterConfigResource` on a group's overrides, then
/// [`validate`] of the result: the new overrides as Apache writes them.
/// No group config is a LIST, so APPEND and SUBTRACT are refused.
pub fn apply_ops(
    current: &BTreeMap<String, String>,
    ops: &[(String, AlterOp, Option<String>)],
    broker: &ConsumerGroupConfig,
) -> Result<BTreeMap<String, String>, InvalidConfig> {
    let configs = apply_alter_ops(current, ops, |_| None)?;
    validate(&configs, broker)?;
    Ok(configs
        .into_iter()
        .map(|(name, raw)| {
            let def = DEFINITIONS.iter().find(|d| d.name == name);
            let value = def.and_then(|d| parse_value(d, &raw).ok()).unwrap_or(raw);
            (name, value)
        })
        .collect())
}

/// Apache's `createGroupConfigEntry` for every group config: the group's
/// override (GROUP_CONFIG), else the broker's value (DEFAULT_CONFIG); the
/// one synonym is the entry itself.
pub fn describe(
    overrides: &BTreeMap<String, String>,
    broker: &ConsumerGroupConfig,
) -> Vec<DescribedConfig> {
    DEFINITIONS
        .iter()
        .map(|def| {
            let (value, source) = match overrides.get(def.name) {
                Some(v) => (v.clone(), ConfigSource::GroupConfig),
                None => (
                    bounds(def.name, broker).default.to_string(),
                    ConfigSource::DefaultConfig,
                ),
            };
            DescribedConfig {
                name: def.name,
                synonyms: vec![ConfigSynonym {
                    name: def.name.to_string(),
                    value: value.clone(),
                    source,
                }],
                value,
                source,
                kind: def.kind,
                doc: def.doc,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
