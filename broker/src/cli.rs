//! The `kaas-broker` command line: `local`, `serve`, `controller`, and how
//! a `serve` or `local` command line, its environment and its
//! `--config FILE` merge into one configuration ([`crate::settings`]).
//!
//! Over 800 lines: every flag of `serve`, `local` and `controller`, until one
//! declarative settings table derives them (issue #34, in progress).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cluster::assignment_file;
use crate::cluster::controller::{parse_brokers, ControllerConfig};
use crate::group::assignor::BuiltinAssignor;
use crate::group::consumer::heartbeat::MigrationPolicy;
use crate::net::listener::{protocol_name, ListenerConfig};
use crate::net::tls::{ClientAuth, TlsSettings};
use crate::settings::security::{SecuritySettings, ADMIN};
use crate::settings::{self, HostPort, Settings};
use crate::storage::group_log::GroupLogSync;
use crate::storage::topic_config;
use crate::BrokerConfig;

#[derive(Parser)]
#[command(
    name = "kaas-broker",
    version,
    about = "Kafka-protocol brokers on a shared volume"
)]
pub struct Cli {
    /// Log format.
    #[arg(long, value_enum, default_value_t = LogFormat::Text, global = true, env = "KAAS_LOG_FORMAT")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Clone, Copy, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand)]
pub enum Command {
    /// Run N brokers and the controller in one process on loopback.
    Local {
        /// Number of brokers.
        #[arg(long, default_value_t = 3)]
        brokers: usize,
        /// The shared folder (log.dirs) [default: ./data].
        #[arg(long, env = "KAAS_DATA")]
        data: Option<PathBuf>,
        /// Address to listen on [default: 127.0.0.1, or the host of
        /// `listeners` in --config].
        #[arg(long)]
        host: Option<String>,
        /// Host clients reach the brokers at [default: --host]; for a
        /// container listening on 0.0.0.0 with its ports published.
        #[arg(long, env = "KAAS_ADVERTISED_HOST")]
        advertised_host: Option<String>,
        /// Broker N listens on base-port + N [default: 9092, or the port
        /// of `listeners` in --config].
        #[arg(long)]
        base_port: Option<u16>,
        /// SASL_PLAINTEXT on every broker (PLAIN, SCRAM-SHA-256,
        /// SCRAM-SHA-512), the ACL authorizer on, `User:admin` the super
        /// user with --admin-password.
        #[arg(long, requires = "admin_password")]
        sasl: bool,
        /// The password of `User:admin` (for --sasl).
        #[arg(long, env = "KAAS_ADMIN_PASSWORD", hide_env_values = true)]
        admin_password: Option<String>,
        #[command(flatten)]
        tls: TlsFlags,
        #[command(flatten)]
        tuning: Tuning,
    },
    /// Run one broker.
    Serve {
        /// Broker id, node.id (the StatefulSet ordinal on Kubernetes).
        #[arg(long, env = "KAAS_ID")]
        id: Option<i32>,
        /// Take the broker id from the pod name in POD_NAME
        /// (`<statefulset>-<ordinal>`), so a pod needs no shell to compute it.
        #[arg(long, conflicts_with = "id")]
        id_from_pod_name: bool,
        /// The shared folder (log.dirs).
        #[arg(long, env = "KAAS_DATA")]
        data: Option<PathBuf>,
        /// Address to listen on (the one PLAINTEXT `listeners` entry)
        /// [default: 127.0.0.1:9092].
        #[arg(long, env = "KAAS_LISTEN")]
        listen: Option<SocketAddr>,
        /// HOST:PORT clients reach this broker at (advertised.listeners)
        /// [default: --listen].
        #[arg(long, env = "KAAS_ADVERTISE")]
        advertise: Option<HostPort>,
        /// Follow the assignment in this Kubernetes ConfigMap (watched
        /// through the API, in-cluster config or KUBECONFIG) instead of
        /// `<data>/__cluster/assignment.json`.
        #[arg(long, env = "KAAS_ASSIGNMENT_CONFIGMAP")]
        assignment_configmap: Option<String>,
        /// Namespace of --assignment-configmap (default: the client
        /// config's, i.e. the pod's own namespace in-cluster).
        #[arg(long, env = "KAAS_ASSIGNMENT_NAMESPACE")]
        assignment_namespace: Option<String>,
        /// SASL on the listener (SASL_PLAINTEXT, or SASL_SSL with
        /// --tls-cert): PLAIN, SCRAM-SHA-256, SCRAM-SHA-512; with
        /// --admin-password the ACL authorizer is on and `User:admin` its
        /// super user, as `local --sasl`.
        #[arg(long)]
        sasl: bool,
        /// The password of `User:admin`: its SCRAM credentials are written
        /// to the volume at start, and brokers log in to each other as it.
        #[arg(long, env = "KAAS_ADMIN_PASSWORD", hide_env_values = true)]
        admin_password: Option<String>,
        #[command(flatten)]
        tls: TlsFlags,
        #[command(flatten)]
        tuning: Tuning,
    },
    /// Probe brokers and publish the assignment file.
    Controller {
        /// The shared folder.
        #[arg(long)]
        data: PathBuf,
        /// Every broker as ID=HOST:PORT, comma separated; a broker with
        /// several listeners as ID=NAME://HOST:PORT,NAME2://HOST:PORT,…
        /// (its `advertised.listeners`), the inter-broker one first.
        #[arg(long, value_delimiter = ',', required = true)]
        brokers: Vec<String>,
        /// Time between probe rounds.
        #[arg(long, default_value_t = 500)]
        probe_interval_ms: u64,
        /// Failed probes in a row before a broker is declared dead.
        #[arg(long, default_value_t = 3)]
        failures_before_dead: u32,
        /// Probe over TLS, trusting these CAs (PEM).
        #[arg(long)]
        tls_ca: Option<PathBuf>,
        /// A client certificate (PEM), for brokers that require one.
        #[arg(long, requires_all = ["tls_ca", "tls_key"])]
        tls_cert: Option<PathBuf>,
        /// The key of --tls-cert (PEM).
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// Log in to SASL listeners as `User:admin` with this password
        /// (SCRAM-SHA-512).
        #[arg(long, env = "KAAS_ADMIN_PASSWORD", hide_env_values = true)]
        admin_password: Option<String>,
    },
}

/// Apache's broker settings that give topic configs their defaults
/// ([`topic_config::broker_settings`]: `--log-cleanup-policy`,
/// `--compression-type`, `--log-message-timestamp-type`, …), one flag and
/// one `KAAS_` variable each, named after the setting, made from the topic
/// configs' table so none is missed.
#[derive(Clone, Debug, Default)]
pub struct TopicDefaultFlags(pub std::collections::BTreeMap<String, String>);

/// `log.cleanup.policy` → `log-cleanup-policy`.
fn flag_name(key: &str) -> String {
    key.replace('.', "-")
}

impl clap::FromArgMatches for TopicDefaultFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = TopicDefaultFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for key in topic_config::broker_settings() {
            if let Some(value) = matches.get_one::<String>(key) {
                self.0.insert(key.to_string(), value.clone());
            }
        }
        Ok(())
    }
}

impl Args for TopicDefaultFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        topic_config::broker_settings().fold(cmd, |cmd, key| {
            let env = format!("KAAS_{}", key.replace('.', "_").to_uppercase());
            cmd.arg(
                clap::Arg::new(key)
                    .long(flag_name(key))
                    .env(env)
                    .value_name("VALUE")
                    .allow_negative_numbers(true)
                    .help(format!(
                        "{key}: what topics without their own {} take [default: Apache's]",
                        topic_config::topic_config_of(key).unwrap_or(key)
                    )),
            )
        })
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// TLS on every broker's listener: SSL, or SASL_SSL with --sasl.
#[derive(Args, Clone, Default)]
pub struct TlsFlags {
    /// The brokers' certificate chain, leaf first (PEM); re-read when it
    /// changes. With --tls-key, every broker serves TLS.
    #[arg(long, requires = "tls_key", env = "KAAS_TLS_CERT")]
    pub tls_cert: Option<PathBuf>,
    /// The private key of --tls-cert (PEM, unencrypted).
    #[arg(long, requires = "tls_cert", env = "KAAS_TLS_KEY")]
    pub tls_key: Option<PathBuf>,
    /// Trust store (PEM): the CAs client certificates must chain to, and
    /// what brokers trust when they call each other (ssl.truststore.location)
    /// [default: --tls-cert].
    #[arg(long, requires = "tls_cert")]
    pub tls_ca: Option<PathBuf>,
    /// ssl.client.auth: none, requested or required (needs --tls-ca)
    /// [default: none].
    #[arg(long, requires = "tls_cert")]
    pub ssl_client_auth: Option<ClientAuth>,
    /// ssl.principal.mapping.rules: a client certificate's subject to a
    /// user name [default: DEFAULT].
    #[arg(long, requires = "tls_cert")]
    pub ssl_principal_mapping_rules: Option<String>,
}

impl TlsFlags {
    /// The security settings these flags give (TLS on with --tls-cert).
    pub fn security(&self) -> SecuritySettings {
        SecuritySettings {
            ssl: self.tls_cert.is_some().then_some(true),
            tls_cert: self.tls_cert.clone(),
            tls_key: self.tls_key.clone(),
            truststore: self.tls_ca.clone(),
            client_auth: self.ssl_client_auth,
            principal_mapping_rules: self.ssl_principal_mapping_rules.clone(),
            ..SecuritySettings::default()
        }
    }

    /// The listener's TLS settings, when --tls-cert is given.
    pub fn settings(&self) -> anyhow::Result<Option<TlsSettings>> {
        self.security().tls()
    }
}

/// The settings `serve` and `local` share. Each is unset unless given:
/// unset ones come from --config, then from the defaults (shown in
/// brackets, Apache's where kaas has the setting).
#[derive(Args, Clone, Default)]
pub struct Tuning {
    /// A `server.properties` file: Apache Kafka's keys where kaas has the
    /// setting, `kaas.*` for kaas's own (docs/operations.md). Flags and
    /// environment override it.
    #[arg(long, env = "KAAS_CONFIG")]
    pub config: Option<PathBuf>,
    /// A `server.properties` line over --config's, as Apache's
    /// `kafka-server-start.sh --override` (repeatable): for the keys no
    /// flag has, such as several `listeners`.
    #[arg(long = "override", value_name = "KEY=VALUE")]
    pub overrides: Vec<String>,
    /// Largest request accepted, in bytes (socket.request.max.bytes)
    /// [default: 104857600].
    #[arg(long, env = "KAAS_MAX_FRAME_BYTES")]
    pub max_frame_bytes: Option<usize>,
    /// Most client connections at once (max.connections); beyond it the
    /// listener stops accepting until one closes [default: unlimited].
    #[arg(long, env = "KAAS_MAX_CONNECTIONS")]
    pub max_connections: Option<usize>,
    /// Most connections from one address (max.connections.per.ip); a
    /// connection beyond it is closed and logged [default: unlimited].
    #[arg(long, env = "KAAS_MAX_CONNECTIONS_PER_IP")]
    pub max_connections_per_ip: Option<usize>,
    /// Do not create topics on first use (auto.create.topics.enable=false).
    #[arg(long)]
    pub no_auto_create_topics: bool,
    /// Partitions of auto-created topics (num.partitions) [default: 1].
    #[arg(long, env = "KAAS_DEFAULT_PARTITIONS")]
    pub default_partitions: Option<i32>,
    /// Segment size in bytes (log.segment.bytes) [default: 268435456].
    #[arg(long, env = "KAAS_SEGMENT_BYTES")]
    pub segment_bytes: Option<u64>,
    /// log.retention.ms: how long topics keep records, unless a topic's
    /// retention.ms says otherwise (-1: forever) [default: log.retention.hours]
    #[arg(long, env = "KAAS_LOG_RETENTION_MS", allow_negative_numbers = true)]
    pub log_retention_ms: Option<i64>,
    /// log.retention.minutes (below log.retention.ms)
    #[arg(
        long,
        env = "KAAS_LOG_RETENTION_MINUTES",
        allow_negative_numbers = true
    )]
    pub log_retention_minutes: Option<i64>,
    /// log.retention.hours (below log.retention.minutes) [default: 168]
    #[arg(long, env = "KAAS_LOG_RETENTION_HOURS", allow_negative_numbers = true)]
    pub log_retention_hours: Option<i64>,
    /// log.retention.bytes: most bytes a partition keeps, unless a topic's
    /// retention.bytes says otherwise [default: -1, no limit]
    #[arg(long, env = "KAAS_LOG_RETENTION_BYTES", allow_negative_numbers = true)]
    pub log_retention_bytes: Option<i64>,
    /// log.retention.check.interval.ms: how often partition leaders apply
    /// retention [default: 300000]
    #[arg(long, env = "KAAS_LOG_RETENTION_CHECK_INTERVAL_MS")]
    pub log_retention_check_interval_ms: Option<u64>,
    /// log.cleaner.enable: compact topics with cleanup.policy=compact
    /// [default: true]
    #[arg(long, env = "KAAS_LOG_CLEANER_ENABLE")]
    pub log_cleaner_enable: Option<bool>,
    /// log.cleaner.backoff.ms: the cleaner's wait when no log needs
    /// cleaning [default: 15000]
    #[arg(long, env = "KAAS_LOG_CLEANER_BACKOFF_MS")]
    pub log_cleaner_backoff_ms: Option<u64>,
    /// log.cleaner.dedupe.buffer.size: bytes of the cleaner's key map (24
    /// per key) [default: 134217728]
    #[arg(long, env = "KAAS_LOG_CLEANER_DEDUPE_BUFFER_SIZE")]
    pub log_cleaner_dedupe_buffer_size: Option<u64>,
    /// log.cleaner.io.max.bytes.per.second: the cleaner's reads and
    /// writes at most [default: unlimited]
    #[arg(long, env = "KAAS_LOG_CLEANER_IO_MAX_BYTES_PER_SECOND")]
    pub log_cleaner_io_max_bytes_per_second: Option<f64>,
    /// log.cleaner.threads: compacted logs cleaned at once, each on its own
    /// thread; 0 cleans none [default: 1]
    #[arg(long, env = "KAAS_LOG_CLEANER_THREADS")]
    pub log_cleaner_threads: Option<usize>,
    #[command(flatten)]
    pub topic_defaults: TopicDefaultFlags,
    /// kaas.lag.metrics.max.partitions: a coordinator's per-partition lag
    /// series on /metrics at most (the per-group, per-topic sums are always
    /// there) [default: 10000]
    #[arg(long, env = "KAAS_LAG_METRICS_MAX_PARTITIONS")]
    pub lag_metrics_max_partitions: Option<usize>,
    /// group.initial.rebalance.delay.ms [default: 3000]
    #[arg(long, env = "KAAS_GROUP_INITIAL_REBALANCE_DELAY_MS")]
    pub group_initial_rebalance_delay_ms: Option<u64>,
    /// group.min.session.timeout.ms [default: 6000]
    #[arg(long, env = "KAAS_GROUP_MIN_SESSION_TIMEOUT_MS")]
    pub group_min_session_timeout_ms: Option<i32>,
    /// group.max.session.timeout.ms [default: 1800000]
    #[arg(long, env = "KAAS_GROUP_MAX_SESSION_TIMEOUT_MS")]
    pub group_max_session_timeout_ms: Option<i32>,
    /// group.max.size: members per group [default: 2147483647].
    #[arg(long, env = "KAAS_GROUP_MAX_SIZE")]
    pub group_max_size: Option<usize>,
    /// group.consumer.session.timeout.ms: a KIP-848 member not heard from
    /// this long is fenced [default: 45000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_SESSION_TIMEOUT_MS")]
    pub group_consumer_session_timeout_ms: Option<i32>,
    /// group.consumer.min.session.timeout.ms [default: 45000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MIN_SESSION_TIMEOUT_MS")]
    pub group_consumer_min_session_timeout_ms: Option<i32>,
    /// group.consumer.max.session.timeout.ms [default: 60000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MAX_SESSION_TIMEOUT_MS")]
    pub group_consumer_max_session_timeout_ms: Option<i32>,
    /// group.consumer.heartbeat.interval.ms: how often KIP-848 members are
    /// told to heartbeat [default: 5000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_HEARTBEAT_INTERVAL_MS")]
    pub group_consumer_heartbeat_interval_ms: Option<i32>,
    /// group.consumer.min.heartbeat.interval.ms [default: 5000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MIN_HEARTBEAT_INTERVAL_MS")]
    pub group_consumer_min_heartbeat_interval_ms: Option<i32>,
    /// group.consumer.max.heartbeat.interval.ms [default: 15000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MAX_HEARTBEAT_INTERVAL_MS")]
    pub group_consumer_max_heartbeat_interval_ms: Option<i32>,
    /// group.consumer.max.size: members per KIP-848 group [default: 2147483647].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MAX_SIZE")]
    pub group_consumer_max_size: Option<usize>,
    /// group.consumer.assignors: the server-side assignors, comma-separated,
    /// the default first (uniform, range) [default: uniform,range].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_ASSIGNORS", value_delimiter = ',', value_parser = <BuiltinAssignor as std::str::FromStr>::from_str)]
    pub group_consumer_assignors: Option<Vec<BuiltinAssignor>>,
    /// group.consumer.regex.refresh.interval.ms: regular-expression
    /// subscriptions are matched against the topics again at least this
    /// often (and whenever a topic is created or deleted), at least 10000
    /// [default: 600000].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_REGEX_REFRESH_INTERVAL_MS", value_parser = clap::value_parser!(u64).range(10_000..))]
    pub group_consumer_regex_refresh_interval_ms: Option<u64>,
    /// group.consumer.migration.policy: which online conversions between
    /// classic and consumer groups happen: disabled, upgrade, downgrade or
    /// bidirectional [default: bidirectional].
    #[arg(long, env = "KAAS_GROUP_CONSUMER_MIGRATION_POLICY")]
    pub group_consumer_migration_policy: Option<MigrationPolicy>,
    /// offsets.retention.minutes [default: 10080]
    #[arg(long, env = "KAAS_OFFSETS_RETENTION_MINUTES")]
    pub offsets_retention_minutes: Option<u64>,
    /// offsets.retention.check.interval.ms: how often expired offsets are
    /// looked for [default: 600000]
    #[arg(long, env = "KAAS_OFFSETS_RETENTION_CHECK_INTERVAL_MS")]
    pub offsets_retention_check_interval_ms: Option<u64>,
    /// Empty groups idle this long are unloaded from memory (they reload
    /// from their log on the next request; kaas.group.idle.unload.ms)
    /// [default: 300000].
    #[arg(long, env = "KAAS_GROUP_IDLE_UNLOAD_MS")]
    pub group_idle_unload_ms: Option<u64>,
    /// Most groups held in memory at once (kaas.max.loaded.groups)
    /// [default: 200000].
    #[arg(long, env = "KAAS_MAX_LOADED_GROUPS")]
    pub max_loaded_groups: Option<usize>,
    /// How committed offsets are made durable (kaas.group.log.sync):
    /// `journal` (the broker's commit journal: one write and one fdatasync
    /// of one file per round, whatever the groups; the logs follow by
    /// syncfs), `volume` (one syncfs of the data volume per round) or
    /// `file` (one fdatasync per group log; for file systems whose syncfs
    /// does not flush) [default: journal].
    #[arg(long, value_enum, env = "KAAS_GROUP_LOG_SYNC")]
    pub group_log_sync: Option<SyncMode>,
    /// After SIGTERM, keep serving this long before closing connections
    /// (kaas.shutdown.drain.ms; `serve` only) [default: 0].
    #[arg(long, env = "KAAS_SHUTDOWN_DRAIN_MS")]
    pub shutdown_drain_ms: Option<u64>,
    /// How often the broker writes, syncs and reads back its file on the
    /// data volume (kaas.volume.check.interval.ms) [default: 250].
    #[arg(long, env = "KAAS_VOLUME_CHECK_INTERVAL_MS")]
    pub volume_check_interval_ms: Option<u64>,
    /// The volume counts as stalled once no check succeeded for this long:
    /// the broker is not ready, refuses produce and fails the controller's
    /// probe (kaas.volume.check.timeout.ms) [default: 1500].
    #[arg(long, env = "KAAS_VOLUME_CHECK_TIMEOUT_MS")]
    pub volume_check_timeout_ms: Option<u64>,
    /// At start, check the data volume against kaas's contract
    /// (docs/design/volume.md): `enforce` refuses to serve on a volume that
    /// fails it, `warn` logs and serves, `off` skips it
    /// (kaas.volume.self.check) [default: enforce].
    #[arg(long, env = "KAAS_VOLUME_SELF_CHECK")]
    pub volume_self_check: Option<crate::storage::volume_check::SelfCheck>,
    /// A broker whose assignment source (the controller's file, the
    /// ConfigMap) has not confirmed its assignment for this long stops
    /// acknowledging and lets go of what it holds
    /// (kaas.assignment.confirm.timeout.ms) [default: 15000].
    #[arg(long, env = "KAAS_ASSIGNMENT_CONFIRM_TIMEOUT_MS")]
    pub assignment_confirm_timeout_ms: Option<u64>,
    /// transaction.max.timeout.ms [default: 900000]
    #[arg(long, env = "KAAS_TRANSACTION_MAX_TIMEOUT_MS")]
    pub transaction_max_timeout_ms: Option<i32>,
    /// transactional.id.expiration.ms [default: 604800000]
    #[arg(long, env = "KAAS_TRANSACTIONAL_ID_EXPIRATION_MS")]
    pub transactional_id_expiration_ms: Option<i64>,
    /// transaction.abort.timed.out.transaction.cleanup.interval.ms [default: 10000]
    #[arg(
        long,
        env = "KAAS_TRANSACTION_ABORT_TIMED_OUT_TRANSACTION_CLEANUP_INTERVAL_MS"
    )]
    pub transaction_abort_timed_out_transaction_cleanup_interval_ms: Option<u64>,
    /// transaction.remove.expired.transaction.cleanup.interval.ms [default: 3600000]
    #[arg(
        long,
        env = "KAAS_TRANSACTION_REMOVE_EXPIRED_TRANSACTION_CLEANUP_INTERVAL_MS"
    )]
    pub transaction_remove_expired_transaction_cleanup_interval_ms: Option<u64>,
    /// producer.id.expiration.ms [default: 86400000]
    #[arg(long, env = "KAAS_PRODUCER_ID_EXPIRATION_MS")]
    pub producer_id_expiration_ms: Option<i64>,
    /// producer.id.expiration.check.interval.ms [default: 600000]
    #[arg(long, env = "KAAS_PRODUCER_ID_EXPIRATION_CHECK_INTERVAL_MS")]
    pub producer_id_expiration_check_interval_ms: Option<u64>,
    /// Serve /healthz, /readyz and /metrics on this address
    /// (kaas.http.listen; with `local`, broker N uses this port + N).
    #[arg(long, env = "KAAS_HTTP")]
    pub http: Option<SocketAddr>,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum SyncMode {
    Journal,
    Volume,
    File,
}

impl Tuning {
    /// The settings the flags (and environment) give.
    fn settings(&self) -> Settings {
        Settings {
            http: self.http,
            max_frame_bytes: self.max_frame_bytes,
            max_connections: self.max_connections,
            max_connections_per_ip: self.max_connections_per_ip,
            auto_create_topics: self.no_auto_create_topics.then_some(false),
            default_partitions: self.default_partitions,
            segment_bytes: self.segment_bytes,
            log_retention_ms: self.log_retention_ms,
            log_retention_minutes: self.log_retention_minutes,
            log_retention_hours: self.log_retention_hours,
            log_retention_bytes: self.log_retention_bytes,
            log_retention_check_interval_ms: self.log_retention_check_interval_ms,
            log_cleaner_enable: self.log_cleaner_enable,
            log_cleaner_backoff_ms: self.log_cleaner_backoff_ms,
            log_cleaner_dedupe_buffer_size: self.log_cleaner_dedupe_buffer_size,
            log_cleaner_io_max_bytes_per_second: self.log_cleaner_io_max_bytes_per_second,
            log_cleaner_threads: self.log_cleaner_threads,
            topic_defaults: self.topic_defaults.0.clone(),
            lag_metrics_max_partitions: self.lag_metrics_max_partitions,
            group_initial_rebalance_delay_ms: self.group_initial_rebalance_delay_ms,
            group_min_session_timeout_ms: self.group_min_session_timeout_ms,
            group_max_session_timeout_ms: self.group_max_session_timeout_ms,
            group_max_size: self.group_max_size,
            group_consumer_session_timeout_ms: self.group_consumer_session_timeout_ms,
            group_consumer_min_session_timeout_ms: self.group_consumer_min_session_timeout_ms,
            group_consumer_max_session_timeout_ms: self.group_consumer_max_session_timeout_ms,
            group_consumer_heartbeat_interval_ms: self.group_consumer_heartbeat_interval_ms,
            group_consumer_min_heartbeat_interval_ms: self.group_consumer_min_heartbeat_interval_ms,
            group_consumer_max_heartbeat_interval_ms: self.group_consumer_max_heartbeat_interval_ms,
            group_consumer_max_size: self.group_consumer_max_size,
            group_consumer_assignors: self.group_consumer_assignors.clone(),
            group_consumer_regex_refresh_interval_ms: self.group_consumer_regex_refresh_interval_ms,
            group_consumer_migration_policy: self.group_consumer_migration_policy,
            offsets_retention_minutes: self.offsets_retention_minutes,
            offsets_retention_check_interval_ms: self.offsets_retention_check_interval_ms,
            group_idle_unload_ms: self.group_idle_unload_ms,
            max_loaded_groups: self.max_loaded_groups,
            shutdown_drain_ms: self.shutdown_drain_ms,
            volume_check_interval_ms: self.volume_check_interval_ms,
            volume_check_timeout_ms: self.volume_check_timeout_ms,
            volume_self_check: self.volume_self_check,
            assignment_confirm_timeout_ms: self.assignment_confirm_timeout_ms,
            transaction_max_timeout_ms: self.transaction_max_timeout_ms,
            transactional_id_expiration_ms: self.transactional_id_expiration_ms,
            transaction_abort_timed_out_transaction_cleanup_interval_ms: self
                .transaction_abort_timed_out_transaction_cleanup_interval_ms,
            transaction_remove_expired_transaction_cleanup_interval_ms: self
                .transaction_remove_expired_transaction_cleanup_interval_ms,
            producer_id_expiration_ms: self.producer_id_expiration_ms,
            producer_id_expiration_check_interval_ms: self.producer_id_expiration_check_interval_ms,
            group_log_sync: self.group_log_sync.map(|m| match m {
                SyncMode::Journal => GroupLogSync::Journal,
                SyncMode::Volume => GroupLogSync::Volume,
                SyncMode::File => GroupLogSync::PerFile,
            }),
            ..Settings::default()
        }
    }

    /// The flags' settings over those of --config, if given; with the
    /// file's warnings.
    pub fn merged(&self, flags: Settings) -> anyhow::Result<(Settings, Vec<String>)> {
        let flags = flags.or(self.settings());
        let (merged, warnings) = if self.config.is_none() && self.overrides.is_empty() {
            (flags, Vec::new())
        } else {
            let file = read_config(self.config.as_deref(), &self.overrides)?;
            (flags.or(file.settings), file.warnings)
        };
        merged.check()?;
        Ok((merged, warnings))
    }
}

/// The file's settings with the overrides' lines after its own (a later
/// line wins).
fn read_config(path: Option<&Path>, overrides: &[String]) -> anyhow::Result<settings::FromFile> {
    let mut text = match path {
        Some(path) => std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the config file {}", path.display()))?,
        None => String::new(),
    };
    for line in overrides {
        anyhow::ensure!(line.contains('='), "--override {line}: not KEY=VALUE");
        text.push('\n');
        text.push_str(line);
    }
    let source = match path {
        Some(path) if overrides.is_empty() => path.display().to_string(),
        Some(path) => format!("{} and the --override lines", path.display()),
        None => "the --override lines".to_string(),
    };
    Settings::from_properties(&text).with_context(|| format!("in {source}"))
}

/// A `serve` command resolved: what the broker runs with.
#[derive(Debug)]
pub struct Serve {
    pub config: BrokerConfig,
    /// Where to listen for the inter-broker listener, `config.listeners[0]`.
    pub listen: SocketAddr,
    /// Where to listen for the others, in order.
    pub more_listen: Vec<SocketAddr>,
    pub http: Option<SocketAddr>,
    pub assignment_configmap: Option<String>,
    pub assignment_namespace: Option<String>,
    /// Keys of --config that were ignored, one message each.
    pub warnings: Vec<String>,
}

impl Serve {
    /// The effective configuration, by `server.properties` key.
    pub fn effective(&self) -> Vec<(&'static str, String)> {
        let listen: Vec<SocketAddr> = std::iter::once(self.listen)
            .chain(self.more_listen.iter().copied())
            .collect();
        settings::effective(&self.config, &listen, self.http)
    }
}

/// A `local` command resolved.
#[derive(Debug)]
pub struct Local {
    pub brokers: usize,
    pub data: PathBuf,
    pub host: String,
    pub advertised_host: Option<String>,
    pub base_port: u16,
    /// The tuning every broker gets (id, folder and addresses aside).
    pub settings: Settings,
    pub warnings: Vec<String>,
    /// `--sasl`: the admin's password.
    pub sasl_admin_password: Option<String>,
    /// `--tls-cert` and the rest: TLS on every broker.
    pub tls: Option<TlsSettings>,
}

const DEFAULT_LISTEN: &str = "127.0.0.1:9092";

/// A command with its flags, environment and config file merged.
#[derive(Debug)]
// Made once per process: the size of its variants does not matter.
#[allow(clippy::large_enum_variant)]
pub enum Resolved {
    Local(Local),
    Serve(Serve),
    Controller(ControllerConfig),
}

impl Command {
    pub fn resolve(&self) -> anyhow::Result<Resolved> {
        match self {
            Command::Local {
                brokers,
                data,
                host,
                advertised_host,
                base_port,
                sasl,
                admin_password,
                tls,
                tuning,
            } => {
                let mut l = resolve_local(*brokers, data, host, *base_port, tuning)?;
                l.advertised_host = advertised_host.clone();
                l.sasl_admin_password = admin_password.clone().filter(|_| *sasl);
                l.tls = tls.settings()?;
                Ok(Resolved::Local(l))
            }
            Command::Serve {
                id,
                id_from_pod_name,
                data,
                listen,
                advertise,
                assignment_configmap,
                assignment_namespace,
                sasl,
                admin_password,
                tls,
                tuning,
            } => {
                let id = match id_from_pod_name {
                    true => Some(id_of_pod(std::env::var("POD_NAME").ok().as_deref())?),
                    false => *id,
                };
                let flags = Settings {
                    id,
                    data: data.clone(),
                    listen: *listen,
                    advertise: advertise.clone(),
                    assignment_configmap: assignment_configmap.clone(),
                    assignment_namespace: assignment_namespace.clone(),
                    security: SecuritySettings {
                        sasl: sasl.then_some(true),
                        admin_password: admin_password.clone(),
                        ..tls.security()
                    },
                    ..Settings::default()
                };
                resolve_serve(flags, tuning).map(Resolved::Serve)
            }
            Command::Controller {
                data,
                brokers,
                probe_interval_ms,
                failures_before_dead,
                tls_ca,
                tls_cert,
                tls_key,
                admin_password,
            } => Ok(Resolved::Controller(ControllerConfig {
                security: kaas_client::Security {
                    tls: match tls_ca {
                        Some(ca) => {
                            let identity = tls_cert.as_deref().zip(tls_key.as_deref());
                            Some(kaas_client::ClientTls::new(ca, identity)?)
                        }
                        None => None,
                    },
                    sasl: admin_password
                        .as_ref()
                        .map(|p| kaas_client::SaslCredentials {
                            mechanism: "SCRAM-SHA-512".into(),
                            user: ADMIN.into(),
                            password: p.clone(),
                        }),
                },
                assignment_path: assignment_file::assignment_path(data),
                brokers: parse_brokers(brokers).map_err(|e| anyhow::anyhow!("--brokers: {e}"))?,
                probe_interval: Duration::from_millis(*probe_interval_ms),
                failures_before_dead: *failures_before_dead,
            })),
        }
    }
}

/// The broker id `--id-from-pod-name` takes from `pod_name` (POD_NAME).
fn id_of_pod(pod_name: Option<&str>) -> anyhow::Result<i32> {
    let name = pod_name.context("--id-from-pod-name: POD_NAME is not set")?;
    kaas_shared::pod_ordinal(name).with_context(|| {
        format!("--id-from-pod-name: POD_NAME '{name}' does not end in -<ordinal>")
    })
}

/// `listen` is bound by the caller; `advertise` defaults to it.
fn resolve_serve(flags: Settings, tuning: &Tuning) -> anyhow::Result<Serve> {
    let (s, warnings) = tuning.merged(flags)?;
    let id =
        s.id.context("no broker id: give --id, KAAS_ID or node.id in --config")?;
    let data = s
        .data
        .clone()
        .context("no data folder: give --data, KAAS_DATA or log.dirs in --config")?;
    anyhow::ensure!(
        s.assignment_namespace.is_none() || s.assignment_configmap.is_some(),
        "an assignment namespace needs an assignment ConfigMap"
    );
    let listen = s
        .listen
        .unwrap_or_else(|| DEFAULT_LISTEN.parse().expect("valid"));
    let advertise = s.advertise.clone().unwrap_or(HostPort {
        host: listen.ip().to_string(),
        port: listen.port(),
    });
    let mut config = BrokerConfig::new(id, data, &advertise.host, advertise.port);
    config.inter_broker_listener().name = s.listener_name.clone().unwrap_or_else(|| {
        let protocol = (s.security.sasl == Some(true), s.security.ssl == Some(true));
        protocol_name(protocol.0, protocol.1).to_string()
    });
    let mut more_listen = Vec::new();
    let mut more_protocols = Vec::new();
    for l in s.more_listeners.iter().flatten() {
        let advertise = l.advertise.clone().unwrap_or(HostPort {
            host: l.listen.ip().to_string(),
            port: l.listen.port(),
        });
        config.listeners.push(ListenerConfig {
            name: l.name.clone(),
            advertised_host: advertise.host,
            advertised_port: advertise.port,
            sasl: None,
            tls: None,
        });
        more_listen.push(l.listen);
        more_protocols.push((l.sasl, l.ssl));
    }
    s.tune(&mut config);
    s.security.apply(&mut config, &more_protocols)?;
    Ok(Serve {
        config,
        listen,
        more_listen,
        http: s.http,
        assignment_configmap: s.assignment_configmap,
        assignment_namespace: s.assignment_namespace,
        warnings,
    })
}

fn resolve_local(
    brokers: usize,
    data: &Option<PathBuf>,
    host: &Option<String>,
    base_port: Option<u16>,
    tuning: &Tuning,
) -> anyhow::Result<Local> {
    anyhow::ensure!(brokers >= 1, "--brokers must be at least 1");
    let flags = Settings {
        data: data.clone(),
        ..Settings::default()
    };
    let (s, mut warnings) = tuning.merged(flags)?;
    if s.id.is_some() {
        warnings.push("node.id: ignored by `local` (its brokers are 0..N)".into());
    }
    if s.advertise.is_some() {
        warnings.push("advertised.listeners: ignored by `local`".into());
    }
    if s.more_listeners.as_ref().is_some_and(|m| !m.is_empty()) {
        warnings.push(
            "listeners: `local` serves one listener per broker; the others are ignored".into(),
        );
    }
    let listener_only = SecuritySettings {
        sasl: None,
        ssl: None,
        ..s.security.clone()
    } == SecuritySettings::default();
    if !listener_only || s.security.sasl == Some(true) || s.security.ssl == Some(true) {
        warnings.push(
            "security settings: ignored by `local` (its flags --sasl, --admin-password and \
             --tls-* set them)"
                .into(),
        );
    }
    Ok(Local {
        brokers,
        data: s.data.clone().unwrap_or_else(|| PathBuf::from("./data")),
        host: host
            .clone()
            .or(s.listen.map(|l| l.ip().to_string()))
            .unwrap_or_else(|| "127.0.0.1".into()),
        advertised_host: None,
        base_port: base_port.or(s.listen.map(|l| l.port())).unwrap_or(9092),
        settings: s,
        warnings,
        sasl_admin_password: None,
        tls: None,
    })
}

#[cfg(test)]
mod tests;
