//! The listeners of a `server.properties` file: `listeners`,
//! `advertised.listeners`, `listener.security.protocol.map`,
//! `controller.listener.names` and `inter.broker.listener.name` name each
//! other, so they are read together.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use super::{refuse, security, HostPort, SettingError, Settings};

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
pub(super) fn read_listeners<'a>(
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
