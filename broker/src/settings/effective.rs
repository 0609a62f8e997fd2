//! A broker's effective configuration, as its start-up log line and
//! DescribeConfigs of its BROKER resource list it.

use std::net::SocketAddr;

use super::{is_secret, security, sync_name};
use crate::net::listener::ListenerConfig;
use crate::storage::topic_config::{self, ConfigType};
use crate::BrokerConfig;

/// A broker's effective configuration by `server.properties` key, in the
/// order a user reads it; secrets masked.
/// `listen` are the listeners' bound addresses, in `c.listeners`' order.
pub fn effective(
    c: &BrokerConfig,
    listen: &[SocketAddr],
    http: Option<SocketAddr>,
) -> Vec<(&'static str, String)> {
    let unlimited = |n: usize| match n {
        usize::MAX => i32::MAX.to_string(),
        n => n.to_string(),
    };
    let g = &c.groups;
    let consumer = &g.core.consumer;
    let each = |f: &dyn Fn(&ListenerConfig) -> String| {
        c.listeners.iter().map(f).collect::<Vec<_>>().join(",")
    };
    let mut out = vec![("node.id", c.id.to_string())];
    if !listen.is_empty() {
        let bound = c.listeners.iter().zip(listen);
        let bound: Vec<String> = bound.map(|(l, a)| format!("{}://{a}", l.name)).collect();
        out.push(("listeners", bound.join(",")));
    }
    out.extend([
        (
            "advertised.listeners",
            each(&|l| format!("{}://{}:{}", l.name, l.advertised_host, l.advertised_port)),
        ),
        (
            "listener.security.protocol.map",
            each(&|l| format!("{}:{}", l.name, l.protocol())),
        ),
        ("inter.broker.listener.name", c.listeners[0].name.clone()),
        ("log.dirs", c.data_dir.display().to_string()),
        ("socket.request.max.bytes", c.max_frame_bytes.to_string()),
        ("max.connections", unlimited(c.max_connections)),
        (
            "max.connections.per.ip",
            unlimited(c.max_connections_per_ip),
        ),
        ("quota.window.num", c.quota_window.samples.to_string()),
        (
            "quota.window.size.seconds",
            (c.quota_window.window_ms / 1000).to_string(),
        ),
        (
            "auto.create.topics.enable",
            c.auto_create_topics.to_string(),
        ),
        ("num.partitions", c.default_partitions.to_string()),
        ("log.segment.bytes", c.log.segment_bytes.to_string()),
        (
            "log.retention.hours",
            c.log_retention.hours.unwrap_or(168).to_string(),
        ),
        (
            "log.retention.bytes",
            c.log_retention.bytes.unwrap_or(-1).to_string(),
        ),
        (
            "log.retention.check.interval.ms",
            c.log_retention.check_interval_ms.to_string(),
        ),
        ("log.cleaner.enable", c.log_cleaner.enable.to_string()),
        ("log.cleaner.threads", c.log_cleaner.threads.to_string()),
        (
            "log.cleaner.backoff.ms",
            c.log_cleaner.backoff_ms.to_string(),
        ),
        (
            "log.cleaner.dedupe.buffer.size",
            c.log_cleaner.dedupe_buffer_size.to_string(),
        ),
        (
            "log.cleaner.io.max.bytes.per.second",
            // Apache's default is Double.MaxValue, printed as Java does.
            if c.log_cleaner.io_max_bytes_per_second == f64::MAX {
                "1.7976931348623157E308".to_string()
            } else {
                c.log_cleaner.io_max_bytes_per_second.to_string()
            },
        ),
        (
            "kaas.lag.metrics.max.partitions",
            c.lag_metrics_max_partitions.to_string(),
        ),
        (
            "group.initial.rebalance.delay.ms",
            g.core.initial_rebalance_delay_ms.to_string(),
        ),
        (
            "group.min.session.timeout.ms",
            g.core.min_session_timeout_ms.to_string(),
        ),
        (
            "group.max.session.timeout.ms",
            g.core.max_session_timeout_ms.to_string(),
        ),
        ("group.max.size", unlimited(g.core.max_group_size)),
        (
            "group.consumer.session.timeout.ms",
            consumer.session_timeout_ms.to_string(),
        ),
        (
            "group.consumer.min.session.timeout.ms",
            consumer.min_session_timeout_ms.to_string(),
        ),
        (
            "group.consumer.max.session.timeout.ms",
            consumer.max_session_timeout_ms.to_string(),
        ),
        (
            "group.consumer.heartbeat.interval.ms",
            consumer.heartbeat_interval_ms.to_string(),
        ),
        (
            "group.consumer.min.heartbeat.interval.ms",
            consumer.min_heartbeat_interval_ms.to_string(),
        ),
        (
            "group.consumer.max.heartbeat.interval.ms",
            consumer.max_heartbeat_interval_ms.to_string(),
        ),
        ("group.consumer.max.size", unlimited(consumer.max_size)),
        (
            "group.consumer.assignors",
            consumer
                .assignors
                .iter()
                .map(|a| a.name())
                .collect::<Vec<_>>()
                .join(","),
        ),
        (
            "group.consumer.migration.policy",
            format!("{:?}", consumer.migration_policy).to_lowercase(),
        ),
        (
            "group.consumer.regex.refresh.interval.ms",
            consumer.regex_refresh_interval_ms.to_string(),
        ),
        (
            "offsets.retention.minutes",
            (g.core.offsets_retention_ms / 60_000).to_string(),
        ),
        (
            "offsets.retention.check.interval.ms",
            g.core.offsets_retention_check_interval_ms.to_string(),
        ),
        ("kaas.group.idle.unload.ms", g.idle_unload_ms.to_string()),
        ("kaas.max.loaded.groups", g.max_resident_groups.to_string()),
        (
            "kaas.group.log.sync",
            sync_name(c.group_log_sync).to_string(),
        ),
        ("kaas.shutdown.drain.ms", c.shutdown_drain_ms.to_string()),
        (
            "kaas.volume.check.interval.ms",
            c.volume_check.interval.as_millis().to_string(),
        ),
        (
            "kaas.volume.check.timeout.ms",
            c.volume_check.timeout.as_millis().to_string(),
        ),
        (
            "kaas.assignment.confirm.timeout.ms",
            c.volume_check.assignment_timeout.as_millis().to_string(),
        ),
        (
            "kaas.volume.self.check",
            format!("{:?}", c.volume_self_check).to_lowercase(),
        ),
        (
            "transaction.max.timeout.ms",
            c.transactions.core.max_timeout_ms.to_string(),
        ),
        (
            "transactional.id.expiration.ms",
            c.transactions.core.id_expiration_ms.to_string(),
        ),
        (
            "transaction.abort.timed.out.transaction.cleanup.interval.ms",
            c.transactions.abort_check_interval_ms.to_string(),
        ),
        (
            "transaction.remove.expired.transaction.cleanup.interval.ms",
            c.transactions.expiry_check_interval_ms.to_string(),
        ),
        (
            "producer.id.expiration.ms",
            c.producer_id_expiration_ms.to_string(),
        ),
        (
            "producer.id.expiration.check.interval.ms",
            c.producer_id_expiration_check_interval_ms.to_string(),
        ),
    ]);
    if let Some(h) = http {
        out.push(("kaas.http.listen", h.to_string()));
    }
    // Apache has no default for these two (log.retention.hours applies).
    if let Some(m) = c.log_retention.minutes {
        out.push(("log.retention.minutes", m.to_string()));
    }
    if let Some(ms) = c.log_retention.ms {
        out.push(("log.retention.ms", ms.to_string()));
    }
    // The topic defaults given (the rest are Apache's, as DescribeConfigs
    // of a topic shows them).
    out.extend(
        topic_config::broker_settings()
            .filter_map(|key| c.topic_defaults.get(key).map(|value| (key, value.clone()))),
    );
    out.extend(security::effective(c));
    masked(out)
}

/// The type DescribeConfigs gives a broker setting [`effective`] lists or
/// AlterConfigs changes: Apache's `KafkaConfig` type where Apache has the
/// setting, the type of its value for kaas's own (`kaas.*`); None for a
/// key kaas does not know.
pub fn setting_type(key: &str) -> Option<ConfigType> {
    use ConfigType::*;
    if let Some(kind) = topic_config::broker_setting_type(key) {
        return Some(kind);
    }
    if is_secret(key) {
        return Some(Password);
    }
    Some(match key {
        "auto.create.topics.enable" | "log.cleaner.enable" | "allow.everyone.if.no.acl.found" => {
            Boolean
        }
        "node.id"
        | "socket.request.max.bytes"
        | "max.connections"
        | "max.connections.per.ip"
        | "quota.window.num"
        | "quota.window.size.seconds"
        | "num.partitions"
        | "log.cleaner.threads"
        | "kaas.lag.metrics.max.partitions"
        | "group.initial.rebalance.delay.ms"
        | "group.min.session.timeout.ms"
        | "group.max.session.timeout.ms"
        | "group.max.size"
        | "group.consumer.session.timeout.ms"
        | "group.consumer.min.session.timeout.ms"
        | "group.consumer.max.session.timeout.ms"
        | "group.consumer.heartbeat.interval.ms"
        | "group.consumer.min.heartbeat.interval.ms"
        | "group.consumer.max.heartbeat.interval.ms"
        | "group.consumer.max.size"
        | "group.consumer.regex.refresh.interval.ms"
        | "offsets.retention.minutes"
        | "kaas.max.loaded.groups"
        | "transaction.max.timeout.ms"
        | "transactional.id.expiration.ms"
        | "transaction.abort.timed.out.transaction.cleanup.interval.ms"
        | "transaction.remove.expired.transaction.cleanup.interval.ms"
        | "producer.id.expiration.ms"
        | "producer.id.expiration.check.interval.ms"
        | "connection.failed.authentication.delay.ms"
        | "sasl.server.max.receive.size" => Int,
        "log.retention.check.interval.ms"
        | "log.cleaner.backoff.ms"
        | "log.cleaner.dedupe.buffer.size"
        | "offsets.retention.check.interval.ms"
        | "kaas.group.idle.unload.ms"
        | "kaas.shutdown.drain.ms"
        | "kaas.volume.check.interval.ms"
        | "kaas.volume.check.timeout.ms"
        | "kaas.assignment.confirm.timeout.ms"
        | "connections.max.reauth.ms" => Long,
        "log.cleaner.io.max.bytes.per.second" => Double,
        "sasl.enabled.mechanisms" | "group.consumer.assignors" => List,
        "listeners"
        | "advertised.listeners"
        | "listener.security.protocol.map"
        | "inter.broker.listener.name"
        | "log.dirs"
        | "kaas.group.log.sync"
        | "kaas.volume.self.check"
        | "group.consumer.migration.policy"
        | "kaas.http.listen"
        | "ssl.keystore.location"
        | "ssl.truststore.location"
        | "ssl.client.auth"
        | "sasl.mechanism.inter.broker.protocol"
        | "kaas.inter.broker.user"
        | "authorizer.class.name"
        | "super.users" => String,
        _ => return None,
    })
}

/// `entries` with the values of secret keys ([`is_secret`]) hidden.
pub fn masked(entries: Vec<(&'static str, String)>) -> Vec<(&'static str, String)> {
    entries
        .into_iter()
        .map(|(k, v)| match is_secret(k) {
            true => (k, "[hidden]".to_string()),
            false => (k, v),
        })
        .collect()
}

/// [`effective`] as one line, for the start-up log.
pub fn effective_line(entries: &[(&'static str, String)]) -> String {
    entries
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(" ")
}
