use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use kafka_protocol::messages::{SaslAuthenticateRequest, SaslHandshakeRequest};

use super::*;
use crate::auth::scram::ScramCredential;

fn users() -> ScramUsers {
    let mut users = ScramUsers::new();
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    users.entry("user".into()).or_default().insert(
        Mechanism::ScramSha256,
        ScramCredential::derive(Mechanism::ScramSha256, "pencil", &salt, 4096),
    );
    users
}

fn handshake(mechanism: &'static str) -> RequestKind {
    RequestKind::SaslHandshake(
        SaslHandshakeRequest::default().with_mechanism(StrBytes::from_static_str(mechanism)),
    )
}

fn auth(bytes: &'static [u8]) -> RequestKind {
    RequestKind::SaslAuthenticate(
        SaslAuthenticateRequest::default().with_auth_bytes(bytes::Bytes::from_static(bytes)),
    )
}

fn error_of(step: &Step) -> i16 {
    match step {
        Step::Answer(r) | Step::Authenticated(r, _) | Step::Refused(r, _) => match r {
            ResponseKind::SaslHandshake(r) => r.error_code,
            ResponseKind::SaslAuthenticate(r) => r.error_code,
            _ => panic!("not a SASL response"),
        },
        _ => panic!("no answer"),
    }
}

/// RFC 7677's exchange through the connection's steps.
#[test]
fn scram_sha_256_authenticates_the_user() {
    let mut a = Authenticator::new(&SaslSettings::default());
    let users = users();
    let nonce = || "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0".to_string();
    assert!(matches!(
        a.step(
            ApiKey::ApiVersions,
            2,
            &RequestKind::ApiVersions(Default::default()),
            &users,
            nonce
        ),
        Step::Serve
    ));
    let s = a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("SCRAM-SHA-256"),
        &users,
        nonce,
    );
    assert_eq!(error_of(&s), 0);
    let s = a.step(
        ApiKey::SaslAuthenticate,
        2,
        &auth(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"),
        &users,
        nonce,
    );
    assert_eq!(error_of(&s), 0);
    let s = a.step(
            ApiKey::SaslAuthenticate,
            2,
            &auth(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="),
            &users,
            nonce,
        );
    let Step::Authenticated(ResponseKind::SaslAuthenticate(r), user) = s else {
        panic!("not authenticated")
    };
    assert_eq!(user, "user");
    assert_eq!(
        &r.auth_bytes[..],
        b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    );
}

#[test]
fn plain_authenticates_against_the_scram_credentials() {
    let users = users();
    let mut a = Authenticator::new(&SaslSettings::default());
    a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("PLAIN"),
        &users,
        String::new,
    );
    assert!(matches!(
        a.step(ApiKey::SaslAuthenticate, 2, &auth(b"\0user\0pencil"), &users, String::new),
        Step::Authenticated(_, u) if u == "user"
    ));
    let mut a = Authenticator::new(&SaslSettings::default());
    a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("PLAIN"),
        &users,
        String::new,
    );
    let s = a.step(
        ApiKey::SaslAuthenticate,
        2,
        &auth(b"\0user\0wrong"),
        &users,
        String::new,
    );
    assert!(matches!(s, Step::Refused(..)));
    assert_eq!(error_of(&s), E::SaslAuthenticationFailed.code());
}

#[test]
fn out_of_turn_requests_and_unknown_mechanisms_are_refused() {
    let users = users();
    let mut a = Authenticator::new(&SaslSettings::default());
    let metadata = RequestKind::Metadata(Default::default());
    assert!(matches!(
        a.step(ApiKey::Metadata, 2, &metadata, &users, String::new),
        Step::Close(_)
    ));
    let s = a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("GSSAPI"),
        &users,
        String::new,
    );
    assert!(matches!(s, Step::Refused(..)));
    assert_eq!(error_of(&s), E::UnsupportedSaslMechanism.code());
    let Step::Refused(ResponseKind::SaslHandshake(r), _) = s else {
        panic!()
    };
    assert_eq!(r.mechanisms.len(), 3, "the enabled mechanisms are listed");
    let mut a = Authenticator::new(&SaslSettings::default());
    let s = a.step(
        ApiKey::SaslAuthenticate,
        2,
        &auth(b"\0user\0pencil"),
        &users,
        String::new,
    );
    assert_eq!(error_of(&s), E::IllegalSaslState.code());
    // Only what is enabled is offered.
    let only_512 = SaslSettings {
        mechanisms: vec![SaslMechanism::Scram(Mechanism::ScramSha512)],
        ..SaslSettings::default()
    };
    let mut a = Authenticator::new(&only_512);
    let s = a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("PLAIN"),
        &users,
        String::new,
    );
    assert_eq!(error_of(&s), E::UnsupportedSaslMechanism.code());
}

#[test]
fn a_malformed_scram_message_fails_authentication() {
    let users = users();
    let mut a = Authenticator::new(&SaslSettings::default());
    a.step(
        ApiKey::SaslHandshake,
        2,
        &handshake("SCRAM-SHA-256"),
        &users,
        || "n".into(),
    );
    let s = a.step(
        ApiKey::SaslAuthenticate,
        2,
        &auth(b"\xff\xfe garbage"),
        &users,
        || "n".into(),
    );
    assert_eq!(error_of(&s), E::SaslAuthenticationFailed.code());
}

/// PLAIN through `a` as `user` / `password`, the SaslAuthenticate at
/// `version`.
fn plain_login(
    a: &mut Authenticator,
    users: &ScramUsers,
    login: &'static [u8],
    version: i16,
) -> Step {
    a.step(
        ApiKey::SaslHandshake,
        1,
        &handshake("PLAIN"),
        users,
        String::new,
    );
    a.step(
        ApiKey::SaslAuthenticate,
        version,
        &auth(login),
        users,
        String::new,
    )
}

fn lifetime_of(step: &Step) -> i64 {
    match step {
        Step::Authenticated(ResponseKind::SaslAuthenticate(r), _) => r.session_lifetime_ms,
        _ => panic!("not authenticated"),
    }
}

fn message_of(step: &Step) -> String {
    match step {
        Step::Refused(ResponseKind::SaslAuthenticate(r), _) => {
            r.error_message.as_deref().unwrap_or_default().to_string()
        }
        _ => panic!("not refused"),
    }
}

/// KIP-368: the answer tells the session's lifetime
/// (`connections.max.reauth.ms`) to clients of SaslAuthenticate v1+;
/// a re-authentication keeps the user and the mechanism, with Apache's
/// messages when it does not (SaslServerAuthenticatorTest's
/// testCannotReauthenticateWithDifferentPrincipal and
/// testCannotReauthenticateWithDifferentMechanism, over PLAIN).
#[test]
fn reauthentication_keeps_the_user_and_the_mechanism() {
    let mut users = users();
    let salt = B64.decode("W22ZaJ0SNY7soEsUEjb6gQ==").unwrap();
    users.entry("other".into()).or_default().insert(
        Mechanism::ScramSha256,
        ScramCredential::derive(Mechanism::ScramSha256, "other-pw", &salt, 4096),
    );
    let settings = SaslSettings {
        max_reauth_ms: 5_000,
        ..SaslSettings::default()
    };
    let mut a = Authenticator::new(&settings);
    let step = plain_login(&mut a, &users, b"\0user\0pencil", 2);
    assert_eq!(lifetime_of(&step), 5_000);
    let Step::Authenticated(_, user) = step else {
        unreachable!()
    };
    let session = a.session(user).unwrap();
    assert_eq!(session.mechanism, SaslMechanism::Plain);
    assert!(session.supports_reauthentication);

    // A v0 client is told no lifetime and cannot re-authenticate.
    let mut v0 = Authenticator::new(&settings);
    let step = plain_login(&mut v0, &users, b"\0user\0pencil", 0);
    assert_eq!(lifetime_of(&step), 0);
    assert!(!v0.session("user".into()).unwrap().supports_reauthentication);

    // The same user again: a new session.
    let mut again = Authenticator::reauthenticate(&settings, &session);
    let step = plain_login(&mut again, &users, b"\0user\0pencil", 2);
    assert_eq!(lifetime_of(&step), 5_000);

    // Another user: refused.
    let mut other = Authenticator::reauthenticate(&settings, &session);
    let step = plain_login(&mut other, &users, b"\0other\0other-pw", 2);
    assert_eq!(error_of(&step), E::SaslAuthenticationFailed.code());
    assert_eq!(
        message_of(&step),
        "Cannot change principals during re-authentication from User.user: User.other"
    );

    // Another mechanism: the handshake is answered, the exchange refused.
    let mut scram = Authenticator::reauthenticate(&settings, &session);
    let step = scram.step(
        ApiKey::SaslHandshake,
        1,
        &handshake("SCRAM-SHA-256"),
        &users,
        String::new,
    );
    assert_eq!(error_of(&step), 0);
    let step = scram.step(
        ApiKey::SaslAuthenticate,
        2,
        &auth(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"),
        &users,
        String::new,
    );
    assert_eq!(
            message_of(&step),
            "SASL mechanism 'SCRAM-SHA-256' requested by client is not supported for re-authentication of mechanism 'PLAIN'"
        );

    // Sessions do not expire unless connections.max.reauth.ms is set.
    let mut plain = Authenticator::new(&SaslSettings::default());
    assert_eq!(
        lifetime_of(&plain_login(&mut plain, &users, b"\0user\0pencil", 2)),
        0
    );
}
