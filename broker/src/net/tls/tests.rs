use super::*;
use kaas_testkit::pki::TestPki;

fn settings(pki: &TestPki, auth: ClientAuth) -> TlsSettings {
    TlsSettings {
        cert: pki.server_cert.clone(),
        key: pki.server_key.clone(),
        client_ca: Some(pki.ca_cert.clone()),
        client_auth: auth,
        principal_mapper: SslPrincipalMapper::default(),
    }
}

#[test]
fn files_that_are_not_a_certificate_and_key_are_refused_at_start() {
    let pki = TestPki::new("localhost").unwrap();
    let mut s = settings(&pki, ClientAuth::None);
    s.key = pki.client_key("someone-else").unwrap();
    let err = TlsListener::new(s)
        .err()
        .expect("a key of another certificate");
    assert!(err.contains("do not make a server identity"), "{err}");
    let mut s = settings(&pki, ClientAuth::None);
    s.cert = pki.dir().join("missing.pem");
    let err = TlsListener::new(s).err().expect("a missing file");
    assert!(err.contains("missing.pem"), "{err}");
    let mut s = settings(&pki, ClientAuth::Required);
    s.client_ca = None;
    let err = TlsListener::new(s).err().expect("no trust store");
    assert!(err.contains("trust store"), "{err}");
}

#[test]
fn changed_files_are_loaded_at_the_next_check_and_broken_ones_are_not() {
    let pki = TestPki::new("localhost").unwrap();
    let listener = TlsListener::new(settings(&pki, ClientAuth::None)).unwrap();
    let first = listener.acceptor();
    let later = Instant::now() + RELOAD_CHECK;
    assert!(Arc::ptr_eq(
        first.config(),
        listener.acceptor_at(later).config()
    ));

    // A half-written rotation: the old identity stays.
    std::fs::write(&pki.server_cert, "not a certificate").unwrap();
    let later = later + RELOAD_CHECK;
    assert!(Arc::ptr_eq(
        first.config(),
        listener.acceptor_at(later).config()
    ));

    pki.reissue_server("localhost").unwrap();
    // Not before the next check...
    assert!(Arc::ptr_eq(
        first.config(),
        listener.acceptor_at(later).config()
    ));
    // ...then the new one.
    let rotated = listener.acceptor_at(later + RELOAD_CHECK);
    assert!(!Arc::ptr_eq(first.config(), rotated.config()));
}

#[test]
fn a_client_certificate_subject_is_written_as_java_writes_it() {
    let pki = TestPki::new("localhost").unwrap();
    let (cert, _) = pki.client("client-1").unwrap();
    let der = CertificateDer::from_pem_file(cert).unwrap();
    assert_eq!(subject_name(&der).unwrap(), "CN=client-1,O=kaas");
    let mapper = SslPrincipalMapper::from_rules("RULE:^CN=(.*?),O=kaas$/$1/U,DEFAULT").unwrap();
    assert_eq!(
        mapper.name(&subject_name(&der).unwrap()).unwrap(),
        "CLIENT-1"
    );
}

#[tokio::test]
async fn aes_128_gcm_is_chosen_over_a_client_preferring_aes_256() {
    let pki = TestPki::new("localhost").unwrap();
    let listener = TlsListener::new(settings(&pki, ClientAuth::None)).unwrap();
    // rustls' client lists AES-256-GCM first, as OpenSSL does.
    let mut roots = RootCertStore::empty();
    for c in read_certs(&pki.ca_cert).unwrap() {
        roots.add(c).unwrap();
    }
    let client = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots)
    .with_no_client_auth();
    let (near, far) = tokio::io::duplex(64 * 1024);
    let name = rustls_pki_types::ServerName::try_from("localhost").unwrap();
    let (server, client) = tokio::join!(
        listener.acceptor().accept(far),
        tokio_rustls::TlsConnector::from(Arc::new(client)).connect(name, near)
    );
    let (server, _client) = (server.unwrap(), client.unwrap());
    assert_eq!(
        server
            .get_ref()
            .1
            .negotiated_cipher_suite()
            .unwrap()
            .suite(),
        rustls::CipherSuite::TLS13_AES_128_GCM_SHA256
    );
}

#[test]
fn client_auth_is_read_as_apache_writes_it() {
    assert_eq!("REQUIRED".parse(), Ok(ClientAuth::Required));
    assert_eq!("requested".parse(), Ok(ClientAuth::Requested));
    assert_eq!("none".parse(), Ok(ClientAuth::None));
    assert!("maybe".parse::<ClientAuth>().is_err());
}
