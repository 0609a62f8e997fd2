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
    /// Log segments retention deleted, and their bytes.
    pub retention_deleted_segments: Counter,
    pub retention_deleted_bytes: Counter,
    pub assignment_version: Gauge,
    pub groups_resident: Gauge,
}

/// API keys below this get a cached request counter.
const API_KEYS: usize = 128;

impl Metrics {
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
        let retention_deleted_segments = Counter::default();
        let retention_deleted_bytes = Counter::default();
        let assignment_version = Gauge::default();
        let groups_resident = Gauge::default();
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
            "assignment_version",
            "Version of the assignment this broker follows",
            assignment_version.clone(),
        );
        registry.register(
            "groups_resident",
            "Consumer groups held in memory",
            groups_resident.clone(),
        );
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
            retention_deleted_segments,
            retention_deleted_bytes,
            assignment_version,
            groups_resident,
        }
    }
}

impl Metrics {
    /// The Prometheus text exposition.
    pub fn render(&self) -> String {
        let mut out = String::new();
        // Writing to a String cannot fail.
        let _ = prometheus_client::encoding::text::encode(&mut out, &self.registry);
        out
    }
}
