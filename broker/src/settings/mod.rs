//! A broker's settings by Apache Kafka's names: what a `server.properties`
//! file (`--config FILE`) sets, what flags and environment set over it, and
//! the effective configuration a broker logs at start.
//!
//! Precedence, highest first: flags, environment, the file, the defaults of
//! [`BrokerConfig::new`] (one copy of each default). A key kaas does not
//! have is warned about by name and ignored, as Apache warns of a supplied
//! config that isn't known; a value kaas cannot honour is refused with its
//! key and the reason. Every scalar setting is one entry of [`table`].

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::str::FromStr;

pub mod dynamic;
mod effective;
pub mod group_configs;
mod listeners;
pub mod security;
pub mod table;

pub use effective::{effective, effective_line, masked, setting_type};
pub use listeners::MoreListener;

use crate::storage::topic_config;
use crate::BrokerConfig;
use security::SecuritySettings;

/// A setting refused, by its `server.properties` key.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{key}: {reason}")]
pub struct SettingError {
    pub key: String,
    pub reason: String,
}

fn refuse(key: &str, reason: impl Into<String>) -> SettingError {
    SettingError {
        key: key.to_string(),
        reason: reason.into(),
    }
}

/// A host and port clients reach a broker at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostPort {
    pub host: String,
    pub port: u16,
}

impl FromStr for HostPort {
    type Err = String;

    fn from_str(s: &str) -> Result<HostPort, String> {
        let (host, port) = s
            .rsplit_once(':')
            .ok_or_else(|| format!("'{s}' is not HOST:PORT"))?;
        let port = port
            .parse()
            .map_err(|_| format!("'{port}' in '{s}' is not a port"))?;
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Ok(HostPort {
            host: host.to_string(),
            port,
        })
    }
}

/// Settings given, each `None` (or absent) where this source leaves it to
/// the next.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub id: Option<i32>,
    pub data: Option<PathBuf>,
    /// The inter-broker listener's address, name and advertised address.
    pub listen: Option<SocketAddr>,
    pub listener_name: Option<String>,
    pub advertise: Option<HostPort>,
    /// The other listeners.
    pub more_listeners: Option<Vec<MoreListener>>,
    pub http: Option<SocketAddr>,
    pub assignment_configmap: Option<String>,
    pub assignment_namespace: Option<String>,
    /// The [`table`]'s settings and the topic configs' defaults given.
    pub values: Given,
    pub security: SecuritySettings,
}

/// The [`table`]'s settings and the topic configs' defaults given, by key,
/// each value checked: only [`Settings::give`] adds one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Given(BTreeMap<String, String>);

/// What a `server.properties` file said: the settings, and a warning for
/// each key that was ignored.
#[derive(Debug, Default)]
pub struct FromFile {
    pub settings: Settings,
    pub warnings: Vec<String>,
}

/// Keys whose values are secrets: shown masked.
pub fn is_secret(key: &str) -> bool {
    key.ends_with(".password") || key.ends_with("jaas.config") || key.ends_with(".key")
}

fn at_least<T: FromStr + PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    value: &str,
    min: T,
) -> Result<T, SettingError> {
    table::at_least(value, min).map_err(|why| refuse(key, why))
}

/// Kafka's BOOLEAN: `true` or `false`, any case.
fn boolean(key: &str, value: &str) -> Result<bool, SettingError> {
    table::boolean(value).map_err(|why| refuse(key, why))
}

/// Whether `key` is a setting [`Settings::give`] takes: a [`table`] entry
/// or a topic config's default.
pub fn is_scalar(key: &str) -> bool {
    table::find(key).is_some() || topic_config::broker_settings().any(|k| k == key)
}

impl Settings {
    /// Reads a `server.properties` file's text (Java properties syntax).
    pub fn from_properties(text: &str) -> Result<FromFile, SettingError> {
        let mut pairs: Vec<(String, String)> = Vec::new();
        // ISO-8859-1 with \u escapes, as java.util.Properties (and so
        // Apache) reads server.properties.
        for line in java_properties::PropertiesIter::new(text.as_bytes()) {
            let line = line.map_err(|e| refuse("(file)", e.to_string()))?;
            if let java_properties::LineContent::KVPair(k, v) = line.consume_content() {
                // A later line wins, as in java.util.Properties.
                pairs.retain(|(key, _)| *key != k);
                pairs.push((k, v));
            }
        }
        let get = |k: &str| pairs.iter().find(|(key, _)| key == k).map(|(_, v)| v);
        let mut warnings = Vec::new();
        let mut s = Settings::default();

        let map: Vec<(String, String)> = match get("listener.security.protocol.map") {
            None => Vec::new(),
            Some(v) => v
                .split(',')
                .map(str::trim)
                .filter(|e| !e.is_empty())
                .map(|e| {
                    e.split_once(':')
                        .map(|(n, p)| (n.trim().to_string(), p.trim().to_string()))
                        .ok_or_else(|| {
                            refuse(
                                "listener.security.protocol.map",
                                format!("'{e}' is not NAME:PROTOCOL"),
                            )
                        })
                })
                .collect::<Result<_, _>>()?,
        };
        let controllers: Vec<String> = get("controller.listener.names")
            .map(|v| v.split(',').map(|n| n.trim().to_string()).collect())
            .unwrap_or_default();

        for (key, value) in &pairs {
            let (key, value) = (key.as_str(), value.as_str());
            match key {
                "node.id" | "broker.id" => {
                    let id: i32 = at_least(key, value, 0)?;
                    if s.id.is_some_and(|other| other != id) {
                        return Err(refuse(key, "node.id and broker.id disagree"));
                    }
                    s.id = Some(id);
                }
                "log.dirs" | "log.dir" => {
                    let dirs: Vec<&str> = value
                        .split(',')
                        .map(str::trim)
                        .filter(|d| !d.is_empty())
                        .collect();
                    if dirs.len() != 1 {
                        return Err(refuse(
                            key,
                            "kaas keeps all state in one shared folder; give exactly one",
                        ));
                    }
                    // log.dirs wins over log.dir, as in Apache.
                    if key == "log.dirs" || get("log.dirs").is_none() {
                        s.data = Some(PathBuf::from(dirs[0]));
                    }
                }
                // Read together below.
                "listeners"
                | "advertised.listeners"
                | "listener.security.protocol.map"
                | "controller.listener.names"
                | "inter.broker.listener.name"
                | "security.inter.broker.protocol" => {}
                "kaas.http.listen" => {
                    s.http =
                        Some(value.trim().parse().map_err(|_| {
                            refuse(key, format!("'{value}' is not an IP:PORT address"))
                        })?)
                }
                "kaas.assignment.configmap" => {
                    s.assignment_configmap = Some(value.trim().to_string())
                }
                "kaas.assignment.namespace" => {
                    s.assignment_namespace = Some(value.trim().to_string())
                }
                other if is_scalar(other) => s.give(other, value)?,
                other => {
                    if !s.security.parse(other, value)? {
                        warnings.push(format!(
                            "{other}: not a kaas setting; ignored (docs/operations.md lists them)"
                        ))
                    }
                }
            }
        }
        listeners::read_listeners(get, &map, &controllers, &mut warnings, &mut s)?;
        s.check_session_bounds()?;
        Ok(FromFile {
            settings: s,
            warnings,
        })
    }

    /// Gives `key` (a [`table`] entry or a topic config's default) the
    /// value `value`, checked as the setting reads it.
    pub fn give(&mut self, key: &str, value: &str) -> Result<(), SettingError> {
        let value = value.trim();
        match table::find(key) {
            Some(setting) => table::check(setting, value).map_err(|why| refuse(key, why))?,
            None => {
                topic_config::check_broker_setting(key, value).map_err(|why| refuse(key, why))?
            }
        }
        self.values.0.insert(key.to_string(), value.to_string());
        Ok(())
    }

    /// The value given to a [`table`] setting or a topic config's default.
    pub fn value(&self, key: &str) -> Option<&str> {
        self.values.0.get(key).map(String::as_str)
    }

    /// These settings, with `lower`'s where these leave one unset.
    pub fn or(self, lower: Settings) -> Settings {
        let mut values = lower.values;
        values.0.extend(self.values.0);
        Settings {
            id: self.id.or(lower.id),
            data: self.data.or(lower.data),
            listen: self.listen.or(lower.listen),
            listener_name: self.listener_name.or(lower.listener_name),
            advertise: self.advertise.or(lower.advertise),
            more_listeners: self.more_listeners.or(lower.more_listeners),
            http: self.http.or(lower.http),
            assignment_configmap: self.assignment_configmap.or(lower.assignment_configmap),
            assignment_namespace: self.assignment_namespace.or(lower.assignment_namespace),
            values,
            security: self.security.or(lower.security),
        }
    }

    /// Apache's check of the classic group session bounds given together.
    fn check_session_bounds(&self) -> Result<(), SettingError> {
        let bound = |key| self.value(key).and_then(|v| v.parse::<i64>().ok());
        if let (Some(min), Some(max)) = (
            bound("group.min.session.timeout.ms"),
            bound("group.max.session.timeout.ms"),
        ) {
            if min > max {
                return Err(refuse(
                    "group.min.session.timeout.ms",
                    format!("{min} is above group.max.session.timeout.ms ({max})"),
                ));
            }
        }
        Ok(())
    }

    /// The checks Apache makes of settings together, defaults filled in
    /// (the group session and heartbeat bounds).
    pub fn check(&self) -> Result<(), SettingError> {
        self.check_session_bounds()?;
        let mut c = table::defaults();
        self.tune(&mut c);
        c.groups
            .core
            .consumer
            .validate()
            .map_err(|(key, reason)| refuse(key, reason))
    }

    /// Sets what these settings give on `c` (the broker's tuning; id,
    /// folder and addresses are the caller's).
    pub fn tune(&self, c: &mut BrokerConfig) {
        for (key, value) in &self.values.0 {
            match table::find(key) {
                Some(setting) => {
                    // Checked when given, by the same function.
                    if let Err(why) = (setting.set)(c, value) {
                        tracing::error!(key, value, why, "a checked setting failed to read");
                    }
                }
                None => {
                    c.topic_defaults.insert(key.clone(), value.clone());
                }
            }
        }
    }
}
