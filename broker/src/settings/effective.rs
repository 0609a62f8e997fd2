//! A broker's effective configuration, as its start-up log line and
//! DescribeConfigs of its BROKER resource list it.

use std::net::SocketAddr;

use super::{is_secret, security, table};
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
    ]);
    out.extend(
        table::BROKER_SETTINGS
            .iter()
            .filter_map(|s| (s.get)(c).map(|value| (s.key, value))),
    );
    if let Some(h) = http {
        out.push(("kaas.http.listen", h.to_string()));
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
    if let Some(setting) = table::find(key) {
        return Some(setting.kind);
    }
    Some(match key {
        "allow.everyone.if.no.acl.found" => Boolean,
        "node.id"
        | "connection.failed.authentication.delay.ms"
        | "sasl.server.max.receive.size" => Int,
        "connections.max.reauth.ms" => Long,
        "sasl.enabled.mechanisms" => List,
        "listeners"
        | "advertised.listeners"
        | "listener.security.protocol.map"
        | "inter.broker.listener.name"
        | "log.dirs"
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
