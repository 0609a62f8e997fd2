//! The `kaas-broker` command line: `local`, `serve`, `controller`, and how
//! a `serve` or `local` command line, its environment and its
//! `--config FILE` merge into one configuration ([`crate::settings`]).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::cluster::assignment_file;
use crate::cluster::controller::{parse_brokers, ControllerConfig};
use crate::net::listener::{protocol_name, ListenerConfig};
use crate::net::tls::{ClientAuth, TlsSettings};
use crate::settings::security::{SecuritySettings, ADMIN};
use crate::settings::table::{self, Flag};
use crate::settings::{self, HostPort, Settings};
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

/// A flag and a `KAAS_` variable for each setting of the settings table
/// ([`settings::table`]: `--max-frame-bytes`, `--group-log-sync`, …) and
/// for each of Apache's broker settings that give topic configs their
/// defaults ([`topic_config::broker_settings`]: `--log-cleanup-policy`,
/// `--compression-type`, …, named after the setting), made from the two
/// tables so none is missed. Values are kept as given, checked when merged.
#[derive(Clone, Debug, Default)]
pub struct SettingFlags(pub std::collections::BTreeMap<String, String>);

/// `log.cleanup.policy` → `log-cleanup-policy`.
fn flag_name(key: &str) -> String {
    key.replace('.', "-")
}

impl clap::FromArgMatches for SettingFlags {
    fn from_arg_matches(matches: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut flags = SettingFlags::default();
        flags.update_from_arg_matches(matches)?;
        Ok(flags)
    }

    fn update_from_arg_matches(&mut self, matches: &clap::ArgMatches) -> Result<(), clap::Error> {
        for s in table::BROKER_SETTINGS {
            let value = match s.flag {
                Flag::Value(_) => matches.get_one::<String>(s.key).cloned(),
                Flag::Switch(_, value) => matches.get_flag(s.key).then(|| value.to_string()),
            };
            if let Some(value) = value {
                self.0.insert(s.key.to_string(), value);
            }
        }
        for key in topic_config::broker_settings() {
            if let Some(value) = matches.get_one::<String>(key) {
                self.0.insert(key.to_string(), value.clone());
            }
        }
        Ok(())
    }
}

impl Args for SettingFlags {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        let defaults = table::defaults();
        let cmd = table::BROKER_SETTINGS.iter().fold(cmd, |cmd, s| {
            let default = (s.get)(&defaults).unwrap_or_else(|| "none".into());
            // -h names the setting; --help says what it does too.
            let named = match s.flag {
                Flag::Value(_) => s.key.to_string(),
                Flag::Switch(_, value) => format!("{}={value}", s.key),
            };
            let arg = clap::Arg::new(s.key)
                .long(s.flag.name())
                .help(format!("{named} [default: {default}]"))
                .long_help(match s.doc {
                    "" => format!("{named} [default: {default}]"),
                    doc => format!("{named}: {doc} [default: {default}]"),
                });
            cmd.arg(match s.flag {
                Flag::Value(_) => arg
                    .env(s.flag.env().expect("a value flag has a variable"))
                    .value_name("VALUE")
                    .allow_negative_numbers(true),
                Flag::Switch(..) => arg.action(clap::ArgAction::SetTrue),
            })
        });
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
    #[command(flatten)]
    pub settings: SettingFlags,
    /// Serve /healthz, /readyz and /metrics on this address
    /// (kaas.http.listen; with `local`, broker N uses this port + N).
    #[arg(long, env = "KAAS_HTTP")]
    pub http: Option<SocketAddr>,
}

impl Tuning {
    /// The settings the flags (and environment) give, each checked.
    fn settings(&self) -> Result<Settings, settings::SettingError> {
        let mut s = Settings {
            http: self.http,
            ..Settings::default()
        };
        for (key, value) in &self.settings.0 {
            s.give(key, value)?;
        }
        Ok(s)
    }

    /// The flags' settings over those of --config, if given; with the
    /// file's warnings.
    pub fn merged(&self, flags: Settings) -> anyhow::Result<(Settings, Vec<String>)> {
        let flags = flags.or(self.settings()?);
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
