//! Prometheus metrics of one broker.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ApiLabel {
    pub api: String,
}

/// What a client was throttled for: `produce`, `fetch` or `request`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct QuotaLabel {
    pub quota: &'static str,
}

/// A group's committed offset of one partition.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct GroupPartitionLabels {
    pub group: String,
    pub topic: String,
    pub partition: String,
}

/// A group's partitions of one topic.
#[derive(Clone, Debug, Hash, PartialEq, Eq, PartialOrd, Ord, EncodeLabelSet)]
pub struct GroupTopicLabels {
    pub group: String,
    pub topic: String,
}

/// A partition led here.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct PartitionLabels {
    pub topic: String,
    pub partition: String,
}

pub struct Metrics {
    registry: Registry,
    pub requests: Family<ApiLabel, Counter>,
    /// Each API's counter of `requests`, found once (the family's lookup
    /// formats and hashes the label on every request).
    request_counters: [std::sync::OnceLock<Counter>; API_KEYS],
    pub produce_bytes: Counter,
    pub fetch_bytes: Counter,
    pub connections: Gauge,
    /// SASL authentications that failed.
    pub failed_authentications: Counter,
    /// SASL sessions renewed by a re-authentication (KIP-368).
    pub reauthentications: Counter,
    /// Connections closed because their SASL session expired.
    pub expired_sessions: Counter,
    /// Responses that throttled a client over its quota, and for how long
    /// in total (ms), by the quota it was over.
    pub throttled_responses: Family<QuotaLabel, Counter>,
    pub throttle_time_ms: Family<QuotaLabel, Counter>,
    /// Log segments retention deleted, and their bytes.
    pub retention_deleted_segments: Counter,
    pub retention_deleted_bytes: Counter,
    /// Compaction: logs cleaned, bytes read and written by the cleaner.
    pub cleaner_runs: Counter,
    pub cleaner_read_bytes: Counter,
    pub cleaner_written_bytes: Counter,
    /// Partitions the cleaner passes over after a cleaning failed on their
    /// data (Apache's `uncleanable-partitions-count`).
    pub cleaner_uncleanable_partitions: Gauge,
    pub assignment_version: Gauge,
    pub groups_resident: Gauge,
    /// Set at each scrape ([`crate::lag`]).
    pub group_committed_offset: Family<GroupPartitionLabels, Gauge>,
    pub group_log_end_offset: Family<GroupPartitionLabels, Gauge>,
    pub group_lag: Family<GroupPartitionLabels, Gauge>,
    pub group_topic_lag: Family<GroupTopicLabels, Gauge>,
    pub partition_log_start_offset: Family<PartitionLabels, Gauge>,
    pub partition_log_end_offset: Family<PartitionLabels, Gauge>,
    pub partition_size_bytes: Family<PartitionLabels, Gauge>,
    /// 1 while the data volume answers this broker's checks, else 0.
    pub volume_healthy: Gauge,
}

/// API keys below this get a cached request counter.
const API_KEYS: usize = 128;

impl Metrics {
    /// Counts a response that throttles its client for `ms`.
    pub fn count_throttle(&self, quota: &'static str, ms: u64) {
        let label = QuotaLabel { quota };
        self.throttled_responses.get_or_create(&label).inc();
        self.throttle_time_ms.get_or_create(&label).inc_by(ms);
    }

    /// Counts one request of `api_key`.
    pub fn count_request(&self, api_key: kafka_protocol::messages::ApiKey) {
        let counter = || {
            self.requests
                .get_or_create(&ApiLabel {
                    api: format!("{api_key:?}"),
                })
                .clone()
        };
        match self.request_counters.get(api_key as i16 as usize) {
            Some(cached) => cached.get_or_init(counter).inc(),
            None => counter().inc(),
        };
    }
}

impl Default for Metrics {
    fn default() -> Self {
        let mut registry = Registry::with_prefix("kaas");
        let requests = Family::<ApiLabel, Counter>::default();
        let produce_bytes = Counter::default();
        let fetch_bytes = Counter::default();
        let connections = Gauge::default();
        let failed_authentications = Counter::default();
        let reauthentications = Counter::default();
        let expired_sessions = Counter::default();
        let throttled_responses = Family::<QuotaLabel, Counter>::default();
        let throttle_time_ms = Family::<QuotaLabel, Counter>::default();
        let retention_deleted_segments = Counter::default();
        let retention_deleted_bytes = Counter::default();
        let cleaner_runs = Counter::default();
        let cleaner_read_bytes = Counter::default();
        let cleaner_written_bytes = Counter::default();
        let cleaner_uncleanable_partitions = Gauge::default();
        let assignment_version = Gauge::default();
        let groups_resident = Gauge::default();
        let group_committed_offset = Family::<GroupPartitionLabels, Gauge>::default();
        let group_log_end_offset = Family::<GroupPartitionLabels, Gauge>::default();
        let group_lag = Family::<GroupPartitionLabels, Gauge>::default();
        let group_topic_lag = Family::<GroupTopicLabels, Gauge>::default();
        let partition_log_start_offset = Family::<PartitionLabels, Gauge>::default();
        let partition_log_end_offset = Family::<PartitionLabels, Gauge>::default();
        let partition_size_bytes = Family::<PartitionLabels, Gauge>::default();
        registry.register("requests", "Requests handled, by API", requests.clone());
        registry.register(
            "produce_bytes",
            "Record bytes appended by Produce",
            produce_bytes.clone(),
        );
        registry.register(
            "fetch_bytes",
            "Record bytes returned by Fetch",
            fetch_bytes.clone(),
        );
        registry.register(
            "connections",
            "Open client connections",
            connections.clone(),
        );
        registry.register(
            "failed_authentications",
            "SASL authentications that failed",
            failed_authentications.clone(),
        );
        registry.register(
            "reauthentications",
            "SASL sessions renewed by a re-authentication (KIP-368)",
            reauthentications.clone(),
        );
        registry.register(
            "expired_sessions",
            "Connections closed because their SASL session expired (connections.max.reauth.ms)",
            expired_sessions.clone(),
        );
        registry.register(
            "throttled_responses",
            "Responses that throttled a client over its quota (KIP-219), by quota",
            throttled_responses.clone(),
        );
        registry.register(
            "throttle_time_ms",
            "Milliseconds clients over their quotas were throttled for, by quota",
            throttle_time_ms.clone(),
        );
        registry.register(
            "retention_deleted_segments",
            "Log segments deleted by retention (retention.ms, retention.bytes)",
            retention_deleted_segments.clone(),
        );
        registry.register(
            "retention_deleted_bytes",
            "Bytes of log segments deleted by retention",
            retention_deleted_bytes.clone(),
        );
        registry.register(
            "cleaner_runs",
            "Cleanings of compacted logs (cleanup.policy=compact) completed",
            cleaner_runs.clone(),
        );
        registry.register(
            "cleaner_read_bytes",
            "Bytes of log the cleaner read while rewriting segments",
            cleaner_read_bytes.clone(),
        );
        registry.register(
            "cleaner_written_bytes",
            "Bytes of cleaned segments the cleaner wrote",
            cleaner_written_bytes.clone(),
        );
        registry.register(
            "cleaner_uncleanable_partitions",
            "Partitions led here that the cleaner passes over: a cleaning failed on their data",
            cleaner_uncleanable_partitions.clone(),
        );
        registry.register(
            "assignment_version",
            "Version of the assignment this broker follows",
            assignment_version.clone(),
        );
        registry.register(
            "groups_resident",
            "Consumer groups held in memory",
            groups_resident.clone(),
        );
        for (name, help, family) in [
            (
                "group_committed_offset",
                "A consumer group's committed offset of a partition (groups this broker coordinates)",
                &group_committed_offset,
            ),
            (
                "group_log_end_offset",
                "The log end offset (high watermark) of a partition a group committed an offset of",
                &group_log_end_offset,
            ),
            (
                "group_lag",
                "Log end offset minus the group's committed offset (up to kaas.lag.metrics.max.partitions series)",
                &group_lag,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
        registry.register(
            "group_topic_lag",
            "A group's lag summed over its committed partitions of a topic",
            group_topic_lag.clone(),
        );
        for (name, help, family) in [
            (
                "partition_log_start_offset",
                "Log start offset of a partition this broker leads",
                &partition_log_start_offset,
            ),
            (
                "partition_log_end_offset",
                "Log end offset (high watermark) of a partition this broker leads",
                &partition_log_end_offset,
            ),
            (
                "partition_size_bytes",
                "Bytes of a partition's segments, for partitions this broker leads",
                &partition_size_bytes,
            ),
        ] {
            registry.register(name, help, family.clone());
        }
        Self {
            registry,
            requests,
            request_counters: [const { std::sync::OnceLock::new() }; API_KEYS],
            produce_bytes,
            fetch_bytes,
            connections,
            failed_authentications,
            reauthentications,
            expired_sessions,
            throttled_responses,
            throttle_time_ms,
            retention_deleted_segments,
            retention_deleted_bytes,
            cleaner_runs,
            cleaner_read_bytes,
            cleaner_written_bytes,
            cleaner_uncleanable_partitions,
            assignment_version,
            groups_resident,
            group_committed_offset,
            group_log_end_offset,
            group_lag,
            group_topic_lag,
            partition_log_start_offset,
            partition_log_end_offset,
            partition_size_bytes,
            volume_healthy: Gauge::default(),
        }
    }
}

impl Metrics {
    /// The metrics, with those of the volume check ([`crate::volume`]).
    pub fn with_volume(tenancy: &crate::volume::Tenancy) -> Metrics {
        let mut m = Metrics::default();
        m.registry.register(
            "volume_healthy",
            "1 while this broker can serve: its data volume answers its checks (write, fsync, fresh read) within the timeout, it is not fenced and its assignment is confirmed (what /serving answers), else 0",
            m.volume_healthy.clone(),
        );
        for (name, help, counter) in [
            (
                "volume_stalls",
                "Times this broker stopped being able to serve: its data volume stopped answering its checks within the timeout, it was fenced, or it was cut off from its assignment",
                &tenancy.stalls,
            ),
            (
                "volume_check_failures",
                "Volume checks that failed with an error",
                &tenancy.check_failures,
            ),
            (
                "volume_fences",
                "Times another broker fenced this broker process (it took over what this one held)",
                &tenancy.fences,
            ),
        ] {
            m.registry.register(name, help, counter.clone());
        }
        m.registry.register(
            "volume_check_last_milliseconds",
            "Duration of the last completed volume check",
            tenancy.last_check_ms.clone(),
        );
        m
    }

    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
