//! A broker's listeners (Apache's `listeners`): each has a name, a security
//! protocol (TLS, SASL, both or neither) and the address its clients are
//! told. The first is the inter-broker listener: the address the
//! assignment names, that the controller probes and other brokers call.

use std::sync::Arc;

use super::sasl::SaslSettings;
use super::tls::{TlsListener, TlsSettings};

/// One listener as configured.
#[derive(Debug, Clone)]
pub struct ListenerConfig {
    /// `CLIENT` of `CLIENT://0.0.0.0:9092`.
    pub name: String,
    /// Host and port its clients reach this broker at (before an
    /// assignment names them).
    pub advertised_host: String,
    pub advertised_port: u16,
    pub sasl: Option<SaslSettings>,
    pub tls: Option<TlsSettings>,
}

/// The name Apache gives a listener of one protocol when the configuration
/// names none (`listeners=SASL_SSL://:9092`).
pub fn protocol_name(sasl: bool, tls: bool) -> &'static str {
    match (sasl, tls) {
        (false, false) => "PLAINTEXT",
        (false, true) => "SSL",
        (true, false) => "SASL_PLAINTEXT",
        (true, true) => "SASL_SSL",
    }
}

impl ListenerConfig {
    /// Its security protocol, as `listener.security.protocol.map` writes it.
    pub fn protocol(&self) -> &'static str {
        protocol_name(self.sasl.is_some(), self.tls.is_some())
    }
}

/// One listener as its connections use it.
pub struct Listener {
    pub config: ListenerConfig,
    /// Its TLS, the certificate reloaded when its files change.
    pub tls: Option<Arc<TlsListener>>,
}

impl Listener {
    /// Refuses TLS files it cannot load, so a bad one stops the start.
    pub fn open(config: ListenerConfig) -> std::io::Result<Listener> {
        let tls = match &config.tls {
            Some(settings) => Some(Arc::new(TlsListener::new(settings.clone()).map_err(
                |e| {
                    std::io::Error::new(
                        std::io::ErrorKind::InvalidInput,
                        format!("listener {}: TLS: {e}", config.name),
                    )
                },
            )?)),
            None => None,
        };
        Ok(Listener { config, tls })
    }

    pub fn name(&self) -> &str {
        &self.config.name
    }

    pub fn sasl(&self) -> Option<&SaslSettings> {
        self.config.sasl.as_ref()
    }
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("name", &self.config.name)
            .field("protocol", &self.config.protocol())
            .finish()
    }
}
