//! The security settings: Apache's `server.properties` keys for the
//! listener's protocol, TLS, SASL and the authorizer, and the `--sasl`,
//! `--admin-password` and `--tls-*` flags, merged and applied to a broker.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::Context;

use super::{boolean, refuse, SettingError};
use crate::auth::ssl_principal::SslPrincipalMapper;
use crate::auth::standard::{parse_super_users, AuthorizerSettings};
use crate::net::sasl::{SaslMechanism, SaslSettings};
use crate::net::tls::{ClientAuth, TlsSettings};
use crate::BrokerConfig;

/// The authorizer Apache 4.x ships (`authorizer.class.name`).
pub const STANDARD_AUTHORIZER: &str = "org.apache.kafka.metadata.authorizer.StandardAuthorizer";

/// The user `--admin-password` creates: super user, and who brokers (and
/// the controller) authenticate as.
pub const ADMIN: &str = "admin";

/// Security settings given, each `None` where this source leaves it to the
/// next. Its `Debug` never shows a password.
#[derive(Clone, Default, PartialEq)]
pub struct SecuritySettings {
    /// The listener speaks SASL (SASL_PLAINTEXT, SASL_SSL).
    pub sasl: Option<bool>,
    /// The listener speaks TLS (SSL, SASL_SSL).
    pub ssl: Option<bool>,
    /// Certificate chain and key (`ssl.keystore.location` names one PEM
    /// file holding both).
    pub tls_cert: Option<PathBuf>,
    pub tls_key: Option<PathBuf>,
    /// `kaas.ssl.key.location`: the key's own PEM file, when it is apart
    /// from the certificate chain (as a kubernetes.io/tls Secret holds
    /// them); over the key in `ssl.keystore.location`.
    pub key_location: Option<PathBuf>,
    /// `ssl.truststore.location` (PEM).
    pub truststore: Option<PathBuf>,
    pub client_auth: Option<ClientAuth>,
    pub principal_mapping_rules: Option<String>,
    pub sasl_mechanisms: Option<Vec<SaslMechanism>>,
    pub failed_authentication_delay_ms: Option<u64>,
    pub sasl_max_receive_bytes: Option<usize>,
    pub max_reauth_ms: Option<u64>,
    /// `authorizer.class.name` is the StandardAuthorizer.
    pub authorizer: Option<bool>,
    pub super_users: Option<BTreeSet<String>>,
    pub allow_everyone_if_no_acl_found: Option<bool>,
    /// `sasl.mechanism.inter.broker.protocol`.
    pub inter_broker_mechanism: Option<String>,
    /// The user and password of the inter-broker JAAS configuration.
    pub inter_broker_login: Option<(String, String)>,
    /// `--admin-password`: `User:admin`'s password, written to the volume's
    /// SCRAM credentials at start.
    pub admin_password: Option<String>,
    /// One listener's own settings (`listener.name.<name>.<key>`), by the
    /// listener's name in lower case, over these.
    pub listeners: BTreeMap<String, SecuritySettings>,
}

impl std::fmt::Debug for SecuritySettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let hidden = |set: bool| if set { "[hidden]" } else { "None" };
        f.debug_struct("SecuritySettings")
            .field("sasl", &self.sasl)
            .field("ssl", &self.ssl)
            .field("tls_cert", &self.tls_cert)
            .field("tls_key", &self.tls_key)
            .field("key_location", &self.key_location)
            .field("truststore", &self.truststore)
            .field("client_auth", &self.client_auth)
            .field("sasl_mechanisms", &self.sasl_mechanisms)
            .field("authorizer", &self.authorizer)
            .field("super_users", &self.super_users)
            .field(
                "inter_broker_user",
                &self.inter_broker_login.as_ref().map(|(u, _)| u),
            )
            .field("admin_password", &hidden(self.admin_password.is_some()))
            .field("listeners", &self.listeners)
            .finish_non_exhaustive()
    }
}

/// Apache's security protocols, as a listener names them.
pub fn protocol(key: &str, name: &str) -> Result<(bool, bool), SettingError> {
    match name {
        "PLAINTEXT" => Ok((false, false)),
        "SSL" => Ok((false, true)),
        "SASL_PLAINTEXT" => Ok((true, false)),
        "SASL_SSL" => Ok((true, true)),
        other => Err(refuse(
            key,
            format!("'{other}' is not PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"),
        )),
    }
}

/// Key stores and trust stores are PEM files in kaas.
fn pem_only(key: &str, value: &str) -> Result<(), SettingError> {
    match value.trim() {
        "PEM" => Ok(()),
        other => Err(refuse(
            key,
            format!("kaas reads PEM files only, not {other} (convert with openssl or keytool)"),
        )),
    }
}

/// The `username` and `password` options of a JAAS login module line
/// (`... required username="u" password="p";`).
fn jaas_login(key: &str, value: &str) -> Result<(String, String), SettingError> {
    let option = |name: &str| {
        let at = value.find(&format!("{name}=\""))? + name.len() + 2;
        let end = value[at..].find('"')?;
        Some(value[at..at + end].to_string())
    };
    match (option("username"), option("password")) {
        (Some(u), Some(p)) => Ok((u, p)),
        _ => Err(refuse(key, "no username=\"…\" and password=\"…\" options")),
    }
}

impl SecuritySettings {
    /// Takes `key` if it is a security setting: `Ok(false)` when it is not.
    pub fn parse(&mut self, key: &str, value: &str) -> Result<bool, SettingError> {
        let v = value.trim();
        match key {
            "ssl.keystore.location" => {
                self.tls_cert = Some(PathBuf::from(v));
                self.tls_key = Some(PathBuf::from(v));
            }
            "kaas.ssl.key.location" => self.key_location = Some(PathBuf::from(v)),
            "ssl.keystore.type" | "ssl.truststore.type" => pem_only(key, v)?,
            "ssl.truststore.location" => self.truststore = Some(PathBuf::from(v)),
            "ssl.client.auth" => {
                self.client_auth = Some(v.parse().map_err(|e: String| refuse(key, e))?)
            }
            "ssl.principal.mapping.rules" => {
                SslPrincipalMapper::from_rules(v).map_err(|e| refuse(key, e))?;
                self.principal_mapping_rules = Some(v.to_string());
            }
            "ssl.key.password" | "ssl.keystore.password" | "ssl.truststore.password" => {
                return Err(refuse(
                    key,
                    "kaas reads unencrypted PEM keys only; give the key without a password",
                ))
            }
            "sasl.enabled.mechanisms" => {
                let mut mechanisms = Vec::new();
                for name in v.split(',').map(str::trim).filter(|n| !n.is_empty()) {
                    mechanisms.push(SaslMechanism::from_name(name).ok_or_else(|| {
                        refuse(
                            key,
                            format!(
                                "'{name}' is not served by kaas (PLAIN, SCRAM-SHA-256, SCRAM-SHA-512)"
                            ),
                        )
                    })?);
                }
                if mechanisms.is_empty() {
                    return Err(refuse(key, "no mechanism"));
                }
                self.sasl_mechanisms = Some(mechanisms);
            }
            "connection.failed.authentication.delay.ms" => {
                self.failed_authentication_delay_ms = Some(super::at_least(key, v, 0)?)
            }
            "sasl.server.max.receive.size" => {
                self.sasl_max_receive_bytes = Some(super::at_least(key, v, 1)?)
            }
            "connections.max.reauth.ms" => self.max_reauth_ms = Some(super::at_least(key, v, 0)?),
            "authorizer.class.name" => {
                self.authorizer = Some(match v {
                    "" => false,
                    STANDARD_AUTHORIZER => true,
                    other => {
                        return Err(refuse(
                            key,
                            format!("'{other}' is not available; kaas has {STANDARD_AUTHORIZER}"),
                        ))
                    }
                })
            }
            "super.users" => {
                self.super_users = Some(parse_super_users(v).map_err(|e| refuse(key, e))?)
            }
            "allow.everyone.if.no.acl.found" => {
                self.allow_everyone_if_no_acl_found = Some(boolean(key, v)?)
            }
            "sasl.mechanism.inter.broker.protocol" => {
                SaslMechanism::from_name(v).ok_or_else(|| {
                    refuse(
                        key,
                        format!("'{v}' is not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512"),
                    )
                })?;
                self.inter_broker_mechanism = Some(v.to_string());
            }
            // Apache's listener-scoped form names the mechanism too
            // (`listener.name.<l>.<mechanism>.sasl.jaas.config`).
            k if k == "sasl.jaas.config"
                || (k.starts_with("listener.name.") && k.ends_with(".sasl.jaas.config")) =>
            {
                self.inter_broker_login = Some(jaas_login(key, value)?)
            }
            k => {
                // `listener.name.<name>.<key>`: that listener's own setting.
                let Some((name, own)) = k
                    .strip_prefix("listener.name.")
                    .and_then(|rest| rest.split_once('.'))
                else {
                    return Ok(false);
                };
                return self
                    .listeners
                    .entry(name.to_lowercase())
                    .or_default()
                    .parse(own, value)
                    .map_err(|e| refuse(key, e.reason));
            }
        }
        Ok(true)
    }

    /// These settings, with `lower`'s where these leave one unset.
    pub fn or(self, lower: SecuritySettings) -> SecuritySettings {
        SecuritySettings {
            sasl: self.sasl.or(lower.sasl),
            ssl: self.ssl.or(lower.ssl),
            tls_cert: self.tls_cert.or(lower.tls_cert),
            tls_key: self.tls_key.or(lower.tls_key),
            key_location: self.key_location.or(lower.key_location),
            truststore: self.truststore.or(lower.truststore),
            client_auth: self.client_auth.or(lower.client_auth),
            principal_mapping_rules: self
                .principal_mapping_rules
                .or(lower.principal_mapping_rules),
            sasl_mechanisms: self.sasl_mechanisms.or(lower.sasl_mechanisms),
            failed_authentication_delay_ms: self
                .failed_authentication_delay_ms
                .or(lower.failed_authentication_delay_ms),
            sasl_max_receive_bytes: self.sasl_max_receive_bytes.or(lower.sasl_max_receive_bytes),
            max_reauth_ms: self.max_reauth_ms.or(lower.max_reauth_ms),
            authorizer: self.authorizer.or(lower.authorizer),
            super_users: self.super_users.or(lower.super_users),
            allow_everyone_if_no_acl_found: self
                .allow_everyone_if_no_acl_found
                .or(lower.allow_everyone_if_no_acl_found),
            inter_broker_mechanism: self.inter_broker_mechanism.or(lower.inter_broker_mechanism),
            inter_broker_login: self.inter_broker_login.or(lower.inter_broker_login),
            admin_password: self.admin_password.or(lower.admin_password),
            listeners: if self.listeners.is_empty() {
                lower.listeners
            } else {
                self.listeners
            },
        }
    }

    /// The settings of listener `name`: its own over these.
    fn of_listener(&self, name: &str) -> SecuritySettings {
        let shared = SecuritySettings {
            listeners: BTreeMap::new(),
            ..self.clone()
        };
        match self.listeners.get(&name.to_lowercase()) {
            Some(own) => own.clone().or(shared),
            None => shared,
        }
    }

    fn sasl_settings(&self) -> SaslSettings {
        let defaults = SaslSettings::default();
        SaslSettings {
            mechanisms: self.sasl_mechanisms.clone().unwrap_or(defaults.mechanisms),
            failed_authentication_delay_ms: self
                .failed_authentication_delay_ms
                .unwrap_or(defaults.failed_authentication_delay_ms),
            max_receive_bytes: self
                .sasl_max_receive_bytes
                .unwrap_or(defaults.max_receive_bytes),
            max_reauth_ms: self.max_reauth_ms.unwrap_or(defaults.max_reauth_ms),
        }
    }

    /// The listener's TLS settings, when it speaks TLS.
    pub fn tls(&self) -> anyhow::Result<Option<TlsSettings>> {
        if self.ssl != Some(true) {
            return Ok(None);
        }
        self.tls_settings().map(Some)
    }

    fn tls_settings(&self) -> anyhow::Result<TlsSettings> {
        let key = self.key_location.as_ref().or(self.tls_key.as_ref());
        let (Some(cert), Some(key)) = (&self.tls_cert, key) else {
            anyhow::bail!(
                "the listener speaks TLS: give ssl.keystore.location (a PEM file with the key and \
                 the certificate chain) or --tls-cert and --tls-key"
            );
        };
        let principal_mapper = match &self.principal_mapping_rules {
            Some(rules) => SslPrincipalMapper::from_rules(rules)
                .map_err(|e| anyhow::anyhow!("ssl.principal.mapping.rules: {e}"))?,
            None => SslPrincipalMapper::default(),
        };
        Ok(TlsSettings {
            cert: cert.clone(),
            key: key.clone(),
            client_ca: self.truststore.clone(),
            client_auth: self.client_auth.unwrap_or_default(),
            principal_mapper,
        })
    }

    /// Sets the security of the broker's listeners, the authorizer and the
    /// inter-broker identity from these settings; writes `User:admin`'s
    /// credentials to the volume when `--admin-password` is given. The
    /// first listener's protocol is `sasl` and `ssl`'s, the others' are
    /// `others`' (SASL, TLS) in order. Refuses settings that cannot work
    /// together, saying which.
    pub fn apply(&self, c: &mut BrokerConfig, others: &[(bool, bool)]) -> anyhow::Result<()> {
        anyhow::ensure!(
            c.listeners.len() == others.len() + 1,
            "one protocol per listener"
        );
        let first = (self.sasl == Some(true), self.ssl == Some(true));
        let protocols = std::iter::once(first).chain(others.iter().copied());
        for (l, (sasl, ssl)) in c.listeners.iter_mut().zip(protocols) {
            let own = self.of_listener(&l.name);
            l.tls = match ssl {
                true => Some(
                    own.tls_settings()
                        .with_context(|| format!("listener {}", l.name))?,
                ),
                false => None,
            };
            l.sasl = sasl.then(|| own.sasl_settings());
        }
        let inter_broker = &c.listeners[0];
        if let Some(tls) = &inter_broker.tls {
            c.inter_broker.tls = Some(inter_broker_tls(tls)?);
        }
        let admin = self.admin_password.as_ref();
        if let Some(sasl) = &inter_broker.sasl {
            let (user, password) = match (&self.inter_broker_login, admin) {
                (Some((u, p)), _) => (u.clone(), p.clone()),
                (None, Some(p)) => (ADMIN.to_string(), p.clone()),
                (None, None) => anyhow::bail!(
                    "a SASL listener needs the brokers' own login (they call each other): give \
                     --admin-password (KAAS_ADMIN_PASSWORD) or sasl.jaas.config with username \
                     and password"
                ),
            };
            let mechanism = self
                .inter_broker_mechanism
                .clone()
                .unwrap_or_else(|| "SCRAM-SHA-512".into());
            // As Apache: brokers must be able to log in to each other.
            let enabled = &sasl.mechanisms;
            if !enabled.iter().any(|m| m.name() == mechanism) {
                let names: Vec<&str> = enabled.iter().map(|m| m.name()).collect();
                anyhow::bail!(
                    "sasl.mechanism.inter.broker.protocol {mechanism} is not enabled on the \
                     inter-broker listener {} (sasl.enabled.mechanisms: {})",
                    inter_broker.name,
                    names.join(",")
                );
            }
            c.inter_broker.sasl = Some(kaas_client::SaslCredentials {
                mechanism,
                user,
                password,
            });
        } else if admin.is_some() && c.listeners.iter().all(|l| l.sasl.is_none()) {
            anyhow::bail!("--admin-password is for a SASL listener: give --sasl too");
        }
        // `--sasl` with `--admin-password` is `local --sasl`'s setup: the
        // authorizer on and the admin its super user.
        if self.authorizer.unwrap_or(admin.is_some()) {
            let mut super_users = self.super_users.clone().unwrap_or_default();
            if admin.is_some() {
                super_users.insert(format!("User:{ADMIN}"));
            }
            c.standard_authorizer = Some(AuthorizerSettings {
                super_users,
                allow_if_no_acl: self.allow_everyone_if_no_acl_found.unwrap_or(false),
            });
        }
        if let Some(password) = admin {
            seed_admin(&c.data_dir, password)?;
        }
        Ok(())
    }
}

/// How a broker (and the controller of a local cluster) speaks TLS to the
/// brokers: trusting the trust store, else the certificate file itself;
/// presenting the broker's certificate when client certificates are asked.
pub fn inter_broker_tls(tls: &TlsSettings) -> anyhow::Result<kaas_client::ClientTls> {
    let trust = tls.client_ca.as_ref().unwrap_or(&tls.cert);
    let identity =
        (tls.client_auth != ClientAuth::None).then_some((tls.cert.as_path(), tls.key.as_path()));
    kaas_client::ClientTls::new(trust, identity).context("the brokers' own TLS client")
}

/// Writes `User:admin`'s SCRAM credentials for `password` to the volume
/// (kept when they already match); returns how to log in as the admin.
pub fn seed_admin(data_dir: &Path, password: &str) -> anyhow::Result<kaas_client::SaslCredentials> {
    use crate::auth::scram_users::{ensure_user, ScramUsers};
    use crate::storage::shared_doc::SharedDoc;
    let cluster_dir = data_dir.join("__cluster");
    std::fs::create_dir_all(&cluster_dir)
        .with_context(|| format!("cannot create {}", cluster_dir.display()))?;
    let doc: SharedDoc<ScramUsers> = SharedDoc::new(&cluster_dir, "scram_users");
    doc.update(|users| {
        ensure_user(users, ADMIN, password, || {
            kaas_client::scram::nonce().into_bytes()
        })
    })
    .context("cannot write the admin's SCRAM credentials")?;
    Ok(kaas_client::SaslCredentials {
        mechanism: "SCRAM-SHA-512".into(),
        user: ADMIN.into(),
        password: password.into(),
    })
}

/// The effective security settings of a broker, by `server.properties` key.
pub fn effective(c: &BrokerConfig) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    // The first listener's with TLS, with SASL (the others' own settings
    // are theirs: `listener.name.<name>.`).
    if let Some(tls) = c.listeners.iter().find_map(|l| l.tls.as_ref()) {
        out.push(("ssl.keystore.location", tls.cert.display().to_string()));
        if let Some(ca) = &tls.client_ca {
            out.push(("ssl.truststore.location", ca.display().to_string()));
        }
        out.push(("ssl.client.auth", tls.client_auth.to_string()));
    }
    if let Some(sasl) = c.listeners.iter().find_map(|l| l.sasl.as_ref()) {
        let names: Vec<&str> = sasl.mechanisms.iter().map(|m| m.name()).collect();
        out.push(("sasl.enabled.mechanisms", names.join(",")));
        out.push((
            "connection.failed.authentication.delay.ms",
            sasl.failed_authentication_delay_ms.to_string(),
        ));
        out.push((
            "sasl.server.max.receive.size",
            sasl.max_receive_bytes.to_string(),
        ));
        out.push(("connections.max.reauth.ms", sasl.max_reauth_ms.to_string()));
    }
    if let Some(login) = &c.inter_broker.sasl {
        out.push((
            "sasl.mechanism.inter.broker.protocol",
            login.mechanism.clone(),
        ));
        out.push(("kaas.inter.broker.user", login.user.clone()));
    }
    match &c.standard_authorizer {
        Some(a) => out.extend([
            ("authorizer.class.name", STANDARD_AUTHORIZER.to_string()),
            (
                "super.users",
                a.super_users.iter().cloned().collect::<Vec<_>>().join(";"),
            ),
            (
                "allow.everyone.if.no.acl.found",
                a.allow_if_no_acl.to_string(),
            ),
        ]),
        None => out.push(("authorizer.class.name", String::new())),
    }
    out
}
