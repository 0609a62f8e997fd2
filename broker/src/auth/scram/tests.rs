use super::*;

// RFC 7677's example exchange (SCRAM-SHA-256): user "user", password
// "pencil".
const SALT: &str = "W22ZaJ0SNY7soEsUEjb6gQ==";
const CLIENT_FIRST: &str = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
const SERVER_NONCE: &str = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";
const SERVER_FIRST: &str =
    "r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096";
const FINAL_WITHOUT_PROOF: &str = "c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0";

fn credential(m: Mechanism) -> ScramCredential {
    ScramCredential::derive(m, "pencil", &B64.decode(SALT).unwrap(), 4096)
}

fn exchange(m: Mechanism, proof: &str) -> Result<Authenticated, SaslError> {
    let mut server = ScramServer::new(m, SERVER_NONCE.into());
    let first = server
        .client_first(CLIENT_FIRST.as_bytes(), |u| {
            (u == "user").then(|| credential(m))
        })
        .unwrap();
    assert_eq!(first, SERVER_FIRST);
    server.client_final(format!("{FINAL_WITHOUT_PROOF},p={proof}").as_bytes())
}

#[test]
fn rfc_7677_example_exchange() {
    let done = exchange(
        Mechanism::ScramSha256,
        "dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    )
    .unwrap();
    assert_eq!(done.user, "user");
    assert_eq!(
        done.server_final,
        "v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
}

/// The same exchange with SHA-512; the expected values were computed
/// with Python's hashlib and hmac, independently of this code.
#[test]
fn sha_512_exchange_matches_an_independent_computation() {
    let c = credential(Mechanism::ScramSha512);
    assert_eq!(
        B64.encode(&c.stored_key),
        "6AAub3065EYRmyFpM2RNwqK+eGnrkYuEWbXn19LsEmBqzu8QaCXNc1FwpnX9NhH2hK/60dzj9DoO5DvVkOHbvg=="
    );
    let done = exchange(
        Mechanism::ScramSha512,
        "gMGXRcevScNtxZ6/8lQYpGtnsNAc3mGcmNomv+xnoOMw+3R2xNJdMNnzMlTN8PPC6wdp6dybEmDYXYTxwnYPJQ==",
    )
    .unwrap();
    assert_eq!(
            done.server_final,
            "v=ZQnYEgWQMFmmsM8aQMF0nDDCy/AgCzkwk8CmMZYcMg0vSVlKDanekLtifDSeVGT4+5ZxXnJq199RVG2rR7N7Zw=="
        );
}

/// librdkafka before 2.6.1 sends its nonce again in front of the
/// server's; Apache accepts that since 3.8.1, and so does kaas. The
/// proof is over the message as sent.
#[test]
fn a_client_nonce_repeated_in_the_final_message_is_accepted() {
    use ring::digest;
    let m = Mechanism::ScramSha256;
    let c = credential(m);
    let mut server = ScramServer::new(m, "srv".into());
    server
        .client_first(b"n,,n=user,r=cli", |_| Some(c.clone()))
        .unwrap();
    let salted = salted_password(m, b"pencil", &c.salt, c.iterations);
    let client_key = kaas_client::scram::hmac_of(m, &salted, b"Client Key");
    let stored = digest::digest(m.digest(), &client_key);
    let without_proof = "c=biws,r=cliclisrv";
    let server_first = format!("r=clisrv,s={},i=4096", B64.encode(&c.salt));
    let auth_message = format!("n=user,r=cli,{server_first},{without_proof}");
    let signature = kaas_client::scram::hmac_of(m, stored.as_ref(), auth_message.as_bytes());
    let proof: Vec<u8> = client_key
        .iter()
        .zip(&signature)
        .map(|(k, s)| k ^ s)
        .collect();
    let done = server
        .client_final(format!("{without_proof},p={}", B64.encode(proof)).as_bytes())
        .unwrap();
    assert_eq!(done.user, "user");
}

#[test]
fn a_wrong_proof_fails_and_names_the_user_only() {
    let e = exchange(
        Mechanism::ScramSha256,
        "AAAAZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=",
    )
    .unwrap_err();
    assert_eq!(e, SaslError::InvalidCredentials("user".into()));
    assert!(!format!("{e}").contains("pencil"));
}

/// An unknown user is not told apart at the first step: a salt and the
/// minimum iterations, the same for the same name and nonce.
#[test]
fn an_unknown_user_fails_at_the_proof_not_before() {
    let first = |user: &str| {
        let mut s = ScramServer::new(Mechanism::ScramSha256, "srv".into());
        let f = s
            .client_first(format!("n,,n={user},r=abc").as_bytes(), |_| None)
            .unwrap();
        (s, f)
    };
    let (mut s, f) = first("mallory");
    assert!(f.starts_with("r=abcsrv,s="), "{f}");
    assert!(f.ends_with(",i=4096"), "{f}");
    assert_eq!(f, first("mallory").1);
    assert_eq!(
        s.client_final(b"c=biws,r=abcsrv,p=AAAA").unwrap_err(),
        SaslError::InvalidCredentials("mallory".into())
    );
}

#[test]
fn malformed_and_out_of_order_messages_are_refused() {
    let mut s = ScramServer::new(Mechanism::ScramSha256, "srv".into());
    assert_eq!(
        s.client_final(b"c=biws,r=x,p=AAAA").unwrap_err(),
        SaslError::OutOfOrder("client-final")
    );
    let first =
        |m: &[u8]| ScramServer::new(Mechanism::ScramSha256, "srv".into()).client_first(m, |_| None);
    assert_eq!(
        first(b"p=tls-unique,,n=u,r=a").unwrap_err(),
        SaslError::ChannelBinding
    );
    assert!(first(b"n,,r=a,n=u").is_err(), "attributes out of order");
    assert!(first(b"n,,n=u").is_err(), "no nonce");
    assert!(first(b"n,,n=bad=name,r=a").is_err(), "a bare '='");
    assert!(first(&[0xff, 0xfe]).is_err(), "not UTF-8");
    assert_eq!(
        first(b"n,a=other,n=u,r=a").unwrap_err(),
        SaslError::AuthorizationId("other".into())
    );
    assert!(first(b"n,a=u,n=u,r=a").is_ok());
    assert_eq!(decode_saslname("a=2Cb=3Dc").unwrap(), "a,b=c");
    // A replayed nonce or a forged channel binding fails the final.
    let mut s = ScramServer::new(Mechanism::ScramSha256, "srv".into());
    s.client_first(b"n,,n=u,r=a", |_| None).unwrap();
    assert_eq!(
        s.client_final(b"c=biws,r=other,p=AAAA").unwrap_err(),
        SaslError::Malformed("nonce")
    );
    let mut s = ScramServer::new(Mechanism::ScramSha256, "srv".into());
    s.client_first(b"n,,n=u,r=a", |_| None).unwrap();
    assert_eq!(
        s.client_final(b"c=eSws,r=asrv,p=AAAA").unwrap_err(),
        SaslError::Malformed("channel binding")
    );
}

#[test]
fn plain_checks_against_scram_credentials() {
    let c = credential(Mechanism::ScramSha512);
    let verify = |user: &str, pw: &str| user == "user" && c.matches(pw);
    assert_eq!(plain(b"\0user\0pencil", verify).unwrap(), "user");
    assert_eq!(plain(b"user\0user\0pencil", verify).unwrap(), "user");
    assert_eq!(
        plain(b"\0user\0pen", verify).unwrap_err(),
        SaslError::InvalidCredentials("user".into())
    );
    assert_eq!(
        plain(b"admin\0user\0pencil", verify).unwrap_err(),
        SaslError::AuthorizationId("admin".into())
    );
    assert!(plain(b"\0user\0", verify).is_err());
    assert!(plain(b"\0user\0pencil\0more", verify).is_err());
    assert!(plain(b"user-and-password", verify).is_err());
}

#[test]
fn credentials_store_no_password_and_print_no_keys() {
    let c = credential(Mechanism::ScramSha256);
    let json = serde_json::to_string(&c).unwrap();
    assert!(!json.contains("pencil"));
    assert!(json.contains("\"SCRAM-SHA-256\""), "{json}");
    assert_eq!(serde_json::from_str::<ScramCredential>(&json).unwrap(), c);
    let printed = format!("{c:?}");
    assert!(!printed.contains(&B64.encode(&c.stored_key)));
    assert!(c.matches("pencil"));
    assert!(!c.matches("pencil2"));
}
