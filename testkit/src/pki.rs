//! Certificates for TLS tests: a CA, a server certificate for the brokers
//! and client certificates, written as PEM files into a temporary folder.

use std::path::{Path, PathBuf};

use anyhow::Context;
use rcgen::{
    BasicConstraints, Certificate, CertificateParams, DistinguishedName, DnType,
    ExtendedKeyUsagePurpose, IsCa, KeyPair, KeyUsagePurpose,
};

pub struct TestPki {
    dir: tempfile::TempDir,
    ca: Certificate,
    ca_key: KeyPair,
    /// The CA's certificate: the trust store of clients and brokers.
    pub ca_cert: PathBuf,
    /// The brokers' certificate (for the host given; server and client
    /// use) and key.
    pub server_cert: PathBuf,
    pub server_key: PathBuf,
}

impl TestPki {
    /// A CA and a server certificate for `host` (and 127.0.0.1, localhost).
    pub fn new(host: &str) -> anyhow::Result<TestPki> {
        Self::for_hosts(&[host])
    }

    /// A CA and a server certificate naming every one of `hosts` (and
    /// 127.0.0.1, localhost).
    pub fn for_hosts(hosts: &[&str]) -> anyhow::Result<TestPki> {
        let dir = tempfile::tempdir()?;
        let ca_key = KeyPair::generate()?;
        let mut params = CertificateParams::new(Vec::<String>::new())?;
        params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        params
            .distinguished_name
            .push(DnType::CommonName, "kaas test CA");
        params.key_usages = vec![
            KeyUsagePurpose::KeyCertSign,
            KeyUsagePurpose::CrlSign,
            KeyUsagePurpose::DigitalSignature,
        ];
        let ca = params.self_signed(&ca_key)?;
        let ca_cert = dir.path().join("ca.pem");
        std::fs::write(&ca_cert, ca.pem())?;
        let pki = TestPki {
            server_cert: dir.path().join("server.pem"),
            server_key: dir.path().join("server.key"),
            dir,
            ca,
            ca_key,
            ca_cert,
        };
        pki.reissue_server_for(hosts)?;
        Ok(pki)
    }

    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// The server's key and certificate chain in one PEM file, as Apache's
    /// `ssl.keystore.location` of type PEM names them.
    pub fn server_keystore(&self) -> anyhow::Result<PathBuf> {
        let keystore = self.dir().join("server-keystore.pem");
        let pem = [
            std::fs::read(&self.server_key)?,
            std::fs::read(&self.server_cert)?,
        ]
        .concat();
        std::fs::write(&keystore, pem)?;
        Ok(keystore)
    }

    /// A new key and certificate for the brokers, over the old files (a
    /// rotation).
    pub fn reissue_server(&self, host: &str) -> anyhow::Result<()> {
        self.reissue_server_for(&[host])
    }

    fn reissue_server_for(&self, hosts: &[&str]) -> anyhow::Result<()> {
        let mut names: Vec<String> = hosts.iter().map(|h| h.to_string()).collect();
        names.extend(["localhost".into(), "127.0.0.1".into()]);
        names.sort();
        names.dedup();
        // Client use too: brokers present it when they call each other.
        let usage = vec![
            ExtendedKeyUsagePurpose::ServerAuth,
            ExtendedKeyUsagePurpose::ClientAuth,
        ];
        let (cert, key) = self.issue(names, "kaas-broker", usage)?;
        std::fs::write(&self.server_key, key)?;
        std::fs::write(&self.server_cert, cert).context("writing the server certificate")
    }

    /// A client certificate with subject `O=kaas,CN=<common_name>` (Java
    /// writes it `CN=<common_name>,O=kaas`): the certificate and key files.
    pub fn client(&self, common_name: &str) -> anyhow::Result<(PathBuf, PathBuf)> {
        let (cert, key) = self.issue(
            vec![],
            common_name,
            vec![ExtendedKeyUsagePurpose::ClientAuth],
        )?;
        let cert_path = self.dir.path().join(format!("{common_name}.pem"));
        let key_path = self.dir.path().join(format!("{common_name}.key"));
        std::fs::write(&cert_path, cert)?;
        std::fs::write(&key_path, key)?;
        Ok((cert_path, key_path))
    }

    /// Only the key of a new client certificate.
    pub fn client_key(&self, common_name: &str) -> anyhow::Result<PathBuf> {
        Ok(self.client(common_name)?.1)
    }

    fn issue(
        &self,
        names: Vec<String>,
        common_name: &str,
        usage: Vec<ExtendedKeyUsagePurpose>,
    ) -> anyhow::Result<(String, String)> {
        let key = KeyPair::generate()?;
        let mut params = CertificateParams::new(names)?;
        // The default name already holds a CN, which would come first.
        params.distinguished_name = DistinguishedName::new();
        params
            .distinguished_name
            .push(DnType::OrganizationName, "kaas");
        params
            .distinguished_name
            .push(DnType::CommonName, common_name);
        params.extended_key_usages = usage;
        params.key_usages = vec![KeyUsagePurpose::DigitalSignature];
        let cert = params.signed_by(&key, &self.ca, &self.ca_key)?;
        Ok((cert.pem(), key.serialize_pem()))
    }
}
