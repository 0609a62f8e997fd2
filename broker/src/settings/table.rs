//! Every scalar broker setting in one table: its `server.properties` key,
//! its flag and variable, its type, what it does, whether AlterConfigs
//! changes it at run time, how it is read onto a [`BrokerConfig`] and how
//! its value in force is shown. The flags of `serve` and `local`, the
//! `server.properties` parser, the effective-configuration log line,
//! DescribeConfigs' types and docs/operations.md's table are all derived
//! from it; adding a setting is one entry here.
//!
//! Defaults are not in the table: each is [`BrokerConfig::new`]'s, shown
//! by the entry's `get` on a broker given nothing (one copy of each).
//!
//! The settings that are read together stay outside it: the broker's id
//! and folder, the listeners (`listeners`, `advertised.listeners` and the
//! protocol map name each other), the topic configs' defaults (their own
//! table, [`crate::storage::topic_config`]) and the security settings
//! ([`super::security`]).

use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use crate::group::assignor::BuiltinAssignor;
use crate::group::consumer::regex_subscription::REFRESH_MIN_INTERVAL_MS;
use crate::storage::group_log::GroupLogSync;
use crate::storage::topic_config::ConfigType;
use crate::BrokerConfig;

/// One broker setting.
pub struct BrokerSetting {
    /// Apache Kafka's `server.properties` key, `kaas.*` for kaas's own.
    pub key: &'static str,
    /// Its flag on `serve` and `local`.
    pub flag: Flag,
    /// The type DescribeConfigs gives it (Apache's `KafkaConfig` type).
    pub kind: ConfigType,
    /// What it does, beyond Apache's meaning (the flag's help and the
    /// docs' row); empty where Apache's meaning is all.
    pub doc: &'static str,
    /// AlterConfigs changes it at run time ([`super::dynamic`]).
    pub dynamic: bool,
    /// Reads `value` onto `c`; the reason when it is not valid.
    pub set: fn(&mut BrokerConfig, &str) -> Result<(), String>,
    /// Its value in force on `c` as the effective configuration shows it;
    /// None where it has none (it yields to another setting).
    pub get: fn(&BrokerConfig) -> Option<String>,
}

/// A setting's flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flag {
    /// `--NAME VALUE`, and `KAAS_NAME` (upper case, `_` for `-`) in the
    /// environment.
    Value(&'static str),
    /// `--NAME` alone, giving the setting this value (no variable).
    Switch(&'static str, &'static str),
}

impl Flag {
    pub fn name(self) -> &'static str {
        match self {
            Flag::Value(name) | Flag::Switch(name, _) => name,
        }
    }

    /// The environment variable of a value flag.
    pub fn env(self) -> Option<String> {
        match self {
            Flag::Value(name) => Some(format!("KAAS_{}", name.replace('-', "_").to_uppercase())),
            Flag::Switch(..) => None,
        }
    }
}

/// The entry of `key`.
pub fn find(key: &str) -> Option<&'static BrokerSetting> {
    BROKER_SETTINGS.iter().find(|s| s.key == key)
}

/// `value` checked as `key` (a table entry) is read: the reason when it
/// is not valid.
pub fn check(setting: &BrokerSetting, value: &str) -> Result<(), String> {
    (setting.set)(&mut defaults(), value)
}

/// A broker given nothing: what each default is read from.
pub fn defaults() -> BrokerConfig {
    BrokerConfig::new(0, PathBuf::new(), "", 0)
}

/// docs/operations.md's table of the settings: `| flag | key: doc | default |`.
pub fn markdown_rows() -> String {
    let defaults = defaults();
    let mut out = String::from("| flag | `server.properties` key | default |\n|---|---|---|\n");
    for s in BROKER_SETTINGS {
        let flag = match s.flag {
            Flag::Value(name) => format!("`--{name}`"),
            Flag::Switch(name, value) => format!("`--{name}` (sets {value})"),
        };
        let meaning = match s.doc {
            "" => s.key.to_string(),
            // A bar would end the cell.
            doc => format!("{}: {}", s.key, doc.replace('|', "\\|")),
        };
        let default = (s.get)(&defaults).unwrap_or_else(|| "—".into());
        let dynamic = if s.dynamic { " (dynamic)" } else { "" };
        out.push_str(&format!("| {flag} | {meaning}{dynamic} | {default} |\n"));
    }
    out
}

/// A number, trimmed.
pub fn number<T: FromStr>(value: &str) -> Result<T, String> {
    value
        .trim()
        .parse()
        .map_err(|_| format!("'{value}' is not a valid number"))
}

/// A number at least `min` (NaN is not).
pub fn at_least<T: FromStr + PartialOrd + std::fmt::Display + Copy>(
    value: &str,
    min: T,
) -> Result<T, String> {
    let n: T = number(value)?;
    // NaN is not at least anything.
    if n.partial_cmp(&min).is_none_or(|o| o.is_lt()) {
        return Err(format!("{n} is below the minimum of {min}"));
    }
    Ok(n)
}

/// Kafka's BOOLEAN: `true` or `false`, any case.
pub fn boolean(value: &str) -> Result<bool, String> {
    match value.trim().to_ascii_lowercase().as_str() {
        "true" => Ok(true),
        "false" => Ok(false),
        _ => Err(format!("'{value}' is not true or false")),
    }
}

/// A count whose Apache default, `Integer.MAX_VALUE`, means no limit.
fn limit(value: &str) -> Result<usize, String> {
    let n: usize = at_least(value, 0)?;
    Ok(if n < i32::MAX as usize { n } else { usize::MAX })
}

/// A [`limit`] as Apache shows it.
fn shown_limit(n: usize) -> Option<String> {
    Some(match n {
        usize::MAX => i32::MAX.to_string(),
        n => n.to_string(),
    })
}

fn shown(value: impl ToString) -> Option<String> {
    Some(value.to_string())
}

fn millis(d: Duration) -> Option<String> {
    shown(d.as_millis())
}

pub fn sync_mode(value: &str) -> Result<GroupLogSync, String> {
    match value.trim() {
        "journal" => Ok(GroupLogSync::Journal),
        "volume" => Ok(GroupLogSync::Volume),
        "file" => Ok(GroupLogSync::PerFile),
        v => Err(format!("'{v}' is not one of journal, volume, file")),
    }
}

fn sync_name(mode: GroupLogSync) -> &'static str {
    match mode {
        GroupLogSync::Journal => "journal",
        GroupLogSync::Volume => "volume",
        GroupLogSync::PerFile => "file",
    }
}

/// Every scalar broker setting, in the order a user reads them (the
/// effective configuration's and the docs').
pub static BROKER_SETTINGS: &[BrokerSetting] = &[
    BrokerSetting {
        key: "socket.request.max.bytes",
        flag: Flag::Value("max-frame-bytes"),
        kind: ConfigType::Int,
        doc: "the largest request accepted, in bytes",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.max_frame_bytes = n),
        get: |c| shown(c.max_frame_bytes),
    },
    BrokerSetting {
        key: "max.connections",
        flag: Flag::Value("max-connections"),
        kind: ConfigType::Int,
        doc: "most client connections at once (2147483647: no limit); at the limit the \
              listener stops accepting until a connection closes, clients waiting in the \
              backlog",
        dynamic: false,
        set: |c, v| limit(v).map(|n| c.max_connections = n),
        get: |c| shown_limit(c.max_connections),
    },
    BrokerSetting {
        key: "max.connections.per.ip",
        flag: Flag::Value("max-connections-per-ip"),
        kind: ConfigType::Int,
        doc: "most connections from one address (2147483647: no limit); a connection over it \
              is closed at once and logged: `refused a connection` with the client address",
        dynamic: false,
        set: |c, v| limit(v).map(|n| c.max_connections_per_ip = n),
        get: |c| shown_limit(c.max_connections_per_ip),
    },
    BrokerSetting {
        key: "quota.window.num",
        flag: Flag::Value("quota-window-num"),
        kind: ConfigType::Int,
        doc: "the samples a client quota's rate is measured over",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.quota_window.samples = n),
        get: |c| shown(c.quota_window.samples),
    },
    BrokerSetting {
        key: "quota.window.size.seconds",
        flag: Flag::Value("quota-window-size-seconds"),
        kind: ConfigType::Int,
        doc: "the length of one sample",
        dynamic: false,
        set: |c, v| at_least::<u64>(v, 1).map(|n| c.quota_window.window_ms = n * 1000),
        get: |c| shown(c.quota_window.window_ms / 1000),
    },
    BrokerSetting {
        key: "auto.create.topics.enable",
        flag: Flag::Switch("no-auto-create-topics", "false"),
        kind: ConfigType::Boolean,
        doc: "",
        dynamic: false,
        set: |c, v| boolean(v).map(|n| c.auto_create_topics = n),
        get: |c| shown(c.auto_create_topics),
    },
    BrokerSetting {
        key: "num.partitions",
        flag: Flag::Value("default-partitions"),
        kind: ConfigType::Int,
        doc: "partitions of auto-created topics",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.default_partitions = n),
        get: |c| shown(c.default_partitions),
    },
    BrokerSetting {
        key: "log.segment.bytes",
        flag: Flag::Value("segment-bytes"),
        kind: ConfigType::Int,
        doc: "a topic's `segment.bytes` overrides it",
        dynamic: true,
        // Apache's minimum: one legacy record's overhead.
        set: |c, v| at_least(v, 14).map(|n| c.log.segment_bytes = n),
        get: |c| shown(c.log.segment_bytes),
    },
    BrokerSetting {
        key: "log.retention.ms",
        flag: Flag::Value("log-retention-ms"),
        kind: ConfigType::Long,
        doc: "how long a topic keeps records unless its `retention.ms` says otherwise (-1: \
              forever); over log.retention.minutes and log.retention.hours",
        dynamic: true,
        set: |c, v| at_least(v, -1).map(|n| c.log_retention.ms = Some(n)),
        get: |c| c.log_retention.ms.and_then(shown),
    },
    BrokerSetting {
        key: "log.retention.minutes",
        flag: Flag::Value("log-retention-minutes"),
        kind: ConfigType::Int,
        doc: "as log.retention.ms, in minutes; over log.retention.hours",
        dynamic: true,
        set: |c, v| at_least(v, -1).map(|n| c.log_retention.minutes = Some(n)),
        get: |c| c.log_retention.minutes.and_then(shown),
    },
    BrokerSetting {
        key: "log.retention.hours",
        flag: Flag::Value("log-retention-hours"),
        kind: ConfigType::Int,
        doc: "as log.retention.ms, in hours",
        dynamic: true,
        set: |c, v| at_least(v, -1).map(|n| c.log_retention.hours = Some(n)),
        get: |c| shown(c.log_retention.hours.unwrap_or(168)),
    },
    BrokerSetting {
        key: "log.retention.bytes",
        flag: Flag::Value("log-retention-bytes"),
        kind: ConfigType::Long,
        doc: "the most bytes a partition keeps unless its topic's `retention.bytes` says \
              otherwise (-1: no limit)",
        dynamic: true,
        set: |c, v| number(v).map(|n| c.log_retention.bytes = Some(n)),
        get: |c| shown(c.log_retention.bytes.unwrap_or(-1)),
    },
    BrokerSetting {
        key: "log.retention.check.interval.ms",
        flag: Flag::Value("log-retention-check-interval-ms"),
        kind: ConfigType::Long,
        doc: "how often each partition's leader deletes what retention lets go",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.log_retention.check_interval_ms = n),
        get: |c| shown(c.log_retention.check_interval_ms),
    },
    BrokerSetting {
        key: "log.cleaner.enable",
        flag: Flag::Value("log-cleaner-enable"),
        kind: ConfigType::Boolean,
        doc: "compact topics with `cleanup.policy=compact`",
        dynamic: false,
        set: |c, v| boolean(v).map(|n| c.log_cleaner.enable = n),
        get: |c| shown(c.log_cleaner.enable),
    },
    BrokerSetting {
        key: "log.cleaner.threads",
        flag: Flag::Value("log-cleaner-threads"),
        kind: ConfigType::Int,
        doc: "compacted logs cleaned at once, each by its own thread (the dedupe buffer is \
              shared among them); 0 cleans none",
        dynamic: true,
        set: |c, v| at_least(v, 0).map(|n| c.log_cleaner.threads = n),
        get: |c| shown(c.log_cleaner.threads),
    },
    BrokerSetting {
        key: "log.cleaner.backoff.ms",
        flag: Flag::Value("log-cleaner-backoff-ms"),
        kind: ConfigType::Long,
        doc: "the cleaner's wait when no compacted log is due",
        dynamic: true,
        set: |c, v| at_least(v, 0).map(|n| c.log_cleaner.backoff_ms = n),
        get: |c| shown(c.log_cleaner.backoff_ms),
    },
    BrokerSetting {
        key: "log.cleaner.dedupe.buffer.size",
        flag: Flag::Value("log-cleaner-dedupe-buffer-size"),
        kind: ConfigType::Long,
        doc: "bytes of the cleaner's key map (24 per key)",
        dynamic: true,
        set: |c, v| at_least(v, 1).map(|n| c.log_cleaner.dedupe_buffer_size = n),
        get: |c| shown(c.log_cleaner.dedupe_buffer_size),
    },
    BrokerSetting {
        key: "log.cleaner.io.max.bytes.per.second",
        flag: Flag::Value("log-cleaner-io-max-bytes-per-second"),
        kind: ConfigType::Double,
        doc: "the cleaner's reads and writes at most, all its threads together (the \
              default: no limit)",
        dynamic: true,
        set: |c, v| at_least(v, 1.0).map(|n| c.log_cleaner.io_max_bytes_per_second = n),
        // Apache's default is Double.MaxValue, printed as Java does.
        get: |c| match c.log_cleaner.io_max_bytes_per_second {
            f64::MAX => shown("1.7976931348623157E308"),
            n => shown(n),
        },
    },
    BrokerSetting {
        key: "kaas.lag.metrics.max.partitions",
        flag: Flag::Value("lag-metrics-max-partitions"),
        kind: ConfigType::Int,
        doc: "a coordinator's per-partition lag series on `/metrics` at most (the per-group, \
              per-topic sums are always there)",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.lag_metrics_max_partitions = n),
        get: |c| shown(c.lag_metrics_max_partitions),
    },
    BrokerSetting {
        key: "group.initial.rebalance.delay.ms",
        flag: Flag::Value("group-initial-rebalance-delay-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.groups.core.initial_rebalance_delay_ms = n),
        get: |c| shown(c.groups.core.initial_rebalance_delay_ms),
    },
    BrokerSetting {
        key: "group.min.session.timeout.ms",
        flag: Flag::Value("group-min-session-timeout-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.groups.core.min_session_timeout_ms = n),
        get: |c| shown(c.groups.core.min_session_timeout_ms),
    },
    BrokerSetting {
        key: "group.max.session.timeout.ms",
        flag: Flag::Value("group-max-session-timeout-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.groups.core.max_session_timeout_ms = n),
        get: |c| shown(c.groups.core.max_session_timeout_ms),
    },
    BrokerSetting {
        key: "group.max.size",
        flag: Flag::Value("group-max-size"),
        kind: ConfigType::Int,
        doc: "members per classic group",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.max_group_size = n),
        get: |c| shown_limit(c.groups.core.max_group_size),
    },
    BrokerSetting {
        key: "group.consumer.session.timeout.ms",
        flag: Flag::Value("group-consumer-session-timeout-ms"),
        kind: ConfigType::Int,
        doc: "a KIP-848 member not heard from this long is fenced",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.session_timeout_ms = n),
        get: |c| shown(c.groups.core.consumer.session_timeout_ms),
    },
    BrokerSetting {
        key: "group.consumer.min.session.timeout.ms",
        flag: Flag::Value("group-consumer-min-session-timeout-ms"),
        kind: ConfigType::Int,
        doc: "a bound of the above, checked at start as Apache checks it",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.min_session_timeout_ms = n),
        get: |c| shown(c.groups.core.consumer.min_session_timeout_ms),
    },
    BrokerSetting {
        key: "group.consumer.max.session.timeout.ms",
        flag: Flag::Value("group-consumer-max-session-timeout-ms"),
        kind: ConfigType::Int,
        doc: "a bound of the above, checked at start as Apache checks it",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.max_session_timeout_ms = n),
        get: |c| shown(c.groups.core.consumer.max_session_timeout_ms),
    },
    BrokerSetting {
        key: "group.consumer.heartbeat.interval.ms",
        flag: Flag::Value("group-consumer-heartbeat-interval-ms"),
        kind: ConfigType::Int,
        doc: "the interval KIP-848 members are told to heartbeat at; below the session \
              timeout",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.heartbeat_interval_ms = n),
        get: |c| shown(c.groups.core.consumer.heartbeat_interval_ms),
    },
    BrokerSetting {
        key: "group.consumer.min.heartbeat.interval.ms",
        flag: Flag::Value("group-consumer-min-heartbeat-interval-ms"),
        kind: ConfigType::Int,
        doc: "a bound of the above",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.min_heartbeat_interval_ms = n),
        get: |c| shown(c.groups.core.consumer.min_heartbeat_interval_ms),
    },
    BrokerSetting {
        key: "group.consumer.max.heartbeat.interval.ms",
        flag: Flag::Value("group-consumer-max-heartbeat-interval-ms"),
        kind: ConfigType::Int,
        doc: "a bound of the above",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.max_heartbeat_interval_ms = n),
        get: |c| shown(c.groups.core.consumer.max_heartbeat_interval_ms),
    },
    BrokerSetting {
        key: "group.consumer.max.size",
        flag: Flag::Value("group-consumer-max-size"),
        kind: ConfigType::Int,
        doc: "members per KIP-848 group; more answer GROUP_MAX_SIZE_REACHED",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.consumer.max_size = n),
        get: |c| shown_limit(c.groups.core.consumer.max_size),
    },
    BrokerSetting {
        key: "group.consumer.assignors",
        flag: Flag::Value("group-consumer-assignors"),
        kind: ConfigType::List,
        doc: "the server-side assignors a member may ask for, comma-separated, the first the \
              default: `uniform`, `range` (or Apache's class names for them; custom classes \
              cannot be loaded)",
        dynamic: false,
        set: |c, v| BuiltinAssignor::parse_list(v).map(|n| c.groups.core.consumer.assignors = n),
        get: |c| {
            let names: Vec<&str> = c
                .groups
                .core
                .consumer
                .assignors
                .iter()
                .map(|a| a.name())
                .collect();
            shown(names.join(","))
        },
    },
    BrokerSetting {
        key: "group.consumer.migration.policy",
        flag: Flag::Value("group-consumer-migration-policy"),
        kind: ConfigType::String,
        doc: "`disabled`, `upgrade` (a classic group converts when a consumer-protocol member \
              joins), `downgrade` (a consumer group converts back when its last \
              consumer-protocol member leaves) or `bidirectional`",
        dynamic: false,
        set: |c, v| {
            v.trim()
                .parse()
                .map(|n| c.groups.core.consumer.migration_policy = n)
        },
        get: |c| shown(format!("{:?}", c.groups.core.consumer.migration_policy).to_lowercase()),
    },
    BrokerSetting {
        key: "group.consumer.regex.refresh.interval.ms",
        flag: Flag::Value("group-consumer-regex-refresh-interval-ms"),
        kind: ConfigType::Int,
        doc: "regular-expression subscriptions are matched against the topics again at least \
              this often while members heartbeat, and whenever a topic is created or deleted; \
              at least 10000",
        dynamic: false,
        set: |c, v| {
            let min = REFRESH_MIN_INTERVAL_MS as u64;
            at_least(v, min).map(|n| c.groups.core.consumer.regex_refresh_interval_ms = n)
        },
        get: |c| shown(c.groups.core.consumer.regex_refresh_interval_ms),
    },
    BrokerSetting {
        key: "offsets.retention.minutes",
        flag: Flag::Value("offsets-retention-minutes"),
        kind: ConfigType::Int,
        doc: "swept every `offsets.retention.check.interval.ms`: groups in memory at once, \
              groups out of memory by reading their logs, loading only those to remove",
        dynamic: false,
        set: |c, v| at_least::<u64>(v, 1).map(|n| c.groups.core.offsets_retention_ms = n * 60_000),
        get: |c| shown(c.groups.core.offsets_retention_ms / 60_000),
    },
    BrokerSetting {
        key: "offsets.retention.check.interval.ms",
        flag: Flag::Value("offsets-retention-check-interval-ms"),
        kind: ConfigType::Long,
        doc: "how often expired offsets are looked for",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.core.offsets_retention_check_interval_ms = n),
        get: |c| shown(c.groups.core.offsets_retention_check_interval_ms),
    },
    BrokerSetting {
        key: "kaas.group.idle.unload.ms",
        flag: Flag::Value("group-idle-unload-ms"),
        kind: ConfigType::Long,
        doc: "empty groups idle this long leave memory; they reload from their log",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.groups.idle_unload_ms = n),
        get: |c| shown(c.groups.idle_unload_ms),
    },
    BrokerSetting {
        key: "kaas.max.loaded.groups",
        flag: Flag::Value("max-loaded-groups"),
        kind: ConfigType::Int,
        doc: "beyond it, new loads answer COORDINATOR_LOAD_IN_PROGRESS after idle groups are \
              unloaded",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.groups.max_resident_groups = n),
        get: |c| shown(c.groups.max_resident_groups),
    },
    BrokerSetting {
        key: "kaas.group.log.sync",
        flag: Flag::Value("group-log-sync"),
        kind: ConfigType::String,
        doc: "how a commit is made durable before it is acknowledged: `journal` writes the \
              commits of every group waiting at that moment to the broker's commit journal \
              with one durable write (`O_DIRECT | O_DSYNC` where the volume allows it, else \
              `pwrite` + `fdatasync`), the group logs following by a `syncfs` each time a \
              journal file fills ([design](design/journal.md)); `volume` runs one `syncfs` of \
              the data volume per round instead; `file` fdatasyncs each group's log, for a \
              file system whose `syncfs` does not flush to stable storage",
        dynamic: false,
        set: |c, v| sync_mode(v).map(|n| c.group_log_sync = n),
        get: |c| shown(sync_name(c.group_log_sync)),
    },
    BrokerSetting {
        key: "kaas.shutdown.drain.ms",
        flag: Flag::Value("shutdown-drain-ms"),
        kind: ConfigType::Long,
        doc: "after SIGTERM the broker keeps serving this long, old and new connections, so \
              clients follow its groups as they move; a second SIGTERM or Ctrl-C ends the \
              wait (`serve` only; the operator's pods: 5000)",
        dynamic: false,
        set: |c, v| at_least(v, 0).map(|n| c.shutdown_drain_ms = n),
        get: |c| shown(c.shutdown_drain_ms),
    },
    BrokerSetting {
        key: "kaas.volume.check.interval.ms",
        flag: Flag::Value("volume-check-interval-ms"),
        kind: ConfigType::Long,
        doc: "how often the broker writes, syncs and reads back its own file on the data \
              volume ([design](design/volume.md#the-volume-check))",
        dynamic: false,
        set: |c, v| at_least(v, 10).map(|n| c.volume_check.interval = Duration::from_millis(n)),
        get: |c| millis(c.volume_check.interval),
    },
    BrokerSetting {
        key: "kaas.volume.check.timeout.ms",
        flag: Flag::Value("volume-check-timeout-ms"),
        kind: ConfigType::Long,
        doc: "no check succeeded for this long: the volume counts as stalled, the broker is \
              not ready, refuses produce with NOT_LEADER_OR_FOLLOWER and fails the \
              controller's probe; keep it well under the controller's dead time; at least two \
              intervals",
        dynamic: false,
        set: |c, v| at_least(v, 100).map(|n| c.volume_check.timeout = Duration::from_millis(n)),
        get: |c| millis(c.volume_check.timeout),
    },
    BrokerSetting {
        key: "kaas.assignment.confirm.timeout.ms",
        flag: Flag::Value("assignment-confirm-timeout-ms"),
        kind: ConfigType::Long,
        doc: "a broker whose assignment source has not confirmed the assignment it follows \
              for this long (the file unreadable, the API server out of reach: the ConfigMap \
              is read every 2 s besides its watch) is cut off: not ready, refuses produce, \
              fails the controller's probe and lets go of every partition, whose new owner \
              would otherwise wait for its locks",
        dynamic: false,
        set: |c, v| {
            at_least(v, 1000).map(|n| c.volume_check.assignment_timeout = Duration::from_millis(n))
        },
        get: |c| millis(c.volume_check.assignment_timeout),
    },
    BrokerSetting {
        key: "kaas.volume.self.check",
        flag: Flag::Value("volume-self-check"),
        kind: ConfigType::String,
        doc: "`enforce`, `warn` or `off`: at start, the data volume is checked against kaas's \
              contract: a file written, synced and read back, `flock` exclusion, \
              create-only-if-absent, and the mount's options from `/proc/self/mountinfo` \
              (NFS: version 4, `hard`, `flock` sent to the server, no cached missing names; \
              GlusterFS: no attribute, name or page caching); `enforce` refuses to start \
              naming each failed property and its fix, `warn` logs them and serves; under 64 \
              MiB free and a read-only volume are only logged \
              ([design](design/volume.md#the-startup-self-check))",
        dynamic: false,
        set: |c, v| v.parse().map(|n| c.volume_self_check = n),
        get: |c| shown(format!("{:?}", c.volume_self_check).to_lowercase()),
    },
    BrokerSetting {
        key: "transaction.max.timeout.ms",
        flag: Flag::Value("transaction-max-timeout-ms"),
        kind: ConfigType::Int,
        doc: "a larger `transaction.timeout.ms` gets INVALID_TRANSACTION_TIMEOUT",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.transactions.core.max_timeout_ms = n),
        get: |c| shown(c.transactions.core.max_timeout_ms),
    },
    BrokerSetting {
        key: "transactional.id.expiration.ms",
        flag: Flag::Value("transactional-id-expiration-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.transactions.core.id_expiration_ms = n),
        get: |c| shown(c.transactions.core.id_expiration_ms),
    },
    BrokerSetting {
        key: "transaction.abort.timed.out.transaction.cleanup.interval.ms",
        flag: Flag::Value("transaction-abort-timed-out-transaction-cleanup-interval-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.transactions.abort_check_interval_ms = n),
        get: |c| shown(c.transactions.abort_check_interval_ms),
    },
    BrokerSetting {
        key: "transaction.remove.expired.transaction.cleanup.interval.ms",
        flag: Flag::Value("transaction-remove-expired-transaction-cleanup-interval-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.transactions.expiry_check_interval_ms = n),
        get: |c| shown(c.transactions.expiry_check_interval_ms),
    },
    BrokerSetting {
        key: "producer.id.expiration.ms",
        flag: Flag::Value("producer-id-expiration-ms"),
        kind: ConfigType::Int,
        doc: "a partition forgets a producer with no open transaction whose last batch or \
              marker is this old",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.producer_id_expiration_ms = n),
        get: |c| shown(c.producer_id_expiration_ms),
    },
    BrokerSetting {
        key: "producer.id.expiration.check.interval.ms",
        flag: Flag::Value("producer-id-expiration-check-interval-ms"),
        kind: ConfigType::Int,
        doc: "",
        dynamic: false,
        set: |c, v| at_least(v, 1).map(|n| c.producer_id_expiration_check_interval_ms = n),
        get: |c| shown(c.producer_id_expiration_check_interval_ms),
    },
];

#[cfg(test)]
mod tests;
