//! Apache's dynamic broker configs (KIP-226) as kaas keeps them: settings
//! changed at run time through IncrementalAlterConfigs or AlterConfigs on
//! a BROKER resource, for every broker (the empty name: `kafka-configs
//! --entity-default`) or for one (its id), kept in `__cluster/broker_configs`
//! on the shared volume and followed by every broker. They apply over the
//! settings a broker started with, one broker's over every broker's, as in
//! Apache.
//!
//! The settings kaas changes at run time: every broker setting that
//! defaults a topic config (`log.retention.ms`, `log.cleanup.policy`,
//! `compression.type`, `log.segment.bytes`, …) and the log cleaner's
//! (`log.cleaner.threads`, `log.cleaner.backoff.ms`,
//! `log.cleaner.dedupe.buffer.size`, `log.cleaner.io.max.bytes.per.second`).
//! Any other is refused, with
//! Apache's message for a setting it does not change at run time. Pure:
//! no I/O.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::table;
use crate::storage::cleaner::CleanerConfig;
use crate::storage::topic_config::{self, AlterOp, ConfigSource};

/// The document's name under `__cluster`.
pub const DOCUMENT: &str = "broker_configs";

/// The settings kaas changes at run time besides those that default topic
/// configs: the [`table`]'s dynamic ones, the log cleaner's (Apache's
/// `LogCleaner.ReconfigurableConfigs` but the I/O buffer size, which kaas
/// does not have).
fn cleaner_settings() -> impl Iterator<Item = &'static str> {
    table::BROKER_SETTINGS
        .iter()
        .filter(|s| s.dynamic && !topic_config::is_broker_setting(s.key))
        .map(|s| s.key)
}

/// The settings changed at run time, by scope.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DynamicConfigs {
    /// For every broker (`DYNAMIC_DEFAULT_BROKER_CONFIG`).
    #[serde(default)]
    pub default: BTreeMap<String, String>,
    /// For one broker, by id (`DYNAMIC_BROKER_CONFIG`).
    #[serde(default)]
    pub brokers: BTreeMap<i32, BTreeMap<String, String>>,
}

/// A BROKER resource: the cluster-wide defaults or one broker.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    Default,
    Broker(i32),
}

impl DynamicConfigs {
    /// The settings of one scope.
    pub fn of(&self, scope: Scope) -> BTreeMap<String, String> {
        match scope {
            Scope::Default => self.default.clone(),
            Scope::Broker(id) => self.brokers.get(&id).cloned().unwrap_or_default(),
        }
    }

    /// Replaces one scope's settings (a broker with none is left out).
    pub fn set(&mut self, scope: Scope, settings: BTreeMap<String, String>) {
        match scope {
            Scope::Default => self.default = settings,
            Scope::Broker(id) if settings.is_empty() => {
                self.brokers.remove(&id);
            }
            Scope::Broker(id) => {
                self.brokers.insert(id, settings);
            }
        }
    }
}

/// Whether kaas changes `key` at run time.
pub fn is_dynamic(key: &str) -> bool {
    topic_config::is_broker_setting(key) || cleaner_settings().any(|k| k == key)
}

/// A refused change, as Apache answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// INVALID_CONFIG.
    InvalidConfig(String),
    /// INVALID_REQUEST (Apache's broker turns a `ConfigException` into it:
    /// KAFKA-13609).
    InvalidRequest(String),
}

/// Scala's `Set.toString`, as Apache's messages print a set of names.
fn scala_set(names: &BTreeSet<&str>) -> String {
    let joined = names.iter().copied().collect::<Vec<_>>().join(", ");
    match names.len() {
        0..=4 => format!("Set({joined})"),
        _ => format!("HashSet({joined})"),
    }
}

/// One scope's settings after a change: Apache's `prepareIncrementalConfigs`
/// (or AlterConfigs' replacement of the whole set, `replace`) on `current`,
/// then its `DynamicBrokerConfig.validate` of the result: settings kaas
/// does not change at run time, then each value checked as the setting
/// started with it would be.
pub fn alter(
    current: &BTreeMap<String, String>,
    ops: &[(String, AlterOp, Option<String>)],
    replace: bool,
) -> Result<BTreeMap<String, String>, Refusal> {
    let mut settings = if replace {
        BTreeMap::new()
    } else {
        current.clone()
    };
    for (name, op, value) in ops {
        let value = value.clone().unwrap_or_default();
        match op {
            AlterOp::Set => {
                settings.insert(name.clone(), value);
            }
            AlterOp::Delete => {
                settings.remove(name);
            }
            AlterOp::Append | AlterOp::Subtract => {
                if !topic_config::is_list_broker_setting(name) {
                    let verb = if *op == AlterOp::Append {
                        "append"
                    } else {
                        "subtract"
                    };
                    return Err(Refusal::InvalidConfig(format!(
                        "Config value {verb} is not allowed for config key: {name}"
                    )));
                }
                let old = settings
                    .get(name)
                    .map(String::as_str)
                    .or_else(|| topic_config::broker_setting_default(name))
                    .unwrap_or_default();
                let mut parts: Vec<&str> = old.split(',').filter(|p| !p.is_empty()).collect();
                let given: Vec<&str> = value.split(',').collect();
                if *op == AlterOp::Append {
                    let new: Vec<&str> = given
                        .iter()
                        .copied()
                        .filter(|v| !parts.contains(v))
                        .collect();
                    parts.extend(new);
                } else {
                    parts.retain(|p| !given.contains(p));
                }
                let joined = parts.join(",");
                settings.insert(name.clone(), joined);
            }
        }
    }
    let fixed: BTreeSet<&str> = settings
        .keys()
        .map(String::as_str)
        .filter(|k| !is_dynamic(k))
        .collect();
    if !fixed.is_empty() {
        return Err(Refusal::InvalidRequest(format!(
            "Cannot update these configs dynamically: {} (kaas changes the log.* settings \
             that default topic configs and {} at run time; set the others on each broker's \
             command line, KAAS_* variables or server.properties)",
            scala_set(&fixed),
            cleaner_settings().collect::<Vec<_>>().join(", ")
        )));
    }
    for (key, value) in &settings {
        check_value(key, value).map_err(Refusal::InvalidRequest)?;
    }
    Ok(settings)
}

/// `value` checked as a broker started with `key=value` would check it.
fn check_value(key: &str, value: &str) -> Result<(), String> {
    if topic_config::is_broker_setting(key) {
        return topic_config::check_broker_setting(key, value)
            .map_err(|why| format!("Invalid value {value} for configuration {key}: {why}"));
    }
    let setting = table::find(key).ok_or_else(|| format!("{key}: not a broker setting"))?;
    table::check(setting, value).map_err(|why| format!("{key}: {why}"))
}

/// The log cleaner's settings in force on broker `id`: those it started
/// with (`started`) under the cluster-wide and then its own dynamic ones.
/// A value that no longer parses (written by a newer kaas) is passed
/// over, with the reason.
pub fn cleaner_config(
    started: CleanerConfig,
    dynamic: &DynamicConfigs,
    id: i32,
) -> (CleanerConfig, Option<String>) {
    let mut merged: BTreeMap<&str, &str> = BTreeMap::new();
    for scope in [Scope::Default, Scope::Broker(id)] {
        let settings = match scope {
            Scope::Default => Some(&dynamic.default),
            Scope::Broker(id) => dynamic.brokers.get(&id),
        };
        for (k, v) in settings.into_iter().flatten() {
            if cleaner_settings().any(|c| c == k) {
                merged.insert(k, v);
            }
        }
    }
    let mut config = table::defaults();
    config.log_cleaner = started;
    for (key, value) in merged {
        let read = table::find(key).map(|s| (s.set)(&mut config, value));
        if let Some(Err(why)) = read {
            return (started, Some(format!("{key}: {why}")));
        }
    }
    (config.log_cleaner, None)
}

/// Apache's `LogCleaner.validateReconfiguration`: a change that would take
/// broker `id`'s cleaner threads from `now` to below 1, under half or
/// over double is refused (`dynamic` is the document as it would be).
pub fn check_cleaner_threads(
    now: &CleanerConfig,
    started: CleanerConfig,
    dynamic: &DynamicConfigs,
    id: i32,
) -> Result<(), Refusal> {
    let (new, _) = cleaner_config(started, dynamic, id);
    let (current, threads) = (now.threads, new.threads);
    let refused = if threads == current {
        None
    } else if threads < 1 {
        Some("Log cleaner threads should be at least 1".to_string())
    } else if threads < current / 2 {
        Some(format!(
            "Log cleaner threads cannot be reduced to less than half the current value {current}"
        ))
    } else if threads > current * 2 {
        Some(format!(
            "Log cleaner threads cannot be increased to more than double the current value {current}"
        ))
    } else {
        None
    };
    refused.map_or(Ok(()), |m| Err(Refusal::InvalidRequest(m)))
}

/// One broker setting as DescribeConfigs describes it (Apache's
/// `createBrokerConfigEntry`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrokerEntry {
    pub name: String,
    pub value: Option<String>,
    pub source: ConfigSource,
    /// kaas does not change it at run time.
    pub read_only: bool,
    pub sensitive: bool,
    pub synonyms: Vec<(String, Option<String>, ConfigSource)>,
}

/// A BROKER resource's settings as DescribeConfigs lists them: for the
/// cluster-wide defaults, the settings changed at run time for every
/// broker; for a broker, every setting in force (`started`, as
/// [`super::effective`] lists them, with `defaults` the same list for a
/// broker given nothing) and those changed at run time. Each setting's
/// synonyms run from the highest precedence down (this broker's dynamic,
/// every broker's dynamic, started with, default), from the first of its
/// own name on; the first gives its value and source.
pub fn describe(
    started: &[(&str, String)],
    defaults: &[(&str, String)],
    dynamic: &DynamicConfigs,
    scope: Scope,
) -> Vec<BrokerEntry> {
    let own = match scope {
        Scope::Default => BTreeMap::new(),
        Scope::Broker(id) => dynamic.of(Scope::Broker(id)),
    };
    let default_of: BTreeMap<&str, &str> = defaults.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let started_map: BTreeMap<&str, &str> = started
        .iter()
        .filter(|(k, v)| default_of.get(k) != Some(&v.as_str()))
        .map(|(k, v)| (*k, v.as_str()))
        .collect();
    let layer = |source: ConfigSource, k: &str| -> Option<String> {
        match source {
            ConfigSource::DynamicBrokerConfig => own.get(k).cloned(),
            ConfigSource::DynamicDefaultBrokerConfig => dynamic.default.get(k).cloned(),
            ConfigSource::StaticBrokerConfig => started_map.get(k).map(|v| v.to_string()),
            _ => default_of
                .get(k)
                .copied()
                .or_else(|| topic_config::broker_setting_default(k))
                .map(str::to_string),
        }
    };
    let names: Vec<&str> = match scope {
        Scope::Default => dynamic.default.keys().map(String::as_str).collect(),
        Scope::Broker(_) => {
            let listed: BTreeSet<&str> = started.iter().map(|(k, _)| *k).collect();
            let changed: BTreeSet<&str> = own
                .keys()
                .chain(dynamic.default.keys())
                .map(String::as_str)
                .filter(|k| !listed.contains(k))
                .collect();
            started.iter().map(|(k, _)| *k).chain(changed).collect()
        }
    };
    names
        .into_iter()
        .map(|name| {
            let sensitive = super::is_secret(name);
            let synonyms: Vec<(String, Option<String>, ConfigSource)> =
                topic_config::synonym_chain(&topic_config::broker_synonyms(name), name, layer)
                    .into_iter()
                    .map(|s| (s.name, (!sensitive).then_some(s.value), s.source))
                    .collect();
            let value = synonyms
                .first()
                .map(|(_, v, _)| v.clone())
                .unwrap_or_else(|| {
                    let started = started.iter().find(|(k, _)| *k == name);
                    started.and_then(|(_, v)| (!sensitive).then(|| v.clone()))
                });
            BrokerEntry {
                name: name.to_string(),
                value,
                source: synonyms
                    .first()
                    .map_or(ConfigSource::DefaultConfig, |s| s.2),
                read_only: !is_dynamic(name),
                sensitive,
                synonyms,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests;
