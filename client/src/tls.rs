//! TLS to a broker (rustls): the trust store and, for SSL client
//! authentication, a certificate and key, all from PEM files.

use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use rustls::{ClientConfig, RootCertStore};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

/// How a client speaks TLS to brokers.
#[derive(Clone)]
pub struct ClientTls {
    config: Arc<ClientConfig>,
}

impl std::fmt::Debug for ClientTls {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClientTls")
            .field(
                "client_certificate",
                &self.config.client_auth_cert_resolver.has_certs(),
            )
            .finish_non_exhaustive()
    }
}

impl ClientTls {
    /// Trusts the certificates in `trust_store`; presents `identity`
    /// (certificate chain, key) when the broker asks for one.
    pub fn new(trust_store: &Path, identity: Option<(&Path, &Path)>) -> anyhow::Result<ClientTls> {
        let trusted = read_certs(trust_store)?;
        let identity = match identity {
            Some((cert, key)) => Some((
                read_certs(cert)?,
                PrivateKeyDer::from_pem_file(key)
                    .with_context(|| format!("cannot read a private key from {}", key.display()))?,
            )),
            None => None,
        };
        Self::build(trusted, identity)
            .with_context(|| format!("trusting {}", trust_store.display()))
    }

    /// Trusts the certificates of `pem` (a CA bundle held in memory, such
    /// as a Kubernetes Secret's `ca.crt`); presents no certificate.
    pub fn trusting_pem(pem: &[u8]) -> anyhow::Result<ClientTls> {
        let trusted: Vec<_> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .context("cannot read the trusted certificates")?;
        anyhow::ensure!(!trusted.is_empty(), "no certificate to trust");
        Self::build(trusted, None)
    }

    fn build(
        trusted: Vec<CertificateDer<'static>>,
        identity: Option<(Vec<CertificateDer<'static>>, PrivateKeyDer<'static>)>,
    ) -> anyhow::Result<ClientTls> {
        let mut roots = RootCertStore::empty();
        for cert in trusted {
            roots.add(cert).context("a trusted certificate")?;
        }
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider)
            .with_safe_default_protocol_versions()?
            .with_root_certificates(roots);
        let config = match identity {
            Some((chain, key)) => builder.with_client_auth_cert(chain, key)?,
            None => builder.with_no_client_auth(),
        };
        Ok(ClientTls {
            config: Arc::new(config),
        })
    }

    /// The handshake over `tcp`, checking the broker's certificate names
    /// `host` (a DNS name or an IP address).
    pub async fn connect(
        &self,
        host: &str,
        tcp: TcpStream,
    ) -> anyhow::Result<TlsStream<TcpStream>> {
        let name = ServerName::try_from(host.to_string())
            .with_context(|| format!("'{host}' is not a host name for TLS"))?;
        TlsConnector::from(self.config.clone())
            .connect(name, tcp)
            .await
            .with_context(|| format!("TLS handshake with {host}"))
    }
}

/// The certificates of a PEM file (the brokers' listeners read theirs with
/// it too).
pub fn read_certs(path: &Path) -> anyhow::Result<Vec<CertificateDer<'static>>> {
    let certs: Vec<_> = CertificateDer::pem_file_iter(path)
        .and_then(|certs| certs.collect::<Result<_, _>>())
        .with_context(|| format!("cannot read certificates from {}", path.display()))?;
    anyhow::ensure!(!certs.is_empty(), "no certificate in {}", path.display());
    Ok(certs)
}
