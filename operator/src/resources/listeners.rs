//! The listeners in the brokers' settings: `listener` alone, or as
//! INTERNAL beside each additional listener with its protocol, TLS files
//! and client-certificate rules.

use crate::crd::{AdditionalListener, Authentication, KaasCluster, INTERNAL_LISTENER};

/// Where an additional listener's TLS Secret is mounted, in a folder named
/// after the listener.
pub const LISTENER_TLS_PATH: &str = "/etc/kaas-listeners";
/// A client certificate's subject to its common name: the user of a
/// listener with `authentication: tls` (the rest of the subject may follow
/// the CN; a subject without one keeps Apache's default principal).
pub const CN_PRINCIPAL_RULES: &str = "RULE:^CN=([^,]*)(,.*)?$/$1/,DEFAULT";
/// The port name of additional listener `i` (a port name is at most 15
/// characters, so not the listener's own name).
pub fn listener_port_name(i: usize) -> String {
    format!("listener-{}", i + 1)
}

/// Apache's security protocol of a listener.
pub(super) fn protocol(authentication: Authentication, tls: bool) -> &'static str {
    match (authentication, tls) {
        (Authentication::None, false) => "PLAINTEXT",
        (Authentication::Scram, false) => "SASL_PLAINTEXT",
        (Authentication::Scram, true) => "SASL_SSL",
        // `tls` without TLS is refused by `KaasClusterSpec::validate`.
        (Authentication::None | Authentication::Tls, _) => "SSL",
    }
}

/// Where additional listener `l`'s TLS Secret is mounted.
pub(super) fn listener_tls_dir(l: &AdditionalListener) -> String {
    format!("{LISTENER_TLS_PATH}/{}", l.name.to_lowercase())
}

/// The volume of additional listener `l`'s TLS Secret.
pub(super) fn listener_tls_volume(l: &AdditionalListener) -> String {
    format!("listener-{}", l.name.to_lowercase().replace('_', "-"))
}

/// The `server.properties` lines of the listeners: one, named after its
/// protocol as Apache names a lone listener; or `listener` as
/// [`INTERNAL_LISTENER`], the one brokers call each other on, and each
/// additional listener with its own TLS files and, with `authentication:
/// tls`, required client certificates whose CN is the user.
pub(super) fn listener_properties(kc: &KaasCluster) -> Vec<String> {
    let l = &kc.spec.listener;
    let primary = protocol(l.authentication, l.tls.is_some());
    let more = &kc.spec.additional_listeners;
    if more.is_empty() {
        return vec![format!("listeners={primary}://0.0.0.0:{}", l.port)];
    }
    let named = std::iter::once((INTERNAL_LISTENER, l.port, primary)).chain(more.iter().map(|a| {
        (
            a.name.as_str(),
            a.port,
            protocol(a.authentication, a.tls.is_some()),
        )
    }));
    let (mut listeners, mut map) = (Vec::new(), Vec::new());
    for (name, port, protocol) in named {
        listeners.push(format!("{name}://0.0.0.0:{port}"));
        map.push(format!("{name}:{protocol}"));
    }
    let mut lines = vec![
        format!("listeners={}", listeners.join(",")),
        format!("listener.security.protocol.map={}", map.join(",")),
        format!("inter.broker.listener.name={INTERNAL_LISTENER}"),
    ];
    for a in more.iter().filter(|a| a.tls.is_some()) {
        let (prefix, dir) = (
            format!("listener.name.{}", a.name.to_lowercase()),
            listener_tls_dir(a),
        );
        lines.extend([
            format!("{prefix}.ssl.keystore.location={dir}/tls.crt"),
            format!("{prefix}.kaas.ssl.key.location={dir}/tls.key"),
            format!("{prefix}.ssl.truststore.location={dir}/ca.crt"),
        ]);
        if a.authentication == Authentication::Tls {
            lines.extend([
                format!("{prefix}.ssl.client.auth=required"),
                format!("{prefix}.ssl.principal.mapping.rules={CN_PRINCIPAL_RULES}"),
            ]);
        }
    }
    lines
}
