//! TLS on a listener (rustls): the certificate and key from PEM files,
//! reloaded when the files change so a rotated certificate (cert-manager,
//! a Kubernetes Secret) is served without a restart; optional client
//! certificates, whose subject names the connection's principal through
//! `ssl.principal.mapping.rules`.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use parking_lot::Mutex;
use rustls::server::WebPkiClientVerifier;
use rustls::{RootCertStore, ServerConfig};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::TlsAcceptor;
use tracing::{info, warn};

use crate::auth::ssl_principal::{subject_name, SslPrincipalMapper};
use crate::auth::Principal;

/// `ssl.client.auth`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ClientAuth {
    #[default]
    None,
    /// A certificate is asked for; a client without one is anonymous.
    Requested,
    /// A client without a certificate the trust store vouches for is refused.
    Required,
}

impl std::str::FromStr for ClientAuth {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s.trim().to_ascii_lowercase().as_str() {
            "none" => Ok(ClientAuth::None),
            "requested" => Ok(ClientAuth::Requested),
            "required" => Ok(ClientAuth::Required),
            other => Err(format!(
                "'{other}' is not a client authentication (none, requested, required)"
            )),
        }
    }
}

impl std::fmt::Display for ClientAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            ClientAuth::None => "none",
            ClientAuth::Requested => "requested",
            ClientAuth::Required => "required",
        })
    }
}

/// A TLS listener's settings.
#[derive(Debug, Clone)]
pub struct TlsSettings {
    /// The certificate chain, leaf first (PEM).
    pub cert: PathBuf,
    /// Its private key (PEM: PKCS#8, PKCS#1 or SEC1, unencrypted).
    pub key: PathBuf,
    /// The certificates client certificates must chain to (PEM).
    pub client_ca: Option<PathBuf>,
    pub client_auth: ClientAuth,
    pub principal_mapper: SslPrincipalMapper,
}

/// How often the files are looked at for a change.
const RELOAD_CHECK: Duration = Duration::from_secs(1);

/// The acceptor of the files as they are now.
pub struct TlsListener {
    settings: TlsSettings,
    current: Mutex<Loaded>,
}

struct Loaded {
    acceptor: TlsAcceptor,
    stamps: Vec<Option<(SystemTime, u64)>>,
    checked: Instant,
}

impl TlsListener {
    /// Loads the files; an unreadable or inconsistent one is an error here,
    /// at start, rather than at the first client.
    pub fn new(settings: TlsSettings) -> Result<TlsListener, String> {
        if settings.client_auth != ClientAuth::None && settings.client_ca.is_none() {
            return Err(
                "client certificates need a trust store (ssl.truststore.location)".to_string(),
            );
        }
        let acceptor = load(&settings)?;
        let stamps = stamps(&settings);
        Ok(TlsListener {
            settings,
            current: Mutex::new(Loaded {
                acceptor,
                stamps,
                checked: Instant::now(),
            }),
        })
    }

    /// The acceptor for the next connection, reloaded first when the files
    /// changed (looked at no more than once a second).
    pub fn acceptor(&self) -> TlsAcceptor {
        self.acceptor_at(Instant::now())
    }

    fn acceptor_at(&self, now: Instant) -> TlsAcceptor {
        let mut current = self.current.lock();
        if now.saturating_duration_since(current.checked) >= RELOAD_CHECK {
            current.checked = now;
            let stamps = stamps(&self.settings);
            if stamps != current.stamps {
                match load(&self.settings) {
                    Ok(acceptor) => {
                        info!(cert = %self.settings.cert.display(), "TLS files changed: serving the new certificate");
                        current.acceptor = acceptor;
                        current.stamps = stamps;
                    }
                    // Halfway through a rotation, say: serve the old one and
                    // look again.
                    Err(e) => {
                        warn!(error = %e, "TLS files changed but cannot be loaded; serving the previous ones")
                    }
                }
            }
        }
        current.acceptor.clone()
    }

    /// Who a handshake's client is: its certificate's subject mapped by
    /// the rules, or anonymous without a certificate.
    pub fn principal(&self, conn: &rustls::ServerConnection) -> Result<Principal, String> {
        let Some(cert) = conn.peer_certificates().and_then(|c| c.first()) else {
            return Ok(Principal::anonymous());
        };
        let subject = subject_name(cert)?;
        Ok(Principal::user(
            &self.settings.principal_mapper.name(&subject)?,
        ))
    }
}

/// Modification time and length of each file: a rotation changes one.
fn stamps(s: &TlsSettings) -> Vec<Option<(SystemTime, u64)>> {
    [Some(&s.cert), Some(&s.key), s.client_ca.as_ref()]
        .into_iter()
        .flatten()
        .map(|p| {
            let m = std::fs::metadata(p).ok()?;
            Some((m.modified().ok()?, m.len()))
        })
        .collect()
}

fn load(s: &TlsSettings) -> Result<TlsAcceptor, String> {
    let certs = read_certs(&s.cert)?;
    let key = PrivateKeyDer::from_pem_file(&s.key)
        .map_err(|e| format!("cannot read a private key from {}: {e}", s.key.display()))?;
    let provider = Arc::new(fastest_first());
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?;
    let builder = match (&s.client_ca, s.client_auth) {
        (Some(ca), auth) if auth != ClientAuth::None => {
            let mut roots = RootCertStore::empty();
            for c in read_certs(ca)? {
                roots.add(c).map_err(|e| format!("{}: {e}", ca.display()))?;
            }
            let verifier = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
            let verifier = if auth == ClientAuth::Requested {
                verifier.allow_unauthenticated()
            } else {
                verifier
            };
            builder.with_client_cert_verifier(verifier.build().map_err(|e| e.to_string())?)
        }
        _ => builder.with_no_client_auth(),
    };
    let mut config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "the certificate in {} and the key in {} do not make a server identity: {e}",
            s.cert.display(),
            s.key.display()
        )
    })?;
    // Ours, not the client's: OpenSSL (librdkafka, kafka-python) and Java
    // list AES-256-GCM first.
    config.ignore_client_order = true;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// ring's cipher suites with AES-128-GCM first: as safe, and cheaper than
/// AES-256-GCM (10 AES rounds instead of 14) for every byte produced and
/// fetched, on both ends.
fn fastest_first() -> rustls::crypto::CryptoProvider {
    use rustls::CipherSuite::*;
    let mut provider = rustls::crypto::ring::default_provider();
    // A stable sort: the rest keep ring's order.
    provider.cipher_suites.sort_by_key(|s| {
        !matches!(
            s.suite(),
            TLS13_AES_128_GCM_SHA256
                | TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
                | TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        )
    });
    provider
}

fn read_certs(path: &std::path::Path) -> Result<Vec<CertificateDer<'static>>, String> {
    kaas_client::tls::read_certs(path).map_err(|e| format!("{e:#}"))
}

#[cfg(test)]
mod tests;
