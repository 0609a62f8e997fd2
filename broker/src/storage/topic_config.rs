//! Topic configs as Apache Kafka 4.x defines them (`LogConfig`,
//! `TopicConfig`, `ServerTopicConfigSynonyms`): names, types, defaults,
//! validation with Apache's messages, and how DescribeConfigs describes a
//! topic's configs (`ConfigHelper.createTopicConfigEntry`). Pure: the
//! caller gives the topic's overrides and the broker's settings.
//!
//! Over 800 lines: the table of every topic config Apache defines (each with
//! its type, default, bounds, synonyms and documentation) and the checks they
//! share.

use std::collections::BTreeMap;

use super::cleaner::CompactionPolicy;
use super::log::LogConfig;
use super::records::Codec;
use super::retention::RetentionPolicy;
use super::validator::RecordPolicy;

mod broker_settings;

pub use broker_settings::{
    broker_setting_default, broker_setting_type, broker_settings, broker_synonyms,
    check_broker_setting, is_broker_setting, is_list_broker_setting, synonym_chain,
    topic_config_of, BrokerTopicDefaults,
};

/// `DescribeConfigsResponse.ConfigType` (v3+).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Long,
    Double,
    List,
    Password,
}

impl ConfigType {
    pub fn code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Password => 9,
        }
    }

    /// As Apache's parse errors name it.
    fn name(self) -> &'static str {
        match self {
            ConfigType::Boolean => "BOOLEAN",
            ConfigType::String => "STRING",
            ConfigType::Int => "INT",
            ConfigType::Long => "LONG",
            ConfigType::Double => "DOUBLE",
            ConfigType::List => "LIST",
            ConfigType::Password => "PASSWORD",
        }
    }
}

/// `DescribeConfigsResponse.ConfigSource`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigSource {
    /// A topic's own override (`DYNAMIC_TOPIC_CONFIG` to the admin client).
    TopicConfig,
    /// Set at run time for one broker (`--entity-name ID`).
    DynamicBrokerConfig,
    /// Set at run time for every broker (`--entity-default`).
    DynamicDefaultBrokerConfig,
    /// Set in the broker's settings (server.properties or a flag).
    StaticBrokerConfig,
    DefaultConfig,
    /// A group's own override (`GROUP_CONFIG`).
    GroupConfig,
}

impl ConfigSource {
    pub fn code(self) -> i8 {
        match self {
            ConfigSource::TopicConfig => 1,
            ConfigSource::DynamicBrokerConfig => 2,
            ConfigSource::DynamicDefaultBrokerConfig => 3,
            ConfigSource::StaticBrokerConfig => 4,
            ConfigSource::DefaultConfig => 5,
            ConfigSource::GroupConfig => 8,
        }
    }
}

/// A value's check after it parsed (Apache's validators).
#[derive(Debug, Clone, Copy)]
enum Check {
    None,
    AtLeast(i64),
    Between(f64, f64),
    OneOf(&'static [&'static str]),
    /// Every element one of these.
    ListOf(&'static [&'static str]),
    /// 1 to 9, or -1.
    GzipLevel,
    /// `*` or `partition:broker` pairs.
    Replicas,
}

/// A broker setting a topic config defaults to, with the factor to the
/// topic config's unit (hours and minutes to milliseconds) and the
/// broker's own default (`None`: no default).
#[derive(Debug, Clone, Copy)]
pub struct Synonym {
    pub name: &'static str,
    factor: i64,
    default: Option<&'static str>,
}

const fn syn(name: &'static str, factor: i64, default: Option<&'static str>) -> Synonym {
    Synonym {
        name,
        factor,
        default,
    }
}

/// One topic config.
#[derive(Debug)]
pub struct TopicConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// What Apache describes when nothing overrides it.
    pub default: &'static str,
    check: Check,
    /// Broker settings that give its default, in priority order.
    pub synonyms: &'static [Synonym],
    pub doc: &'static str,
}

const HOUR: i64 = 3_600_000;
const MINUTE: i64 = 60_000;
const LONG_MAX: &str = "9223372036854775807";

/// Every topic config of Apache 4.x, in `LogConfig`'s definition order
/// (which decides the error reported first).
pub static TOPIC_CONFIGS: &[TopicConfigDef] = &[
    TopicConfigDef {
        name: "segment.bytes",
        kind: ConfigType::Int,
        default: "1073741824",
        check: Check::AtLeast(1_048_576),
        synonyms: &[syn("log.segment.bytes", 1, Some("1073741824"))],
        doc: "This configuration controls the segment file size for the log. Retention and cleaning is always done a file at a time so a larger segment size means fewer files but less granular control over retention.",
    },
    TopicConfigDef {
        name: "segment.ms",
        kind: ConfigType::Long,
        default: "604800000",
        check: Check::AtLeast(1),
        synonyms: &[syn("log.roll.ms", 1, None), syn("log.roll.hours", HOUR, Some("168"))],
        doc: "This configuration controls the period of time after which Kafka will force the log to roll even if the segment file isn't full to ensure that retention can delete or compact old data.",
    },
    TopicConfigDef {
        name: "segment.jitter.ms",
        kind: ConfigType::Long,
        default: "0",
        check: Check::AtLeast(0),
        synonyms: &[
            syn("log.roll.jitter.ms", 1, None),
            syn("log.roll.jitter.hours", HOUR, Some("0")),
        ],
        doc: "The maximum random jitter subtracted from the scheduled segment roll time to avoid thundering herds of segment rolling",
    },
    TopicConfigDef {
        name: "segment.index.bytes",
        kind: ConfigType::Int,
        default: "10485760",
        check: Check::AtLeast(4),
        synonyms: &[syn("log.index.size.max.bytes", 1, Some("10485760"))],
        doc: "This configuration controls the size of the index that maps offsets to file positions. We preallocate this index file and shrink it only after log rolls. You generally should not need to change this setting.",
    },
    TopicConfigDef {
        name: "flush.messages",
        kind: ConfigType::Long,
        default: LONG_MAX,
        check: Check::AtLeast(1),
        synonyms: &[syn("log.flush.interval.messages", 1, Some(LONG_MAX))],
        doc: "This setting allows specifying an interval at which we will force an fsync of data written to the log.",
    },
    TopicConfigDef {
        name: "flush.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        check: Check::AtLeast(0),
        synonyms: &[
            syn("log.flush.interval.ms", 1, None),
            syn("log.flush.scheduler.interval.ms", 1, Some(LONG_MAX)),
        ],
        doc: "This setting allows specifying a time interval at which we will force an fsync of data written to the log.",
    },
    TopicConfigDef {
        name: "retention.bytes",
        kind: ConfigType::Long,
        default: "-1",
        check: Check::None,
        synonyms: &[syn("log.retention.bytes", 1, Some("-1"))],
        doc: "This configuration controls the maximum size a partition (which consists of log segments) can grow to before we will discard old log segments to free up space if we are using the \"delete\" retention policy. By default there is no size limit only a time limit. Since this limit is enforced at the partition level, multiply it by the number of partitions to compute the topic retention in bytes. Additionally, retention.bytes configuration operates independently of \"segment.ms\" and \"segment.bytes\" configurations. Moreover, it triggers the rolling of new segment if the retention.bytes is configured to zero.",
    },
    TopicConfigDef {
        name: "retention.ms",
        kind: ConfigType::Long,
        default: "604800000",
        check: Check::AtLeast(-1),
        synonyms: &[
            syn("log.retention.ms", 1, None),
            syn("log.retention.minutes", MINUTE, None),
            syn("log.retention.hours", HOUR, Some("168")),
        ],
        doc: "This configuration controls the maximum time we will retain a log before we will discard old log segments to free up space if we are using the \"delete\" retention policy. This represents an SLA on how soon consumers must read their data. If set to -1, no time limit is applied. Additionally, retention.ms configuration operates independently of \"segment.ms\" and \"segment.bytes\" configurations. Moreover, it triggers the rolling of new segment if the retention.ms condition is satisfied.",
    },
    TopicConfigDef {
        name: "max.message.bytes",
        kind: ConfigType::Int,
        default: "1048588",
        check: Check::AtLeast(0),
        synonyms: &[syn("message.max.bytes", 1, Some("1048588"))],
        doc: "The largest record batch size allowed by Kafka (after compression if compression is enabled). If this is increased and there are consumers older than 0.10.2, the consumers' fetch size must also be increased so that they can fetch record batches this large. In the latest message format version, records are always grouped into batches for efficiency. In previous message format versions, uncompressed records are not grouped into batches and this limit only applies to a single record in that case.",
    },
    TopicConfigDef {
        name: "index.interval.bytes",
        kind: ConfigType::Int,
        default: "4096",
        check: Check::AtLeast(0),
        synonyms: &[syn("log.index.interval.bytes", 1, Some("4096"))],
        doc: "This setting controls how frequently Kafka adds an index entry to its offset index.",
    },
    TopicConfigDef {
        name: "delete.retention.ms",
        kind: ConfigType::Long,
        default: "86400000",
        check: Check::AtLeast(0),
        synonyms: &[syn("log.cleaner.delete.retention.ms", 1, Some("86400000"))],
        doc: "The amount of time to retain delete tombstone markers for log compacted topics. This setting also gives a bound on the time in which a consumer must complete a read if they begin from offset 0 to ensure that they get a valid snapshot of the final stage (otherwise delete tombstones may be collected before they complete their scan).",
    },
    TopicConfigDef {
        name: "min.compaction.lag.ms",
        kind: ConfigType::Long,
        default: "0",
        check: Check::AtLeast(0),
        synonyms: &[syn("log.cleaner.min.compaction.lag.ms", 1, Some("0"))],
        doc: "The minimum time a message will remain uncompacted in the log. Only applicable for logs that are being compacted.",
    },
    TopicConfigDef {
        name: "max.compaction.lag.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        check: Check::AtLeast(1),
        synonyms: &[syn("log.cleaner.max.compaction.lag.ms", 1, Some(LONG_MAX))],
        doc: "The maximum time a message will remain ineligible for compaction in the log. Only applicable for logs that are being compacted.",
    },
    TopicConfigDef {
        name: "file.delete.delay.ms",
        kind: ConfigType::Long,
        default: "60000",
        check: Check::AtLeast(0),
        synonyms: &[syn("log.segment.delete.delay.ms", 1, Some("60000"))],
        doc: "The time to wait before deleting a file from the filesystem",
    },
    TopicConfigDef {
        name: "min.cleanable.dirty.ratio",
        kind: ConfigType::Double,
        default: "0.5",
        check: Check::Between(0.0, 1.0),
        synonyms: &[syn("log.cleaner.min.cleanable.ratio", 1, Some("0.5"))],
        doc: "This configuration controls how frequently the log compactor will attempt to clean the log (assuming log compaction is enabled). By default we will avoid cleaning a log where more than 50% of the log has been compacted. This ratio bounds the maximum space wasted in the log by duplicates (at 50% at most 50% of the log could be duplicates). A higher ratio will mean fewer, more efficient cleanings but will mean more wasted space in the log. If the max.compaction.lag.ms or the min.compaction.lag.ms configurations are also specified, then the log compactor considers the log to be eligible for compaction as soon as either: (i) the dirty ratio threshold has been met and the log has had dirty (uncompacted) records for at least the min.compaction.lag.ms duration, or (ii) if the log has had dirty (uncompacted) records for at most the max.compaction.lag.ms period.",
    },
    TopicConfigDef {
        name: "cleanup.policy",
        kind: ConfigType::List,
        default: "delete",
        check: Check::ListOf(&["compact", "delete"]),
        synonyms: &[syn("log.cleanup.policy", 1, Some("delete"))],
        doc: "This config designates the retention policy to use on log segments. The \"delete\" policy (which is the default) will discard old segments when their retention time or size limit has been reached. The \"compact\" policy will enable log compaction, which retains the latest value for each key. It is also possible to specify both policies in a comma-separated list (e.g. \"delete,compact\"). In this case, old segments will be discarded per the retention time and size configuration, while retained segments will be compacted.",
    },
    TopicConfigDef {
        name: "unclean.leader.election.enable",
        kind: ConfigType::Boolean,
        default: "false",
        check: Check::None,
        synonyms: &[syn("unclean.leader.election.enable", 1, Some("false"))],
        doc: "Indicates whether to enable replicas not in the ISR set to be elected as leader as a last resort, even though doing so may result in data loss.",
    },
    TopicConfigDef {
        name: "min.insync.replicas",
        kind: ConfigType::Int,
        default: "1",
        check: Check::AtLeast(1),
        synonyms: &[syn("min.insync.replicas", 1, Some("1"))],
        doc: "When a producer sets acks to \"all\" (or \"-1\"), this configuration specifies the minimum number of replicas that must acknowledge a write for the write to be considered successful. If this minimum cannot be met, then the producer will raise an exception (either NotEnoughReplicas or NotEnoughReplicasAfterAppend).",
    },
    TopicConfigDef {
        name: "compression.type",
        kind: ConfigType::String,
        default: "producer",
        check: Check::OneOf(&["uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"]),
        synonyms: &[syn("compression.type", 1, Some("producer"))],
        doc: "Specify the final compression type for a given topic. This configuration accepts the standard compression codecs ('gzip', 'snappy', 'lz4', 'zstd'). It additionally accepts 'uncompressed' which is equivalent to no compression; and 'producer' which means retain the original compression codec set by the producer.",
    },
    TopicConfigDef {
        name: "compression.gzip.level",
        kind: ConfigType::Int,
        default: "-1",
        check: Check::GzipLevel,
        synonyms: &[syn("compression.gzip.level", 1, Some("-1"))],
        doc: "The compression level to use if compression.type is set to gzip.",
    },
    TopicConfigDef {
        name: "compression.lz4.level",
        kind: ConfigType::Int,
        default: "9",
        check: Check::Between(1.0, 17.0),
        synonyms: &[syn("compression.lz4.level", 1, Some("9"))],
        doc: "The compression level to use if compression.type is set to lz4.",
    },
    TopicConfigDef {
        name: "compression.zstd.level",
        kind: ConfigType::Int,
        default: "3",
        check: Check::Between(-131_072.0, 22.0),
        synonyms: &[syn("compression.zstd.level", 1, Some("3"))],
        doc: "The compression level to use if compression.type is set to zstd.",
    },
    TopicConfigDef {
        name: "preallocate",
        kind: ConfigType::Boolean,
        default: "false",
        check: Check::None,
        synonyms: &[syn("log.preallocate", 1, Some("false"))],
        doc: "True if we should preallocate the file on disk when creating a new log segment.",
    },
    TopicConfigDef {
        name: "message.timestamp.type",
        kind: ConfigType::String,
        default: "CreateTime",
        check: Check::OneOf(&["CreateTime", "LogAppendTime"]),
        synonyms: &[syn("log.message.timestamp.type", 1, Some("CreateTime"))],
        doc: "Define whether the timestamp in the message is message create time or log append time.",
    },
    TopicConfigDef {
        name: "message.timestamp.before.max.ms",
        kind: ConfigType::Long,
        default: LONG_MAX,
        check: Check::AtLeast(0),
        synonyms: &[syn("log.message.timestamp.before.max.ms", 1, Some(LONG_MAX))],
        doc: "This configuration sets the allowable timestamp difference between the broker's timestamp and the message timestamp. The message timestamp can be earlier than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration.",
    },
    TopicConfigDef {
        name: "message.timestamp.after.max.ms",
        kind: ConfigType::Long,
        default: "3600000",
        check: Check::AtLeast(0),
        synonyms: &[syn("log.message.timestamp.after.max.ms", 1, Some("3600000"))],
        doc: "This configuration sets the allowable timestamp difference between the message timestamp and the broker's timestamp. The message timestamp can be later than or equal to the broker's timestamp, with the maximum allowable difference determined by the value set in this configuration.",
    },
    TopicConfigDef {
        name: "leader.replication.throttled.replicas",
        kind: ConfigType::List,
        default: "",
        check: Check::Replicas,
        synonyms: &[],
        doc: "A list of replicas for which log replication should be throttled on the leader side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
    },
    TopicConfigDef {
        name: "follower.replication.throttled.replicas",
        kind: ConfigType::List,
        default: "",
        check: Check::Replicas,
        synonyms: &[],
        doc: "A list of replicas for which log replication should be throttled on the follower side. The list should describe a set of replicas in the form [PartitionId]:[BrokerId],[PartitionId]:[BrokerId]:... or alternatively the wildcard '*' can be used to throttle all replicas for this topic.",
    },
    TopicConfigDef {
        name: "remote.storage.enable",
        kind: ConfigType::Boolean,
        default: "false",
        check: Check::None,
        synonyms: &[],
        doc: "To enable tiered storage for a topic, set this configuration as true.",
    },
    TopicConfigDef {
        name: "local.retention.ms",
        kind: ConfigType::Long,
        default: "-2",
        check: Check::AtLeast(-2),
        synonyms: &[syn("log.local.retention.ms", 1, Some("-2"))],
        doc: "The number of milliseconds to keep the local log segment before it gets deleted. Default value is -2, it represents `retention.ms` value is to be used.",
    },
    TopicConfigDef {
        name: "local.retention.bytes",
        kind: ConfigType::Long,
        default: "-2",
        check: Check::AtLeast(-2),
        synonyms: &[syn("log.local.retention.bytes", 1, Some("-2"))],
        doc: "The maximum size of local log segments that can grow for a partition before it deletes the old segments. Default value is -2, it represents `retention.bytes` value to be used.",
    },
    TopicConfigDef {
        name: "remote.log.copy.disable",
        kind: ConfigType::Boolean,
        default: "false",
        check: Check::None,
        synonyms: &[],
        doc: "Determines whether tiered data for a topic should become read only, and no more data uploading on a topic.",
    },
    TopicConfigDef {
        name: "remote.log.delete.on.disable",
        kind: ConfigType::Boolean,
        default: "false",
        check: Check::None,
        synonyms: &[],
        doc: "Determines whether tiered data for a topic should be deleted after tiered storage is disabled on a topic.",
    },
];

/// An INT config of at least `min` with no broker setting behind it:
/// what a group config is ([`crate::settings::group_configs`]).
pub(crate) const fn int_at_least(
    name: &'static str,
    default: &'static str,
    min: i64,
    doc: &'static str,
) -> TopicConfigDef {
    TopicConfigDef {
        name,
        kind: ConfigType::Int,
        default,
        check: Check::AtLeast(min),
        synonyms: &[],
        doc,
    }
}

/// `raw` parsed and checked as `def` says (Apache's `ConfigDef.parseValue`),
/// written as Apache writes it back.
pub(crate) fn parse_value(def: &TopicConfigDef, raw: &str) -> Result<String, InvalidConfig> {
    let value = parse(def, raw)?;
    check(def, &value)?;
    Ok(value.to_config_string())
}

/// The definition of topic config `name`.
pub fn definition(name: &str) -> Option<&'static TopicConfigDef> {
    TOPIC_CONFIGS.iter().find(|d| d.name == name)
}

/// A refused topic config: INVALID_CONFIG with Apache's message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct InvalidConfig(pub String);

/// A value as parsed by its type (Apache's `ConfigDef.parseType`).
#[derive(Debug, Clone, PartialEq)]
enum Parsed {
    Boolean(bool),
    String(String),
    Number(i64),
    Double(f64),
    List(Vec<String>),
}

/// Apache's `ConfigException(name, value, message)`.
fn invalid_value(value: impl std::fmt::Display, name: &str, why: &str) -> InvalidConfig {
    InvalidConfig(format!(
        "Invalid value {value} for configuration {name}: {why}"
    ))
}

fn parse(def: &TopicConfigDef, raw: &str) -> Result<Parsed, InvalidConfig> {
    let invalid = |why: String| invalid_value(raw, def.name, &why);
    let value = raw.trim();
    let not_a_number = || invalid(format!("Not a number of type {}", def.kind.name()));
    Ok(match def.kind {
        ConfigType::Boolean => match value.to_ascii_lowercase().as_str() {
            "true" => Parsed::Boolean(true),
            "false" => Parsed::Boolean(false),
            _ => return Err(invalid("Expected value to be either true or false".into())),
        },
        ConfigType::String | ConfigType::Password => Parsed::String(value.to_string()),
        ConfigType::Int => Parsed::Number(value.parse::<i32>().map_err(|_| not_a_number())? as i64),
        ConfigType::Long => Parsed::Number(value.parse::<i64>().map_err(|_| not_a_number())?),
        ConfigType::Double => Parsed::Double(value.parse::<f64>().map_err(|_| not_a_number())?),
        ConfigType::List if value.is_empty() => Parsed::List(Vec::new()),
        ConfigType::List => Parsed::List(value.split(',').map(|s| s.trim().to_string()).collect()),
    })
}

/// Java's `Double.toString` for the values a config takes.
fn java_double(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e7 {
        format!("{v:.1}")
    } else {
        v.to_string()
    }
}

impl Parsed {
    /// Apache's `ConfigDef.convertToString`.
    fn to_config_string(&self) -> String {
        match self {
            Parsed::Boolean(b) => b.to_string(),
            Parsed::String(s) => s.clone(),
            Parsed::Number(n) => n.to_string(),
            Parsed::Double(d) => java_double(*d),
            Parsed::List(items) => items.join(","),
        }
    }
}

fn check(def: &TopicConfigDef, value: &Parsed) -> Result<(), InvalidConfig> {
    let invalid = |why: String| invalid_value(value.to_config_string(), def.name, &why);
    let number = match value {
        Parsed::Number(n) => Some(*n as f64),
        Parsed::Double(d) => Some(*d),
        _ => None,
    };
    match (def.check, number) {
        (Check::AtLeast(min), Some(n)) if n < min as f64 => {
            Err(invalid(format!("Value must be at least {min}")))
        }
        (Check::Between(min, _), Some(n)) if n < min => Err(invalid(format!(
            "Value must be at least {}",
            java_number(min, def.kind)
        ))),
        (Check::Between(_, max), Some(n)) if n > max => Err(invalid(format!(
            "Value must be no more than {}",
            java_number(max, def.kind)
        ))),
        (Check::GzipLevel, Some(n)) if n != -1.0 && !(1.0..=9.0).contains(&n) => Err(invalid(
            "Value must be between 1 and 9 or equal to -1".into(),
        )),
        (Check::OneOf(valid), _) => match value {
            Parsed::String(s) if !valid.contains(&s.as_str()) => Err(invalid(format!(
                "String must be one of: {}",
                valid.join(", ")
            ))),
            _ => Ok(()),
        },
        (Check::ListOf(valid), _) => {
            let Parsed::List(items) = value else {
                return Ok(());
            };
            match items.iter().find(|i| !valid.contains(&i.as_str())) {
                Some(bad) => Err(invalid_value(
                    bad,
                    def.name,
                    &format!("String must be one of: {}", valid.join(", ")),
                )),
                None => Ok(()),
            }
        }
        (Check::Replicas, _) => {
            let Parsed::List(items) = value else {
                return Ok(());
            };
            let pair = |s: &str| {
                s.split_once(':').is_some_and(|(p, b)| {
                    !p.is_empty()
                        && !b.is_empty()
                        && p.bytes().all(|c| c.is_ascii_digit())
                        && b.bytes().all(|c| c.is_ascii_digit())
                })
            };
            let ok = (items.len() == 1 && items[0] == "*")
                || items.iter().all(|i| i.is_empty() || pair(i));
            if ok {
                Ok(())
            } else {
                Err(invalid_value(
                    format!("[{}]", items.join(", ")),
                    def.name,
                    &format!("{} must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...", def.name),
                ))
            }
        }
        _ => Ok(()),
    }
}

/// A bound as Java prints the Number it was given (an int range's bound
/// without a fraction, a double's with one).
fn java_number(v: f64, kind: ConfigType) -> String {
    match kind {
        ConfigType::Double if v.fract() == 0.0 => format!("{v}"),
        _ => format!("{}", v as i64),
    }
}

/// Apache's `LogConfig.validate` of a topic's overrides: every name known
/// (`Unknown topic config name: …`), then each value parsed and checked
/// in definition order (the first failure is reported), then the
/// compaction lags against each other.
pub fn validate(overrides: &BTreeMap<String, String>) -> Result<(), InvalidConfig> {
    if let Some(name) = overrides.keys().find(|n| definition(n).is_none()) {
        return Err(InvalidConfig(format!("Unknown topic config name: {name}")));
    }
    let mut numbers: BTreeMap<&str, i64> = BTreeMap::new();
    for def in TOPIC_CONFIGS {
        let Some(raw) = overrides.get(def.name) else {
            continue;
        };
        let value = parse(def, raw)?;
        check(def, &value)?;
        if let Parsed::Number(n) = value {
            numbers.insert(def.name, n);
        }
    }
    let min_lag = numbers.get("min.compaction.lag.ms").copied().unwrap_or(0);
    let max_lag = numbers
        .get("max.compaction.lag.ms")
        .copied()
        .unwrap_or(i64::MAX);
    if min_lag > max_lag {
        return Err(InvalidConfig(format!(
            "conflict topic config setting min.compaction.lag.ms ({min_lag}) > max.compaction.lag.ms ({max_lag})"
        )));
    }
    Ok(())
}

/// Overrides as Apache stores them (each value as its type prints it:
/// `1` for a ratio becomes `1.0`). Call after [`validate`].
pub fn normalized(overrides: &BTreeMap<String, String>) -> BTreeMap<String, String> {
    overrides
        .iter()
        .map(|(name, raw)| {
            let value = definition(name)
                .and_then(|def| parse(def, raw).ok())
                .map(|p| p.to_config_string())
                .unwrap_or_else(|| raw.clone());
            (name.clone(), value)
        })
        .collect()
}

/// A broker setting's value and where it came from, as DescribeConfigs
/// lists it among a topic config's synonyms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigSynonym {
    pub name: String,
    pub value: String,
    pub source: ConfigSource,
}

/// One topic config as DescribeConfigs describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DescribedConfig {
    pub name: &'static str,
    pub value: String,
    pub source: ConfigSource,
    pub kind: ConfigType,
    pub doc: &'static str,
    /// The topic's override first, then the broker settings it defaults
    /// to (those set, then those with a default).
    pub synonyms: Vec<ConfigSynonym>,
}

/// Apache's `createTopicConfigEntry` for every topic config: the value in
/// force (the override, else the first broker setting given, else the
/// first broker default, converted to the topic config's unit), its
/// source, and its synonyms (Apache's quirk kept: broker entries before
/// the first one named like the topic config's primary broker setting are
/// dropped, so `retention.ms` with only `log.retention.hours` set reports
/// DEFAULT_CONFIG and no synonyms).
pub fn describe(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerTopicDefaults,
) -> Vec<DescribedConfig> {
    let normalized = normalized(overrides);
    TOPIC_CONFIGS
        .iter()
        .map(|def| {
            let converted = |s: &Synonym, raw: &str| -> String {
                match (s.factor, raw.trim().parse::<i64>()) {
                    (1, _) | (_, Err(_)) => raw.trim().to_string(),
                    (f, Ok(n)) => n.saturating_mul(f).to_string(),
                }
            };
            // A layer with any of the synonyms wins over the layers below
            // (Apache's `overrideProps` drops a lower layer's synonyms).
            let given = broker.given().into_iter().find_map(|(layer, _)| {
                def.synonyms
                    .iter()
                    .find_map(|s| layer.get(s.name).map(|v| converted(s, v)))
            });
            let defaulted = def
                .synonyms
                .iter()
                .find_map(|s| broker.default_of(s.name).map(|v| converted(s, &v)));
            let names: Vec<&str> = def.synonyms.iter().map(|s| s.name).collect();
            let primary = def.synonyms.first().map_or("", |s| s.name);
            let broker_synonyms = synonym_chain(&names, primary, |source, name| {
                broker.value_in(source, name)
            });
            let mut synonyms = Vec::new();
            if let Some(v) = normalized.get(def.name) {
                synonyms.push(ConfigSynonym {
                    name: def.name.to_string(),
                    value: v.clone(),
                    source: ConfigSource::TopicConfig,
                });
            }
            synonyms.extend(broker_synonyms);
            let value = normalized
                .get(def.name)
                .cloned()
                .or(given)
                .or(defaulted)
                .unwrap_or_else(|| def.default.to_string());
            DescribedConfig {
                name: def.name,
                value,
                source: synonyms
                    .first()
                    .map_or(ConfigSource::DefaultConfig, |s| s.source),
                kind: def.kind,
                doc: def.doc,
                synonyms,
            }
        })
        .collect()
}

/// An IncrementalAlterConfigs operation (`AlterConfigOp.OpType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlterOp {
    Set,
    Delete,
    Append,
    Subtract,
}

impl AlterOp {
    pub fn from_code(code: i8) -> Option<AlterOp> {
        Some(match code {
            0 => AlterOp::Set,
            1 => AlterOp::Delete,
            2 => AlterOp::Append,
            3 => AlterOp::Subtract,
            _ => return None,
        })
    }

    fn name(self) -> &'static str {
        match self {
            AlterOp::Set => "SET",
            AlterOp::Delete => "DELETE",
            AlterOp::Append => "APPEND",
            AlterOp::Subtract => "SUBTRACT",
        }
    }
}

/// Apache's `ConfigurationControlManager.incrementalAlterConfigResource`
/// on a topic's overrides, then [`validate`] of the result: the new
/// overrides, normalized. APPEND and SUBTRACT work on a LIST config's
/// elements, starting from its default when the topic has no override.
pub fn apply_ops(
    current: &BTreeMap<String, String>,
    ops: &[(String, AlterOp, Option<String>)],
) -> Result<BTreeMap<String, String>, InvalidConfig> {
    let configs = apply_alter_ops(current, ops, |name| {
        definition(name)
            .filter(|d| d.kind == ConfigType::List)
            .map(|d| d.default)
    })?;
    validate(&configs)?;
    Ok(normalized(&configs))
}

/// `ops` applied to `current` in order, unchecked: SET and DELETE on any
/// name, APPEND and SUBTRACT on the elements of a LIST config, which
/// `list_default` names with its default (`None`: not a LIST, refused as
/// Apache refuses it).
pub(crate) fn apply_alter_ops(
    current: &BTreeMap<String, String>,
    ops: &[(String, AlterOp, Option<String>)],
    list_default: impl Fn(&str) -> Option<&'static str>,
) -> Result<BTreeMap<String, String>, InvalidConfig> {
    let mut configs = current.clone();
    for (name, op, value) in ops {
        match op {
            AlterOp::Set => {
                configs.insert(name.clone(), value.clone().unwrap_or_default());
            }
            AlterOp::Delete => {
                configs.remove(name);
            }
            AlterOp::Append | AlterOp::Subtract => {
                let Some(default) = list_default(name) else {
                    return Err(InvalidConfig(format!(
                        "Can't {} to key {name} because its type is not LIST.",
                        op.name()
                    )));
                };
                let old = configs.get(name).map_or(default, String::as_str);
                let mut parts: Vec<String> = old
                    .split(',')
                    .filter(|p| !p.is_empty())
                    .map(str::to_string)
                    .collect();
                for part in value.as_deref().unwrap_or_default().split(',') {
                    if *op == AlterOp::Append && !parts.iter().any(|p| p == part) {
                        parts.push(part.to_string());
                    } else if *op == AlterOp::Subtract {
                        parts.retain(|p| p != part);
                    }
                }
                configs.insert(name.clone(), parts.join(","));
            }
        }
    }
    Ok(configs)
}

/// What a partition log follows of its topic's configs in force.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LogSettings {
    pub segment_bytes: u64,
    pub segment_ms: i64,
    pub segment_jitter_ms: i64,
    pub index_interval_bytes: u64,
    pub max_message_bytes: usize,
    pub retention: RetentionPolicy,
    pub compaction: CompactionPolicy,
    pub records: RecordPolicy,
}

/// The configs in force for a topic with `overrides` (as DescribeConfigs
/// reports them) that its partition logs act on.
pub fn log_settings(
    overrides: &BTreeMap<String, String>,
    broker: &BrokerTopicDefaults,
) -> LogSettings {
    let described = describe(overrides, broker);
    let value = |name: &str| {
        described
            .iter()
            .find(|c| c.name == name)
            .map_or("", |c| c.value.as_str())
    };
    let number = |name: &str, fallback: i64| value(name).trim().parse().unwrap_or(fallback);
    let fallback = RetentionPolicy::default();
    let policy = value("cleanup.policy");
    let has_policy = |p: &str| policy.split(',').any(|x| x.trim().eq_ignore_ascii_case(p));
    let compaction = CompactionPolicy::default();
    let records = RecordPolicy::default();
    let level = |name: &str, fallback: i32| value(name).trim().parse().unwrap_or(fallback);
    let compression = match value("compression.type") {
        "uncompressed" => Some(Codec::None),
        "gzip" => Some(Codec::Gzip {
            level: level("compression.gzip.level", Codec::GZIP_DEFAULT_LEVEL),
        }),
        "snappy" => Some(Codec::Snappy),
        "lz4" => Some(Codec::Lz4 {
            level: level("compression.lz4.level", Codec::LZ4_DEFAULT_LEVEL),
        }),
        "zstd" => Some(Codec::Zstd {
            level: level("compression.zstd.level", Codec::ZSTD_DEFAULT_LEVEL),
        }),
        _ => None,
    };
    LogSettings {
        segment_bytes: number("segment.bytes", LogConfig::default().segment_bytes as i64).max(14)
            as u64,
        segment_ms: number("segment.ms", LogConfig::default().segment_ms).max(1),
        segment_jitter_ms: number("segment.jitter.ms", 0).max(0),
        index_interval_bytes: number(
            "index.interval.bytes",
            LogConfig::default().index_interval_bytes as i64,
        )
        .max(0) as u64,
        max_message_bytes: number(
            "max.message.bytes",
            LogConfig::default().max_message_bytes as i64,
        )
        .max(0) as usize,
        retention: RetentionPolicy {
            ms: number("retention.ms", fallback.ms),
            bytes: number("retention.bytes", fallback.bytes),
            delete: has_policy("delete"),
        },
        compaction: CompactionPolicy {
            compact: has_policy("compact"),
            delete_retention_ms: number("delete.retention.ms", compaction.delete_retention_ms),
            min_compaction_lag_ms: number(
                "min.compaction.lag.ms",
                compaction.min_compaction_lag_ms,
            ),
            max_compaction_lag_ms: number(
                "max.compaction.lag.ms",
                compaction.max_compaction_lag_ms,
            ),
            min_cleanable_dirty_ratio: value("min.cleanable.dirty.ratio")
                .trim()
                .parse()
                .unwrap_or(compaction.min_cleanable_dirty_ratio),
        },
        records: RecordPolicy {
            compact: has_policy("compact"),
            log_append_time: value("message.timestamp.type") == "LogAppendTime",
            timestamp_before_max_ms: number(
                "message.timestamp.before.max.ms",
                records.timestamp_before_max_ms,
            ),
            timestamp_after_max_ms: number(
                "message.timestamp.after.max.ms",
                records.timestamp_after_max_ms,
            ),
            compression,
        },
    }
}

#[cfg(test)]
mod tests;
