//! The broker settings that give topic configs their defaults (Apache's
//! `ServerTopicConfigSynonyms`): their names, synonyms and defaults, the
//! broker's layers of them (dynamic for this broker, dynamic for every
//! broker, static, default), and the synonym chain DescribeConfigs lists
//! for a topic config and for a broker setting alike.

use std::collections::BTreeMap;

use super::{check, parse, ConfigSource, ConfigSynonym, ConfigType, TOPIC_CONFIGS};
use crate::storage::log::LogConfig;
use crate::storage::retention::BrokerRetention;

/// The broker settings kaas reads into fields of its own (the log's
/// segment size, retention); [`broker_settings`] are the others.
const OWN_BROKER_SETTINGS: &[&str] = &[
    "log.segment.bytes",
    "log.retention.ms",
    "log.retention.minutes",
    "log.retention.hours",
    "log.retention.bytes",
];

/// Apache's broker settings that give topic configs their defaults
/// (`log.cleanup.policy`, `compression.type`,
/// `log.message.timestamp.type`, `log.roll.hours`, …), but for those kaas
/// reads itself: each in `server.properties` or as a flag of its name.
pub fn broker_settings() -> impl Iterator<Item = &'static str> {
    TOPIC_CONFIGS
        .iter()
        .flat_map(|d| d.synonyms.iter())
        .map(|s| s.name)
        .filter(|n| !OWN_BROKER_SETTINGS.contains(n))
}

/// Whether `name` is a broker setting that defaults a topic config, those
/// kaas reads itself included.
pub fn is_broker_setting(name: &str) -> bool {
    topic_config_of(name).is_some()
}

/// Whether `name` is a broker setting of LIST type (`log.cleanup.policy`),
/// which APPEND and SUBTRACT change element by element.
pub fn is_list_broker_setting(name: &str) -> bool {
    TOPIC_CONFIGS
        .iter()
        .any(|d| d.kind == ConfigType::List && d.synonyms.iter().any(|s| s.name == name))
}

/// Apache's default of a broker setting that defaults a topic config,
/// where it has one.
pub fn broker_setting_default(name: &str) -> Option<&'static str> {
    TOPIC_CONFIGS
        .iter()
        .flat_map(|d| d.synonyms.iter())
        .find(|s| s.name == name)
        .and_then(|s| s.default)
}

/// The type of a broker setting that defaults a topic config, as Apache's
/// `KafkaConfig` defines it: the topic config's, but INT for a setting in
/// hours or minutes (`log.retention.hours`, `log.roll.hours`).
pub fn broker_setting_type(name: &str) -> Option<ConfigType> {
    TOPIC_CONFIGS.iter().find_map(|d| {
        let synonym = d.synonyms.iter().find(|s| s.name == name)?;
        Some(match synonym.factor {
            1 => d.kind,
            _ => ConfigType::Int,
        })
    })
}

/// The broker settings for the same thing as `name`, in priority order
/// (Apache's `brokerSynonyms`: `log.retention.ms`, `log.retention.minutes`,
/// `log.retention.hours`); `name` alone for any other setting.
pub fn broker_synonyms(name: &str) -> Vec<&str> {
    match TOPIC_CONFIGS
        .iter()
        .find(|d| d.synonyms.iter().any(|s| s.name == name))
    {
        Some(def) => def.synonyms.iter().map(|s| s.name).collect(),
        None => vec![name],
    }
}

/// The topic config a broker setting defaults.
pub fn topic_config_of(broker_setting: &str) -> Option<&'static str> {
    TOPIC_CONFIGS
        .iter()
        .find(|d| d.synonyms.iter().any(|s| s.name == broker_setting))
        .map(|d| d.name)
}

/// A [`broker_settings`] value checked as the topic config it defaults
/// (converted to its unit): Apache's message when it is not valid.
pub fn check_broker_setting(name: &str, value: &str) -> Result<(), String> {
    let (def, synonym) = TOPIC_CONFIGS
        .iter()
        .find_map(|d| d.synonyms.iter().find(|s| s.name == name).map(|s| (d, s)))
        .ok_or_else(|| format!("{name} is not a topic default"))?;
    let value = value.trim();
    let converted = match (synonym.factor, value.parse::<i64>()) {
        (1, _) | (_, Err(_)) => value.to_string(),
        (factor, Ok(n)) => n.saturating_mul(factor).to_string(),
    };
    let parsed = parse(def, &converted).map_err(|e| e.0)?;
    check(def, &parsed).map_err(|e| e.0)
}

/// Apache's synonym list of a setting (`DynamicBrokerConfig.synonyms` as
/// `createTopicConfigEntry` and `createBrokerConfigEntry` list it): each
/// of `synonyms` (priority order) that has a value, layer by layer from
/// the highest precedence down, `value_in` reading one layer; entries
/// before the first named `primary` are dropped, Apache's quirk kept
/// (`retention.ms` with only `log.retention.hours` set lists none).
pub fn synonym_chain(
    synonyms: &[&str],
    primary: &str,
    value_in: impl Fn(ConfigSource, &str) -> Option<String>,
) -> Vec<ConfigSynonym> {
    const LAYERS: [ConfigSource; 4] = [
        ConfigSource::DynamicBrokerConfig,
        ConfigSource::DynamicDefaultBrokerConfig,
        ConfigSource::StaticBrokerConfig,
        ConfigSource::DefaultConfig,
    ];
    let mut chain = Vec::new();
    for source in LAYERS {
        for name in synonyms {
            if let Some(value) = value_in(source, name) {
                chain.push(ConfigSynonym {
                    name: name.to_string(),
                    value,
                    source,
                });
            }
        }
    }
    let first = chain.iter().position(|s| s.name == primary);
    chain.drain(..first.unwrap_or(chain.len()));
    chain
}

/// The broker's topic defaults, in Apache's order of precedence: the
/// settings changed at run time for this broker (`DYNAMIC_BROKER_CONFIG`)
/// and for every broker (`DYNAMIC_DEFAULT_BROKER_CONFIG`), the settings it
/// was started with (`STATIC_BROKER_CONFIG`), and its own defaults where
/// they are not Apache's (kaas rolls segments at 256 MiB).
#[derive(Debug, Clone, Default)]
pub struct BrokerTopicDefaults {
    pub dynamic_broker: BTreeMap<String, String>,
    pub dynamic_default: BTreeMap<String, String>,
    pub set: BTreeMap<String, String>,
    pub defaults: BTreeMap<String, String>,
}

impl BrokerTopicDefaults {
    /// This broker's: its `log.segment.bytes` (kaas's default is 256 MiB
    /// where Apache's is 1 GiB), the `log.retention.*` settings given and
    /// the other [`broker_settings`] given (`given`, checked).
    pub fn of(
        log: &LogConfig,
        retention: &BrokerRetention,
        given: &BTreeMap<String, String>,
    ) -> Self {
        let kaas_default = LogConfig::default().segment_bytes;
        let mut d = BrokerTopicDefaults::default();
        d.defaults
            .insert("log.segment.bytes".into(), kaas_default.to_string());
        if log.segment_bytes != kaas_default {
            d.set
                .insert("log.segment.bytes".into(), log.segment_bytes.to_string());
        }
        for (name, value) in [
            ("log.retention.ms", retention.ms),
            ("log.retention.minutes", retention.minutes),
            ("log.retention.hours", retention.hours),
            ("log.retention.bytes", retention.bytes),
        ] {
            if let Some(v) = value {
                d.set.insert(name.into(), v.to_string());
            }
        }
        d.set.extend(given.clone());
        d
    }

    /// These defaults under the settings changed at run time: `default`
    /// for every broker, `broker` for this one (keys other than topic
    /// defaults are left out).
    pub fn with_dynamic(
        &self,
        default: &BTreeMap<String, String>,
        broker: &BTreeMap<String, String>,
    ) -> Self {
        let topic_defaults = |m: &BTreeMap<String, String>| {
            m.iter()
                .filter(|(k, _)| is_broker_setting(k))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect()
        };
        BrokerTopicDefaults {
            dynamic_broker: topic_defaults(broker),
            dynamic_default: topic_defaults(default),
            ..self.clone()
        }
    }

    /// The settings given, highest precedence first.
    pub(super) fn given(&self) -> [(&BTreeMap<String, String>, ConfigSource); 3] {
        [
            (&self.dynamic_broker, ConfigSource::DynamicBrokerConfig),
            (
                &self.dynamic_default,
                ConfigSource::DynamicDefaultBrokerConfig,
            ),
            (&self.set, ConfigSource::StaticBrokerConfig),
        ]
    }

    /// The default of broker setting `name`: kaas's where it differs,
    /// else Apache's.
    pub(super) fn default_of(&self, name: &str) -> Option<String> {
        self.defaults
            .get(name)
            .cloned()
            .or_else(|| broker_setting_default(name).map(str::to_string))
    }

    /// Broker setting `name`'s value in one layer of precedence.
    pub fn value_in(&self, source: ConfigSource, name: &str) -> Option<String> {
        match source {
            ConfigSource::DynamicBrokerConfig => self.dynamic_broker.get(name).cloned(),
            ConfigSource::DynamicDefaultBrokerConfig => self.dynamic_default.get(name).cloned(),
            ConfigSource::StaticBrokerConfig => self.set.get(name).cloned(),
            ConfigSource::DefaultConfig => self.default_of(name),
            _ => None,
        }
    }
}
