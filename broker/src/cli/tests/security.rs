//! The command line's security and listener tests: TLS, SASL and the
//! authorizer from flags and from server.properties, several listeners
//! with their own settings, `--override` lines.

use super::{config_file, resolve, serve};
use crate::cli::*;
use crate::net::sasl::SaslMechanism;
use crate::settings::security;

fn local(args: &[&str]) -> anyhow::Result<Local> {
    match resolve(args)? {
        Resolved::Local(l) => Ok(l),
        _ => unreachable!("a local command"),
    }
}

#[test]
fn local_tls_flags_make_every_broker_serve_tls() {
    let l = local(&[
        "local",
        "--tls-cert",
        "/c.pem",
        "--tls-key",
        "/k.pem",
        "--tls-ca",
        "/ca.pem",
        "--ssl-client-auth",
        "required",
        "--ssl-principal-mapping-rules",
        "RULE:^CN=(.*?),O=kaas$/$1/L,DEFAULT",
    ])
    .unwrap();
    let tls = l.tls.expect("TLS settings");
    assert_eq!(tls.cert, PathBuf::from("/c.pem"));
    assert_eq!(tls.key, PathBuf::from("/k.pem"));
    assert_eq!(tls.client_ca, Some(PathBuf::from("/ca.pem")));
    assert_eq!(tls.client_auth, ClientAuth::Required);
    assert_eq!(tls.principal_mapper.name("CN=Ann,O=kaas").unwrap(), "ann");

    assert!(local(&["local"]).unwrap().tls.is_none());
    let err = local(&[
        "local",
        "--tls-cert",
        "/c.pem",
        "--tls-key",
        "/k.pem",
        "--ssl-principal-mapping-rules",
        "rule:x/y/",
    ])
    .expect_err("a bad rule");
    assert!(format!("{err}").contains("Invalid rule"), "{err}");
    let cli = |args: &[&str]| {
        let mut argv = vec!["kaas-broker"];
        argv.extend_from_slice(args);
        Cli::try_parse_from(argv).map(|_| ())
    };
    assert!(
        cli(&["local", "--tls-cert", "/c.pem"]).is_err(),
        "a certificate needs its key"
    );
    assert!(cli(&["local", "--ssl-client-auth", "maybe"]).is_err());
}

/// A serve command's security: `--sasl --admin-password --tls-*` and
/// the same through Apache's keys in server.properties.
#[test]
fn serve_security_from_flags_and_from_server_properties() {
    let pki = kaas_testkit::pki::TestPki::new("127.0.0.1").unwrap();
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let (cert, key, ca) = (
        pki.server_cert.to_str().unwrap(),
        pki.server_key.to_str().unwrap(),
        pki.ca_cert.to_str().unwrap(),
    );
    let flags = serve(&[
        "serve",
        "--id",
        "0",
        "--data",
        d,
        "--sasl",
        "--admin-password",
        "pw",
        "--tls-cert",
        cert,
        "--tls-key",
        key,
        "--tls-ca",
        ca,
    ]);
    let c = &flags.config;
    let listener = &c.listeners[0];
    assert_eq!(listener.name, "SASL_SSL");
    assert_eq!(listener.tls.as_ref().unwrap().cert, pki.server_cert);
    assert_eq!(
        listener.sasl.as_ref().unwrap().mechanisms,
        SaslMechanism::ALL
    );
    let login = c.inter_broker.sasl.as_ref().unwrap();
    assert_eq!(
        (login.user.as_str(), login.password.as_str()),
        ("admin", "pw")
    );
    assert!(c.inter_broker.tls.is_some());
    let authorizer = c.standard_authorizer.as_ref().unwrap();
    assert_eq!(authorizer.super_users, ["User:admin".to_string()].into());
    assert!(!authorizer.allow_if_no_acl);
    // The admin's credentials are on the volume: salted, no password.
    let users = std::fs::read_to_string(data.path().join("__cluster/scram_users")).unwrap();
    assert!(
        users.contains("admin") && !users.contains("\"pw\""),
        "{users}"
    );
    for (key, _) in flags.effective() {
        assert!(settings::setting_type(key).is_some(), "{key} has no type");
    }
    let line = settings::effective_line(&flags.effective());
    assert!(
        line.contains("listeners=SASL_SSL://127.0.0.1:9092 "),
        "{line}"
    );
    assert!(line.contains("super.users=User:admin "), "{line}");
    // No value is the password (a temporary folder's random name may end
    // in "pw": values are compared whole).
    assert!(!line.split(' ').any(|kv| kv.ends_with("=pw")), "{line}");

    // Apache's keys: a PEM key store holding key and chain, the
    // listener's protocol, mechanisms, the JAAS login, the authorizer.
    let keystore = pki.server_keystore().unwrap();
    let file = config_file(&format!(
        "node.id=1\nlog.dirs={d}\n\
         listeners=BROKERS://127.0.0.1:9093\n\
         listener.security.protocol.map=BROKERS:SASL_SSL\n\
         ssl.keystore.type=PEM\nssl.keystore.location={}\n\
         ssl.truststore.type=PEM\nssl.truststore.location={ca}\n\
         ssl.client.auth=requested\n\
         sasl.enabled.mechanisms=SCRAM-SHA-512\n\
         sasl.mechanism.inter.broker.protocol=SCRAM-SHA-512\n\
         listener.name.brokers.scram-sha-512.sasl.jaas.config=\
         org.apache.kafka.common.security.scram.ScramLoginModule required \
         username=\"broker\" password=\"broker-pw\";\n\
         authorizer.class.name={}\n\
         super.users=User:broker;User:ops\n\
         allow.everyone.if.no.acl.found=true\n",
        keystore.display(),
        security::STANDARD_AUTHORIZER,
    ));
    let from_file = serve(&["serve", "--config", file.path().to_str().unwrap()]);
    let c = &from_file.config;
    let tls = c.listeners[0].tls.as_ref().unwrap();
    assert_eq!((&tls.cert, &tls.key), (&keystore, &keystore));
    assert_eq!(tls.client_auth, ClientAuth::Requested);
    assert_eq!(
        c.listeners[0].sasl.as_ref().unwrap().mechanisms,
        [SaslMechanism::from_name("SCRAM-SHA-512").unwrap()]
    );
    let login = c.inter_broker.sasl.as_ref().unwrap();
    assert_eq!(
        (
            login.mechanism.as_str(),
            login.user.as_str(),
            login.password.as_str()
        ),
        ("SCRAM-SHA-512", "broker", "broker-pw")
    );
    let authorizer = c.standard_authorizer.as_ref().unwrap();
    assert_eq!(
        authorizer.super_users,
        ["User:broker".to_string(), "User:ops".to_string()].into()
    );
    assert!(authorizer.allow_if_no_acl);
    // The listener speaks TLS with the key store's identity.
    crate::net::tls::TlsListener::new(tls.clone()).expect("key and chain from one file");
    let line = settings::effective_line(&from_file.effective());
    assert!(!line.contains("broker-pw"), "{line}");
}

#[test]
fn serve_security_that_cannot_work_is_refused_saying_why() {
    let data = tempfile::tempdir().unwrap();
    let d = data.path().to_str().unwrap();
    let refused = |extra: &str| {
        let file = config_file(&format!("node.id=1\nlog.dirs={d}\n{extra}"));
        format!(
            "{:#}",
            resolve(&["serve", "--config", file.path().to_str().unwrap()]).unwrap_err()
        )
    };
    assert!(
        refused("listeners=SSL://:9093\n").contains("give ssl.keystore.location"),
        "an SSL listener without a key store"
    );
    assert!(
        refused("listeners=SASL_PLAINTEXT://:9093\n").contains("brokers' own login"),
        "a SASL listener without the brokers' login"
    );
    let refusal = refused(
        "listeners=SASL_PLAINTEXT://:9093\nsasl.enabled.mechanisms=PLAIN\n\
         sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required \
         username=\"b\" password=\"p\";\n",
    );
    assert!(
        refusal
            .contains("SCRAM-SHA-512 is not enabled on the inter-broker listener SASL_PLAINTEXT"),
        "the brokers' mechanism not enabled: {refusal}"
    );
    let err = resolve(&["serve", "--id", "0", "--data", d, "--admin-password", "pw"]);
    assert!(format!("{:#}", err.unwrap_err()).contains("give --sasl too"));
    // Without security settings: PLAINTEXT, no authorizer, as before.
    let plain = serve(&["serve", "--id", "0", "--data", d]);
    let listener = &plain.config.listeners[0];
    assert!(listener.tls.is_none() && listener.sasl.is_none());
    assert_eq!(listener.name, "PLAINTEXT");
    assert!(plain.config.standard_authorizer.is_none());
}

#[test]
fn security_settings_never_print_a_password() {
    let s = security::SecuritySettings {
        admin_password: Some("s3cret-admin".into()),
        inter_broker_login: Some(("broker".into(), "s3cret-broker".into())),
        ..Default::default()
    };
    let printed = format!("{s:?}");
    assert!(
        printed.contains("broker") && printed.contains("[hidden]"),
        "{printed}"
    );
    assert!(!printed.contains("s3cret"), "{printed}");
}

#[test]
fn several_listeners_each_with_its_protocol_and_own_settings() {
    let pki = kaas_testkit::pki::TestPki::new("127.0.0.1").unwrap();
    let data = tempfile::tempdir().unwrap();
    let keystore = pki.server_keystore().unwrap();
    let file = config_file(&format!(
        "node.id=1\nlog.dirs={}\n\
         listeners=CLIENT://0.0.0.0:19092,BROKERS://127.0.0.1:9093\n\
         advertised.listeners=CLIENT://kafka.example.com:19092,BROKERS://kaas-1.internal:9093\n\
         listener.security.protocol.map=CLIENT:SASL_SSL,BROKERS:SSL\n\
         inter.broker.listener.name=BROKERS\n\
         ssl.certificate.location.unused=1\n\
         ssl.keystore.type=PEM\n\
         listener.name.brokers.ssl.keystore.location={}\n\
         listener.name.client.ssl.keystore.location={}\n\
         ssl.truststore.location={}\n\
         ssl.client.auth=required\n\
         listener.name.client.ssl.client.auth=none\n\
         listener.name.client.sasl.enabled.mechanisms=SCRAM-SHA-512\n",
        data.path().display(),
        keystore.display(),
        keystore.display(),
        pki.ca_cert.display(),
    ));
    let s = serve(&["serve", "--config", file.path().to_str().unwrap()]);
    let [brokers, client] = &s.config.listeners[..] else {
        panic!("two listeners: {:?}", s.config.listeners);
    };
    // The inter-broker listener first: the address the assignment names.
    assert_eq!(brokers.name, "BROKERS");
    assert_eq!(s.listen, "127.0.0.1:9093".parse().unwrap());
    assert_eq!(
        (brokers.advertised_host.as_str(), brokers.advertised_port),
        ("kaas-1.internal", 9093)
    );
    assert!(brokers.sasl.is_none());
    assert_eq!(
        brokers.tls.as_ref().unwrap().client_auth,
        ClientAuth::Required
    );
    assert_eq!(client.name, "CLIENT");
    assert_eq!(s.more_listen, ["0.0.0.0:19092".parse().unwrap()]);
    assert_eq!(
        (client.advertised_host.as_str(), client.advertised_port),
        ("kafka.example.com", 19092)
    );
    assert_eq!(client.tls.as_ref().unwrap().client_auth, ClientAuth::None);
    assert_eq!(
        client.sasl.as_ref().unwrap().mechanisms,
        [SaslMechanism::from_name("SCRAM-SHA-512").unwrap()]
    );
    // Brokers call each other over TLS, presenting their certificate.
    assert!(s.config.inter_broker.tls.is_some() && s.config.inter_broker.sasl.is_none());
    let line = settings::effective_line(&s.effective());
    for shown in [
        "listeners=BROKERS://127.0.0.1:9093,CLIENT://0.0.0.0:19092 ",
        "advertised.listeners=BROKERS://kaas-1.internal:9093,CLIENT://kafka.example.com:19092 ",
        "listener.security.protocol.map=BROKERS:SSL,CLIENT:SASL_SSL ",
        "inter.broker.listener.name=BROKERS ",
    ] {
        assert!(line.contains(shown), "{shown}: {line}");
    }
    assert!(s
        .warnings
        .iter()
        .any(|w| w.starts_with("ssl.certificate.location.unused")));
}

/// A kubernetes.io/tls Secret holds the key and the chain in two files:
/// `kaas.ssl.key.location` names the key's, for one listener or all.
#[test]
fn a_listener_key_apart_from_its_certificate_chain() {
    let pki = kaas_testkit::pki::TestPki::new("127.0.0.1").unwrap();
    let data = tempfile::tempdir().unwrap();
    let file = config_file(&format!(
        "node.id=1\nlog.dirs={}\n\
         listeners=INTERNAL://127.0.0.1:9093,MTLS://0.0.0.0:19094\n\
         listener.security.protocol.map=INTERNAL:PLAINTEXT,MTLS:SSL\n\
         inter.broker.listener.name=INTERNAL\n\
         listener.name.mtls.ssl.keystore.location={}\n\
         listener.name.mtls.kaas.ssl.key.location={}\n\
         listener.name.mtls.ssl.truststore.location={}\n\
         listener.name.mtls.ssl.client.auth=required\n",
        data.path().display(),
        pki.server_cert.display(),
        pki.server_key.display(),
        pki.ca_cert.display(),
    ));
    let s = serve(&["serve", "--config", file.path().to_str().unwrap()]);
    let [internal, mtls] = &s.config.listeners[..] else {
        panic!("two listeners: {:?}", s.config.listeners);
    };
    assert!(internal.tls.is_none());
    let tls = mtls.tls.as_ref().unwrap();
    assert_eq!(
        (&tls.cert, &tls.key, tls.client_auth),
        (&pki.server_cert, &pki.server_key, ClientAuth::Required)
    );
}

#[test]
fn override_lines_go_over_the_file_as_apaches_override() {
    let file = config_file("node.id=1\nlog.dirs=/d\nnum.partitions=3\ngroup.max.size=7\n");
    let path = file.path().to_str().unwrap();
    let s = serve(&[
        "serve",
        "--config",
        path,
        "--override",
        "num.partitions=5",
        "--override",
        "listeners=PLAINTEXT://127.0.0.1:9095,CLIENT://127.0.0.1:9096",
        "--override",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CLIENT:PLAINTEXT",
    ]);
    assert_eq!(s.config.default_partitions, 5, "the override's");
    assert_eq!(s.config.groups.core.max_group_size, 7, "the file's");
    assert_eq!(s.listen, "127.0.0.1:9095".parse().unwrap());
    assert_eq!(s.config.listeners[1].name, "CLIENT");
    // Without a file too; a flag still wins.
    let s = serve(&[
        "serve",
        "--id",
        "2",
        "--data",
        "/d",
        "--override",
        "node.id=9",
        "--override",
        "num.partitions=4",
    ]);
    assert_eq!((s.config.id, s.config.default_partitions), (2, 4));
    let err = resolve(&[
        "serve",
        "--id",
        "0",
        "--data",
        "/d",
        "--override",
        "num.partitions",
    ]);
    assert!(format!("{:#}", err.unwrap_err()).contains("not KEY=VALUE"));
    let err = resolve(&[
        "serve",
        "--id",
        "0",
        "--data",
        "/d",
        "--override",
        "num.partitions=x",
    ]);
    let text = format!("{:#}", err.unwrap_err());
    assert!(
        text.contains("the --override lines") && text.contains("num.partitions"),
        "{text}"
    );
}
