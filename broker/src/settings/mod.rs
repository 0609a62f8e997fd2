//! A broker's settings by Apache Kafka's names: what a `server.properties`
//! file (`--config FILE`) sets, what flags and environment set over it, and
//! the effective configuration a broker logs at start.
//!
//! Precedence, highest first: flags, environment, the file, the defaults of
//! [`BrokerConfig::new`] (one copy of each default). A key kaas does not
//! have is warned about by name and ignored, as Apache warns of a supplied
//! config that isn't known; a value kaas cannot honour is refused with its
//! key and the reason.
//!
//! Over 800 lines: every broker setting's parse, merge and checks, until one
//! declarative settings table replaces them (issue #34, in progress).

use std::collections::BTreeMap;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::str::FromStr;

pub mod dynamic;
mod effective;
pub mod group_configs;
pub mod security;

pub use effective::{effective, effective_line, masked, setting_type};

use crate::group::assignor::BuiltinAssignor;
use crate::group::consumer::heartbeat::{ConsumerGroupConfig, MigrationPolicy};
use crate::group::consumer::regex_subscription::REFRESH_MIN_INTERVAL_MS as REGEX_REFRESH_MIN_INTERVAL_MS;
use crate::storage::cleaner::CleanerConfig;
use crate::storage::group_log::GroupLogSync;
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

/// Settings given, each `None` where this source leaves it to the next.
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
    pub max_frame_bytes: Option<usize>,
    pub max_connections: Option<usize>,
    pub max_connections_per_ip: Option<usize>,
    /// `quota.window.num` and `quota.window.size.seconds`.
    pub quota_window_num: Option<usize>,
    pub quota_window_size_seconds: Option<u64>,
    pub auto_create_topics: Option<bool>,
    pub default_partitions: Option<i32>,
    pub segment_bytes: Option<u64>,
    pub log_retention_ms: Option<i64>,
    pub log_retention_minutes: Option<i64>,
    pub log_retention_hours: Option<i64>,
    pub log_retention_bytes: Option<i64>,
    pub log_retention_check_interval_ms: Option<u64>,
    /// The other broker settings topic configs default to
    /// (`log.cleanup.policy`, `compression.type`, …), by key.
    pub topic_defaults: BTreeMap<String, String>,
    pub log_cleaner_enable: Option<bool>,
    pub log_cleaner_backoff_ms: Option<u64>,
    pub log_cleaner_dedupe_buffer_size: Option<u64>,
    pub log_cleaner_io_max_bytes_per_second: Option<f64>,
    pub log_cleaner_threads: Option<usize>,
    pub lag_metrics_max_partitions: Option<usize>,
    pub group_initial_rebalance_delay_ms: Option<u64>,
    pub group_min_session_timeout_ms: Option<i32>,
    pub group_max_session_timeout_ms: Option<i32>,
    pub group_max_size: Option<usize>,
    pub group_consumer_session_timeout_ms: Option<i32>,
    pub group_consumer_min_session_timeout_ms: Option<i32>,
    pub group_consumer_max_session_timeout_ms: Option<i32>,
    pub group_consumer_heartbeat_interval_ms: Option<i32>,
    pub group_consumer_min_heartbeat_interval_ms: Option<i32>,
    pub group_consumer_max_heartbeat_interval_ms: Option<i32>,
    pub group_consumer_max_size: Option<usize>,
    pub group_consumer_assignors: Option<Vec<BuiltinAssignor>>,
    pub group_consumer_regex_refresh_interval_ms: Option<u64>,
    pub group_consumer_migration_policy: Option<MigrationPolicy>,
    pub offsets_retention_minutes: Option<u64>,
    pub offsets_retention_check_interval_ms: Option<u64>,
    pub group_idle_unload_ms: Option<u64>,
    pub max_loaded_groups: Option<usize>,
    pub group_log_sync: Option<GroupLogSync>,
    pub shutdown_drain_ms: Option<u64>,
    pub volume_check_interval_ms: Option<u64>,
    pub volume_check_timeout_ms: Option<u64>,
    pub volume_self_check: Option<crate::storage::volume_check::SelfCheck>,
    pub assignment_confirm_timeout_ms: Option<u64>,
    pub transaction_max_timeout_ms: Option<i32>,
    pub transactional_id_expiration_ms: Option<i64>,
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: Option<u64>,
    pub transaction_remove_expired_transaction_cleanup_interval_ms: Option<u64>,
    pub producer_id_expiration_ms: Option<i64>,
    pub producer_id_expiration_check_interval_ms: Option<u64>,
    pub security: SecuritySettings,
}

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

fn number<T: FromStr>(key: &str, value: &str) -> Result<T, SettingError> {
    value
        .trim()
        .parse()
        .map_err(|_| refuse(key, format!("'{value}' is not a valid number")))
}

fn at_least<T: FromStr + PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    value: &str,
    min: T,
) -> Result<T, SettingError> {
    let n: T = number(key, value)?;
    if n < min {
        return Err(refuse(key, format!("{n} is below the minimum of {min}")));
    }
    Ok(n)
}

/// Kafka's BOOLEAN: `true` or `false`, any case.
fn boolean(key: &str, value: &str) -> Result<bool, SettingError> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(refuse(key, format!("'{value}' is not true or false"))),
    }
}

/// Apache's `Integer.MAX_VALUE` default means no limit.
fn limit(key: &str, value: &str) -> Result<Option<usize>, SettingError> {
    let n: usize = at_least(key, value, 0)?;
    Ok((n < i32::MAX as usize).then_some(n))
}

/// One listener of `listeners` / `advertised.listeners`: `NAME://HOST:PORT`.
struct Listener {
    name: String,
    host: String,
    port: u16,
}

fn listeners(key: &str, value: &str) -> Result<Vec<Listener>, SettingError> {
    let mut out = Vec::new();
    for item in value.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let (name, addr) = item.split_once("://").ok_or_else(|| {
            refuse(
                key,
                format!("'{item}' is not a listener of the form NAME://HOST:PORT"),
            )
        })?;
        let addr: HostPort = addr.parse().map_err(|e| refuse(key, e))?;
        out.push(Listener {
            name: name.to_string(),
            host: addr.host,
            port: addr.port,
        });
    }
    Ok(out)
}

/// Apache's default `listener.security.protocol.map`: each protocol is a
/// listener name of its own.
fn protocol_of(map: &[(String, String)], name: &str) -> String {
    map.iter()
        .find(|(n, _)| n == name)
        .map_or(name, |(_, p)| p.as_str())
        .to_string()
}

/// A security protocol: (SASL, TLS).
type Protocol = (bool, bool);

/// The client listeners of a `listeners`-style value, each with its
/// security protocol (SASL, TLS): controller listeners are skipped (kaas
/// has no KRaft quorum).
fn client_listeners(
    key: &str,
    value: &str,
    map: &[(String, String)],
    controller_names: &[String],
    warnings: &mut Vec<String>,
) -> Result<Vec<(Listener, Protocol)>, SettingError> {
    let mut served: Vec<(Listener, Protocol)> = Vec::new();
    for l in listeners(key, value)? {
        if controller_names.contains(&l.name) {
            warnings.push(format!(
                "{key}: controller listener '{}' ignored (kaas has no KRaft controller quorum)",
                l.name
            ));
            continue;
        }
        if served.iter().any(|(s, _)| s.name == l.name) {
            return Err(refuse(key, format!("listener '{}' is named twice", l.name)));
        }
        let protocol = security::protocol(key, &protocol_of(map, &l.name))?;
        served.push((l, protocol));
    }
    if served.is_empty() {
        return Err(refuse(key, "no client listener"));
    }
    Ok(served)
}

/// A listener beyond the inter-broker one (`listeners` names several).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MoreListener {
    pub name: String,
    pub listen: SocketAddr,
    /// From `advertised.listeners`; else the listen address.
    pub advertise: Option<HostPort>,
    /// Its protocol: SASL, TLS.
    pub sasl: bool,
    pub ssl: bool,
}

/// `listeners` and `advertised.listeners` onto `s`: the inter-broker
/// listener (`inter.broker.listener.name`, else the one listener, else the
/// one named after `security.inter.broker.protocol`) as `listen` and
/// `advertise`, the others as `more_listeners`.
fn read_listeners<'a>(
    get: impl Fn(&str) -> Option<&'a String>,
    map: &[(String, String)],
    controllers: &[String],
    warnings: &mut Vec<String>,
    s: &mut Settings,
) -> Result<(), SettingError> {
    let bound = get("listeners")
        .map(|v| client_listeners("listeners", v, map, controllers, warnings))
        .transpose()?;
    let advertised = get("advertised.listeners")
        .map(|v| client_listeners("advertised.listeners", v, map, controllers, &mut Vec::new()))
        .transpose()?;
    let Some(named) = bound.as_ref().or(advertised.as_ref()) else {
        return Ok(());
    };
    let names: Vec<&str> = named.iter().map(|(l, _)| l.name.as_str()).collect();
    let inter_broker = match get("inter.broker.listener.name") {
        Some(n) => {
            let n = n.trim();
            if !names.contains(&n) {
                return Err(refuse(
                    "inter.broker.listener.name",
                    format!("'{n}' is not a listener of {}", names.join(", ")),
                ));
            }
            n.to_string()
        }
        None if names.len() == 1 => names[0].to_string(),
        None => {
            let protocol = get("security.inter.broker.protocol").map_or("PLAINTEXT", |p| p.trim());
            names
                .iter()
                .find(|n| **n == protocol)
                .ok_or_else(|| {
                    refuse(
                        "inter.broker.listener.name",
                        format!(
                            "several listeners ({}) and none named {protocol}: name the one \
                             brokers call each other on",
                            names.join(", ")
                        ),
                    )
                })?
                .to_string()
        }
    };
    s.listener_name = Some(inter_broker.clone());
    if let Some(bound) = &bound {
        let mut more = Vec::new();
        for (l, (sasl, ssl)) in bound {
            let listen = listen_addr("listeners", l)?;
            if l.name == inter_broker {
                s.listen = Some(listen);
                s.security.sasl = Some(*sasl);
                s.security.ssl = Some(*ssl);
            } else {
                more.push(MoreListener {
                    name: l.name.clone(),
                    listen,
                    advertise: None,
                    sasl: *sasl,
                    ssl: *ssl,
                });
            }
        }
        s.more_listeners = Some(more);
    }
    for (l, _) in advertised.into_iter().flatten() {
        let key = "advertised.listeners";
        if l.host.is_empty() {
            return Err(refuse(key, "an advertised listener needs a host"));
        }
        // A name's protocol is the same in both (one map): only the names
        // can disagree.
        if bound
            .as_ref()
            .is_some_and(|b| !b.iter().any(|(b, _)| b.name == l.name))
        {
            return Err(refuse(
                key,
                format!("'{}' is not a listener of `listeners`", l.name),
            ));
        }
        let host_port = HostPort {
            host: l.host,
            port: l.port,
        };
        if l.name == inter_broker {
            s.advertise = Some(host_port);
        } else if let Some(more) = s
            .more_listeners
            .iter_mut()
            .flatten()
            .find(|m| m.name == l.name)
        {
            more.advertise = Some(host_port);
        } else {
            return Err(refuse(
                key,
                format!("'{}' is not a listener of `listeners`", l.name),
            ));
        }
    }
    Ok(())
}

fn listen_addr(key: &str, l: &Listener) -> Result<SocketAddr, SettingError> {
    // An empty host binds every interface, as in Apache.
    let ip = match l.host.as_str() {
        "" => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        "localhost" => IpAddr::V4(Ipv4Addr::LOCALHOST),
        h => h.parse().map_err(|_| {
            refuse(
                key,
                format!("'{h}' is not an IP address (kaas binds addresses, not names)"),
            )
        })?,
    };
    Ok(SocketAddr::new(ip, l.port))
}

fn sync_mode(key: &str, value: &str) -> Result<GroupLogSync, SettingError> {
    match value.trim() {
        "journal" => Ok(GroupLogSync::Journal),
        "volume" => Ok(GroupLogSync::Volume),
        "file" => Ok(GroupLogSync::PerFile),
        v => Err(refuse(
            key,
            format!("'{v}' is not one of journal, volume, file"),
        )),
    }
}

fn sync_name(mode: GroupLogSync) -> &'static str {
    match mode {
        GroupLogSync::Journal => "journal",
        GroupLogSync::Volume => "volume",
        GroupLogSync::PerFile => "file",
    }
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
                "socket.request.max.bytes" => s.max_frame_bytes = Some(at_least(key, value, 1)?),
                "max.connections" => {
                    s.max_connections = Some(limit(key, value)?.unwrap_or(usize::MAX))
                }
                "max.connections.per.ip" => {
                    s.max_connections_per_ip = Some(limit(key, value)?.unwrap_or(usize::MAX))
                }
                "quota.window.num" => s.quota_window_num = Some(at_least(key, value, 1)?),
                "quota.window.size.seconds" => {
                    s.quota_window_size_seconds = Some(at_least(key, value, 1)?)
                }
                "auto.create.topics.enable" => s.auto_create_topics = Some(boolean(key, value)?),
                "num.partitions" => s.default_partitions = Some(at_least(key, value, 1)?),
                // Apache's minimum: one legacy record's overhead.
                "log.segment.bytes" => s.segment_bytes = Some(at_least(key, value, 14)?),
                // -1: no limit, as for the topic configs they default.
                "log.retention.ms" => s.log_retention_ms = Some(at_least(key, value, -1)?),
                "log.retention.minutes" => {
                    s.log_retention_minutes = Some(at_least(key, value, -1)?)
                }
                "log.retention.hours" => s.log_retention_hours = Some(at_least(key, value, -1)?),
                "log.retention.bytes" => s.log_retention_bytes = Some(number(key, value)?),
                "log.retention.check.interval.ms" => {
                    s.log_retention_check_interval_ms = Some(at_least(key, value, 1)?)
                }
                "log.cleaner.enable" => s.log_cleaner_enable = Some(boolean(key, value)?),
                "log.cleaner.backoff.ms" => {
                    s.log_cleaner_backoff_ms = Some(at_least(key, value, 0)?)
                }
                "log.cleaner.threads" => s.log_cleaner_threads = Some(at_least(key, value, 0)?),
                "log.cleaner.dedupe.buffer.size" => {
                    s.log_cleaner_dedupe_buffer_size = Some(at_least(key, value, 1)?)
                }
                "log.cleaner.io.max.bytes.per.second" => {
                    s.log_cleaner_io_max_bytes_per_second = Some(at_least(key, value, 1.0)?)
                }
                "kaas.lag.metrics.max.partitions" => {
                    s.lag_metrics_max_partitions = Some(at_least(key, value, 0)?)
                }
                "group.initial.rebalance.delay.ms" => {
                    s.group_initial_rebalance_delay_ms = Some(at_least(key, value, 0)?)
                }
                "group.min.session.timeout.ms" => {
                    s.group_min_session_timeout_ms = Some(at_least(key, value, 0)?)
                }
                "group.max.session.timeout.ms" => {
                    s.group_max_session_timeout_ms = Some(at_least(key, value, 0)?)
                }
                "group.max.size" => s.group_max_size = Some(at_least(key, value, 1)?),
                "group.consumer.session.timeout.ms" => {
                    s.group_consumer_session_timeout_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.min.session.timeout.ms" => {
                    s.group_consumer_min_session_timeout_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.max.session.timeout.ms" => {
                    s.group_consumer_max_session_timeout_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.heartbeat.interval.ms" => {
                    s.group_consumer_heartbeat_interval_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.min.heartbeat.interval.ms" => {
                    s.group_consumer_min_heartbeat_interval_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.max.heartbeat.interval.ms" => {
                    s.group_consumer_max_heartbeat_interval_ms = Some(at_least(key, value, 1)?)
                }
                "group.consumer.regex.refresh.interval.ms" => {
                    s.group_consumer_regex_refresh_interval_ms =
                        Some(at_least(key, value, REGEX_REFRESH_MIN_INTERVAL_MS as u64)?)
                }
                "group.consumer.assignors" => {
                    s.group_consumer_assignors =
                        Some(BuiltinAssignor::parse_list(value).map_err(|e| refuse(key, e))?)
                }
                "group.consumer.max.size" => {
                    s.group_consumer_max_size = Some(at_least(key, value, 1)?)
                }
                "group.consumer.migration.policy" => {
                    s.group_consumer_migration_policy =
                        Some(value.trim().parse().map_err(|e: String| refuse(key, e))?)
                }
                "offsets.retention.minutes" => {
                    s.offsets_retention_minutes = Some(at_least(key, value, 1)?)
                }
                "offsets.retention.check.interval.ms" => {
                    s.offsets_retention_check_interval_ms = Some(at_least(key, value, 1)?)
                }
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
                "kaas.group.idle.unload.ms" => {
                    s.group_idle_unload_ms = Some(at_least(key, value, 0)?)
                }
                "kaas.max.loaded.groups" => s.max_loaded_groups = Some(at_least(key, value, 1)?),
                "kaas.group.log.sync" => s.group_log_sync = Some(sync_mode(key, value)?),
                "kaas.shutdown.drain.ms" => s.shutdown_drain_ms = Some(at_least(key, value, 0)?),
                "kaas.volume.check.interval.ms" => {
                    s.volume_check_interval_ms = Some(at_least(key, value, 10)?)
                }
                "kaas.volume.check.timeout.ms" => {
                    s.volume_check_timeout_ms = Some(at_least(key, value, 100)?)
                }
                "kaas.assignment.confirm.timeout.ms" => {
                    s.assignment_confirm_timeout_ms = Some(at_least(key, value, 1000)?)
                }
                "kaas.volume.self.check" => {
                    s.volume_self_check = Some(value.parse().map_err(|e| refuse(key, e))?)
                }
                "transaction.max.timeout.ms" => {
                    s.transaction_max_timeout_ms = Some(at_least(key, value, 1)?)
                }
                "transactional.id.expiration.ms" => {
                    s.transactional_id_expiration_ms = Some(at_least(key, value, 1)?)
                }
                "transaction.abort.timed.out.transaction.cleanup.interval.ms" => {
                    s.transaction_abort_timed_out_transaction_cleanup_interval_ms =
                        Some(at_least(key, value, 1)?)
                }
                "transaction.remove.expired.transaction.cleanup.interval.ms" => {
                    s.transaction_remove_expired_transaction_cleanup_interval_ms =
                        Some(at_least(key, value, 1)?)
                }
                "producer.id.expiration.ms" => {
                    s.producer_id_expiration_ms = Some(at_least(key, value, 1)?)
                }
                "producer.id.expiration.check.interval.ms" => {
                    s.producer_id_expiration_check_interval_ms = Some(at_least(key, value, 1)?)
                }
                other if topic_config::broker_settings().any(|k| k == other) => {
                    topic_config::check_broker_setting(other, value)
                        .map_err(|why| refuse(other, why))?;
                    s.topic_defaults
                        .insert(other.to_string(), value.trim().to_string());
                }
                other => {
                    if !s.security.parse(other, value)? {
                        warnings.push(format!(
                            "{other}: not a kaas setting; ignored (docs/operations.md lists them)"
                        ))
                    }
                }
            }
        }
        read_listeners(get, &map, &controllers, &mut warnings, &mut s)?;
        if let (Some(min), Some(max)) = (
            s.group_min_session_timeout_ms,
            s.group_max_session_timeout_ms,
        ) {
            if min > max {
                return Err(refuse(
                    "group.min.session.timeout.ms",
                    format!("{min} is above group.max.session.timeout.ms ({max})"),
                ));
            }
        }
        Ok(FromFile {
            settings: s,
            warnings,
        })
    }

    /// These settings, with `lower`'s where these leave one unset.
    pub fn or(self, lower: Settings) -> Settings {
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
            max_frame_bytes: self.max_frame_bytes.or(lower.max_frame_bytes),
            max_connections: self.max_connections.or(lower.max_connections),
            max_connections_per_ip: self.max_connections_per_ip.or(lower.max_connections_per_ip),
            quota_window_num: self.quota_window_num.or(lower.quota_window_num),
            quota_window_size_seconds: self
                .quota_window_size_seconds
                .or(lower.quota_window_size_seconds),
            auto_create_topics: self.auto_create_topics.or(lower.auto_create_topics),
            default_partitions: self.default_partitions.or(lower.default_partitions),
            segment_bytes: self.segment_bytes.or(lower.segment_bytes),
            log_retention_ms: self.log_retention_ms.or(lower.log_retention_ms),
            log_retention_minutes: self.log_retention_minutes.or(lower.log_retention_minutes),
            log_retention_hours: self.log_retention_hours.or(lower.log_retention_hours),
            log_retention_bytes: self.log_retention_bytes.or(lower.log_retention_bytes),
            log_retention_check_interval_ms: self
                .log_retention_check_interval_ms
                .or(lower.log_retention_check_interval_ms),
            topic_defaults: {
                let mut merged = lower.topic_defaults;
                merged.extend(self.topic_defaults);
                merged
            },
            log_cleaner_enable: self.log_cleaner_enable.or(lower.log_cleaner_enable),
            log_cleaner_backoff_ms: self.log_cleaner_backoff_ms.or(lower.log_cleaner_backoff_ms),
            log_cleaner_dedupe_buffer_size: self
                .log_cleaner_dedupe_buffer_size
                .or(lower.log_cleaner_dedupe_buffer_size),
            log_cleaner_io_max_bytes_per_second: self
                .log_cleaner_io_max_bytes_per_second
                .or(lower.log_cleaner_io_max_bytes_per_second),
            log_cleaner_threads: self.log_cleaner_threads.or(lower.log_cleaner_threads),
            lag_metrics_max_partitions: self
                .lag_metrics_max_partitions
                .or(lower.lag_metrics_max_partitions),
            group_initial_rebalance_delay_ms: self
                .group_initial_rebalance_delay_ms
                .or(lower.group_initial_rebalance_delay_ms),
            group_min_session_timeout_ms: self
                .group_min_session_timeout_ms
                .or(lower.group_min_session_timeout_ms),
            group_max_session_timeout_ms: self
                .group_max_session_timeout_ms
                .or(lower.group_max_session_timeout_ms),
            group_max_size: self.group_max_size.or(lower.group_max_size),
            group_consumer_session_timeout_ms: self
                .group_consumer_session_timeout_ms
                .or(lower.group_consumer_session_timeout_ms),
            group_consumer_min_session_timeout_ms: self
                .group_consumer_min_session_timeout_ms
                .or(lower.group_consumer_min_session_timeout_ms),
            group_consumer_max_session_timeout_ms: self
                .group_consumer_max_session_timeout_ms
                .or(lower.group_consumer_max_session_timeout_ms),
            group_consumer_heartbeat_interval_ms: self
                .group_consumer_heartbeat_interval_ms
                .or(lower.group_consumer_heartbeat_interval_ms),
            group_consumer_min_heartbeat_interval_ms: self
                .group_consumer_min_heartbeat_interval_ms
                .or(lower.group_consumer_min_heartbeat_interval_ms),
            group_consumer_max_heartbeat_interval_ms: self
                .group_consumer_max_heartbeat_interval_ms
                .or(lower.group_consumer_max_heartbeat_interval_ms),
            group_consumer_max_size: self
                .group_consumer_max_size
                .or(lower.group_consumer_max_size),
            group_consumer_assignors: self
                .group_consumer_assignors
                .or(lower.group_consumer_assignors),
            group_consumer_regex_refresh_interval_ms: self
                .group_consumer_regex_refresh_interval_ms
                .or(lower.group_consumer_regex_refresh_interval_ms),
            group_consumer_migration_policy: self
                .group_consumer_migration_policy
                .or(lower.group_consumer_migration_policy),
            offsets_retention_minutes: self
                .offsets_retention_minutes
                .or(lower.offsets_retention_minutes),
            offsets_retention_check_interval_ms: self
                .offsets_retention_check_interval_ms
                .or(lower.offsets_retention_check_interval_ms),
            group_idle_unload_ms: self.group_idle_unload_ms.or(lower.group_idle_unload_ms),
            max_loaded_groups: self.max_loaded_groups.or(lower.max_loaded_groups),
            group_log_sync: self.group_log_sync.or(lower.group_log_sync),
            shutdown_drain_ms: self.shutdown_drain_ms.or(lower.shutdown_drain_ms),
            volume_check_interval_ms: self
                .volume_check_interval_ms
                .or(lower.volume_check_interval_ms),
            volume_check_timeout_ms: self
                .volume_check_timeout_ms
                .or(lower.volume_check_timeout_ms),
            volume_self_check: self.volume_self_check.or(lower.volume_self_check),
            assignment_confirm_timeout_ms: self
                .assignment_confirm_timeout_ms
                .or(lower.assignment_confirm_timeout_ms),
            transaction_max_timeout_ms: self
                .transaction_max_timeout_ms
                .or(lower.transaction_max_timeout_ms),
            transactional_id_expiration_ms: self
                .transactional_id_expiration_ms
                .or(lower.transactional_id_expiration_ms),
            transaction_abort_timed_out_transaction_cleanup_interval_ms: self
                .transaction_abort_timed_out_transaction_cleanup_interval_ms
                .or(lower.transaction_abort_timed_out_transaction_cleanup_interval_ms),
            transaction_remove_expired_transaction_cleanup_interval_ms: self
                .transaction_remove_expired_transaction_cleanup_interval_ms
                .or(lower.transaction_remove_expired_transaction_cleanup_interval_ms),
            producer_id_expiration_ms: self
                .producer_id_expiration_ms
                .or(lower.producer_id_expiration_ms),
            producer_id_expiration_check_interval_ms: self
                .producer_id_expiration_check_interval_ms
                .or(lower.producer_id_expiration_check_interval_ms),
            security: self.security.or(lower.security),
        }
    }

    /// The `group.consumer.*` settings on `c`.
    fn tune_consumer_groups(&self, c: &mut ConsumerGroupConfig) {
        let set = |target: &mut i32, v: Option<i32>| {
            if let Some(v) = v {
                *target = v;
            }
        };
        set(
            &mut c.session_timeout_ms,
            self.group_consumer_session_timeout_ms,
        );
        set(
            &mut c.min_session_timeout_ms,
            self.group_consumer_min_session_timeout_ms,
        );
        set(
            &mut c.max_session_timeout_ms,
            self.group_consumer_max_session_timeout_ms,
        );
        set(
            &mut c.heartbeat_interval_ms,
            self.group_consumer_heartbeat_interval_ms,
        );
        set(
            &mut c.min_heartbeat_interval_ms,
            self.group_consumer_min_heartbeat_interval_ms,
        );
        set(
            &mut c.max_heartbeat_interval_ms,
            self.group_consumer_max_heartbeat_interval_ms,
        );
        if let Some(v) = self.group_consumer_max_size {
            c.max_size = v;
        }
        if let Some(v) = &self.group_consumer_assignors {
            c.assignors = v.clone();
        }
        if let Some(v) = self.group_consumer_migration_policy {
            c.migration_policy = v;
        }
        if let Some(v) = self.group_consumer_regex_refresh_interval_ms {
            c.regex_refresh_interval_ms = v;
        }
    }

    /// The checks Apache makes of settings together, defaults filled in
    /// (the consumer group session and heartbeat bounds).
    pub fn check(&self) -> Result<(), SettingError> {
        // Flags and variables skip the file's parsing: the same bounds.
        for (key, value) in [
            ("log.retention.ms", self.log_retention_ms),
            ("log.retention.minutes", self.log_retention_minutes),
            ("log.retention.hours", self.log_retention_hours),
        ] {
            if let Some(v) = value.filter(|v| *v < -1) {
                return Err(refuse(key, format!("{v} is below the minimum of -1")));
            }
        }
        for (key, value) in &self.topic_defaults {
            topic_config::check_broker_setting(key, value).map_err(|why| refuse(key, why))?;
        }
        if self.log_retention_check_interval_ms == Some(0) {
            return Err(refuse(
                "log.retention.check.interval.ms",
                "0 is below the minimum of 1",
            ));
        }
        if self.log_cleaner_dedupe_buffer_size == Some(0) {
            return Err(refuse(
                "log.cleaner.dedupe.buffer.size",
                "0 is below the minimum of 1",
            ));
        }
        if let Some(v) = self
            .log_cleaner_io_max_bytes_per_second
            .filter(|v| v.is_nan() || *v < 1.0)
        {
            return Err(refuse(
                "log.cleaner.io.max.bytes.per.second",
                format!("{v} is below the minimum of 1"),
            ));
        }
        let mut consumer = ConsumerGroupConfig::default();
        self.tune_consumer_groups(&mut consumer);
        consumer
            .validate()
            .map_err(|(key, reason)| refuse(key, reason))
    }

    /// Sets what these settings give of the log cleaner's on `cleaner`.
    pub fn tune_cleaner(&self, cleaner: &mut CleanerConfig) {
        cleaner.enable = self.log_cleaner_enable.unwrap_or(cleaner.enable);
        cleaner.backoff_ms = self.log_cleaner_backoff_ms.unwrap_or(cleaner.backoff_ms);
        cleaner.dedupe_buffer_size = self
            .log_cleaner_dedupe_buffer_size
            .unwrap_or(cleaner.dedupe_buffer_size);
        cleaner.io_max_bytes_per_second = self
            .log_cleaner_io_max_bytes_per_second
            .unwrap_or(cleaner.io_max_bytes_per_second);
        cleaner.threads = self.log_cleaner_threads.unwrap_or(cleaner.threads);
    }

    /// Sets what these settings give on `c` (the broker's tuning; id,
    /// folder and addresses are the caller's).
    pub fn tune(&self, c: &mut BrokerConfig) {
        if let Some(v) = self.max_frame_bytes {
            c.max_frame_bytes = v;
        }
        if let Some(v) = self.max_connections {
            c.max_connections = v;
        }
        if let Some(v) = self.max_connections_per_ip {
            c.max_connections_per_ip = v;
        }
        if let Some(v) = self.quota_window_num {
            c.quota_window.samples = v;
        }
        if let Some(v) = self.quota_window_size_seconds {
            c.quota_window.window_ms = v * 1000;
        }
        if let Some(v) = self.auto_create_topics {
            c.auto_create_topics = v;
        }
        if let Some(v) = self.default_partitions {
            c.default_partitions = v;
        }
        if let Some(v) = self.segment_bytes {
            c.log.segment_bytes = v;
        }
        c.topic_defaults.extend(self.topic_defaults.clone());
        let r = &mut c.log_retention;
        r.ms = self.log_retention_ms.or(r.ms);
        r.minutes = self.log_retention_minutes.or(r.minutes);
        r.hours = self.log_retention_hours.or(r.hours);
        r.bytes = self.log_retention_bytes.or(r.bytes);
        if let Some(v) = self.log_retention_check_interval_ms {
            r.check_interval_ms = v;
        }
        self.tune_cleaner(&mut c.log_cleaner);
        if let Some(v) = self.lag_metrics_max_partitions {
            c.lag_metrics_max_partitions = v;
        }
        let g = &mut c.groups;
        if let Some(v) = self.group_initial_rebalance_delay_ms {
            g.core.initial_rebalance_delay_ms = v;
        }
        if let Some(v) = self.group_min_session_timeout_ms {
            g.core.min_session_timeout_ms = v;
        }
        if let Some(v) = self.group_max_session_timeout_ms {
            g.core.max_session_timeout_ms = v;
        }
        if let Some(v) = self.group_max_size {
            g.core.max_group_size = v;
        }
        self.tune_consumer_groups(&mut g.core.consumer);
        if let Some(v) = self.offsets_retention_minutes {
            g.core.offsets_retention_ms = v * 60 * 1000;
        }
        if let Some(v) = self.offsets_retention_check_interval_ms {
            g.core.offsets_retention_check_interval_ms = v;
        }
        if let Some(v) = self.group_idle_unload_ms {
            g.idle_unload_ms = v;
        }
        if let Some(v) = self.max_loaded_groups {
            g.max_resident_groups = v;
        }
        if let Some(v) = self.group_log_sync {
            c.group_log_sync = v;
        }
        if let Some(v) = self.shutdown_drain_ms {
            c.shutdown_drain_ms = v;
        }
        if let Some(v) = self.volume_check_interval_ms {
            c.volume_check.interval = std::time::Duration::from_millis(v);
        }
        if let Some(v) = self.volume_check_timeout_ms {
            c.volume_check.timeout = std::time::Duration::from_millis(v);
        }
        if let Some(v) = self.volume_self_check {
            c.volume_self_check = v;
        }
        if let Some(v) = self.assignment_confirm_timeout_ms {
            c.volume_check.assignment_timeout = std::time::Duration::from_millis(v);
        }
        if let Some(v) = self.transaction_max_timeout_ms {
            c.transactions.core.max_timeout_ms = v;
        }
        if let Some(v) = self.transactional_id_expiration_ms {
            c.transactions.core.id_expiration_ms = v;
        }
        if let Some(v) = self.transaction_abort_timed_out_transaction_cleanup_interval_ms {
            c.transactions.abort_check_interval_ms = v;
        }
        if let Some(v) = self.transaction_remove_expired_transaction_cleanup_interval_ms {
            c.transactions.expiry_check_interval_ms = v;
        }
        if let Some(v) = self.producer_id_expiration_ms {
            c.producer_id_expiration_ms = v;
        }
        if let Some(v) = self.producer_id_expiration_check_interval_ms {
            c.producer_id_expiration_check_interval_ms = v;
        }
    }
}
