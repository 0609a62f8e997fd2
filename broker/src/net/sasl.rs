//! SASL on a connection (KIP-43, KIP-152), as Apache's
//! `SaslServerAuthenticator` runs it: before authentication a connection
//! may send ApiVersions and SaslHandshake (the mechanism), then
//! SaslAuthenticate with the mechanism's bytes (PLAIN once, SCRAM twice);
//! any other request closes it. A failed authentication is answered
//! SASL_AUTHENTICATION_FAILED after `connection.failed.authentication.delay.ms`
//! and the connection is closed. Pure: the credentials are handed in.

use kafka_protocol::messages::{
    ApiKey, RequestKind, ResponseKind, SaslAuthenticateResponse, SaslHandshakeResponse,
};
use kafka_protocol::protocol::StrBytes;
use kafka_protocol::ResponseError as E;

use crate::auth::scram::{plain, Mechanism, ScramServer};
use crate::auth::scram_users::{credential, ScramUsers};

/// A SASL mechanism a listener offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SaslMechanism {
    Plain,
    Scram(Mechanism),
}

impl SaslMechanism {
    pub const ALL: [SaslMechanism; 3] = [
        SaslMechanism::Plain,
        SaslMechanism::Scram(Mechanism::ScramSha256),
        SaslMechanism::Scram(Mechanism::ScramSha512),
    ];

    pub fn name(self) -> &'static str {
        match self {
            SaslMechanism::Plain => "PLAIN",
            SaslMechanism::Scram(m) => m.name(),
        }
    }

    pub fn from_name(name: &str) -> Option<SaslMechanism> {
        SaslMechanism::ALL.into_iter().find(|m| m.name() == name)
    }
}

/// A SASL listener's settings.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SaslSettings {
    /// `sasl.enabled.mechanisms`.
    pub mechanisms: Vec<SaslMechanism>,
    /// `connection.failed.authentication.delay.ms` (Apache's default 100).
    pub failed_authentication_delay_ms: u64,
    /// `sasl.server.max.receive.size`: the largest frame before
    /// authentication (Apache's default 512 KiB), so an unauthenticated
    /// client cannot make the broker hold a large frame.
    pub max_receive_bytes: usize,
    /// `connections.max.reauth.ms` (KIP-368): a session's lifetime, told
    /// to the client, after which a request closes the connection unless
    /// the client re-authenticated. 0: sessions do not expire.
    pub max_reauth_ms: u64,
}

impl Default for SaslSettings {
    fn default() -> Self {
        SaslSettings {
            mechanisms: SaslMechanism::ALL.to_vec(),
            failed_authentication_delay_ms: 100,
            max_receive_bytes: 524_288,
            max_reauth_ms: 0,
        }
    }
}

enum State {
    Handshake,
    Authenticate(SaslMechanism),
    ScramFinal(Box<ScramServer>),
    /// A re-authentication asked for another mechanism: the next
    /// SaslAuthenticate is refused with this message (Apache's
    /// REAUTH_BAD_MECHANISM).
    BadMechanism(String),
    Done,
}

/// What the connection does with a request before authentication.
pub enum Step {
    /// An ApiVersions: served as on any connection.
    Serve,
    /// Answer, and go on authenticating.
    Answer(ResponseKind),
    /// Answer: the connection now belongs to this user.
    Authenticated(ResponseKind, String),
    /// Answer after the failed-authentication delay, then close. The text
    /// is for the log.
    Refused(ResponseKind, String),
    /// Close without an answer. The text is for the log.
    Close(String),
}

pub struct Authenticator {
    mechanisms: Vec<SaslMechanism>,
    state: State,
    session_lifetime_ms: u64,
    /// Re-authenticating (KIP-368): the session's mechanism and user, which
    /// must not change.
    previous: Option<(SaslMechanism, String)>,
    /// The mechanism of the handshake.
    mechanism: Option<SaslMechanism>,
    /// The client sent SaslAuthenticate v1 or later, so it can
    /// re-authenticate (Apache's `connectedClientSupportsReauthentication`).
    supports_reauthentication: bool,
}

/// An authenticated connection's SASL session.
#[derive(Clone, Debug)]
pub struct Session {
    pub mechanism: SaslMechanism,
    pub user: String,
    /// How long the session lasts (0: for ever).
    pub lifetime_ms: u64,
    pub supports_reauthentication: bool,
}

impl Authenticator {
    pub fn new(settings: &SaslSettings) -> Authenticator {
        Authenticator {
            mechanisms: settings.mechanisms.clone(),
            state: State::Handshake,
            session_lifetime_ms: settings.max_reauth_ms,
            previous: None,
            mechanism: None,
            supports_reauthentication: false,
        }
    }

    /// A re-authentication of `session` (KIP-368), begun by a SaslHandshake
    /// on the authenticated connection.
    pub fn reauthenticate(settings: &SaslSettings, session: &Session) -> Authenticator {
        Authenticator {
            previous: Some((session.mechanism, session.user.clone())),
            supports_reauthentication: true,
            ..Authenticator::new(settings)
        }
    }

    /// The session once `step` said [`Step::Authenticated`].
    pub fn session(&self, user: String) -> Option<Session> {
        Some(Session {
            mechanism: self.mechanism?,
            user,
            lifetime_ms: self.session_lifetime_ms,
            supports_reauthentication: self.supports_reauthentication,
        })
    }

    fn offered(&self) -> Vec<StrBytes> {
        self.mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect()
    }

    /// One request (at `version`) of a connection not yet authenticated;
    /// `nonce` draws the server's SCRAM nonce.
    pub fn step(
        &mut self,
        key: ApiKey,
        version: i16,
        request: &RequestKind,
        users: &ScramUsers,
        nonce: impl FnOnce() -> String,
    ) -> Step {
        match (key, request) {
            (ApiKey::ApiVersions, _) => Step::Serve,
            (ApiKey::SaslHandshake, RequestKind::SaslHandshake(r)) => {
                self.handshake(r.mechanism.as_str())
            }
            (ApiKey::SaslAuthenticate, RequestKind::SaslAuthenticate(r)) => {
                self.supports_reauthentication |= version >= 1;
                let step = self.authenticate(&r.auth_bytes, users, nonce);
                self.finish(step, version)
            }
            (key, _) => Step::Close(format!(
                "unexpected {key:?} request before SASL authentication"
            )),
        }
    }

    fn handshake(&mut self, mechanism: &str) -> Step {
        let resp = SaslHandshakeResponse::default().with_mechanisms(self.offered());
        if !matches!(self.state, State::Handshake) {
            return Step::Close("a second SaslHandshake".into());
        }
        match SaslMechanism::from_name(mechanism).filter(|m| self.mechanisms.contains(m)) {
            Some(m) => {
                self.state = match &self.previous {
                    Some((previous, _)) if *previous != m => State::BadMechanism(format!(
                        "SASL mechanism '{}' requested by client is not supported for re-authentication of mechanism '{}'",
                        m.name(),
                        previous.name()
                    )),
                    _ => State::Authenticate(m),
                };
                self.mechanism = Some(m);
                Step::Answer(ResponseKind::SaslHandshake(resp))
            }
            None => Step::Refused(
                ResponseKind::SaslHandshake(
                    resp.with_error_code(E::UnsupportedSaslMechanism.code()),
                ),
                format!("SASL mechanism {mechanism:?} is not enabled"),
            ),
        }
    }

    /// A successful exchange's answer carries the session's lifetime (v1+);
    /// a re-authentication must name the session's user.
    fn finish(&self, step: Step, version: i16) -> Step {
        let Step::Authenticated(ResponseKind::SaslAuthenticate(response), user) = step else {
            return step;
        };
        if let Some((_, previous)) = &self.previous {
            if *previous != user {
                let message = format!(
                    "Cannot change principals during re-authentication from User.{previous}: User.{user}"
                );
                return Step::Refused(
                    ResponseKind::SaslAuthenticate(
                        SaslAuthenticateResponse::default()
                            .with_error_code(E::SaslAuthenticationFailed.code())
                            .with_error_message(Some(StrBytes::from_string(message.clone()))),
                    ),
                    message,
                );
            }
        }
        let response = match version {
            0 => response,
            _ => response.with_session_lifetime_ms(self.session_lifetime_ms as i64),
        };
        Step::Authenticated(ResponseKind::SaslAuthenticate(response), user)
    }

    fn authenticate(
        &mut self,
        bytes: &[u8],
        users: &ScramUsers,
        nonce: impl FnOnce() -> String,
    ) -> Step {
        let answer = |bytes: Vec<u8>| {
            ResponseKind::SaslAuthenticate(
                SaslAuthenticateResponse::default().with_auth_bytes(bytes.into()),
            )
        };
        let failed = |mechanism: SaslMechanism, why: String| {
            let message = match mechanism {
                SaslMechanism::Plain => "Authentication failed: Invalid username or password".into(),
                SaslMechanism::Scram(m) => format!(
                    "Authentication failed during authentication due to invalid credentials with SASL mechanism {}",
                    m.name()
                ),
            };
            Step::Refused(
                ResponseKind::SaslAuthenticate(
                    SaslAuthenticateResponse::default()
                        .with_error_code(E::SaslAuthenticationFailed.code())
                        .with_error_message(Some(StrBytes::from_string(message))),
                ),
                why,
            )
        };
        match std::mem::replace(&mut self.state, State::Done) {
            State::Authenticate(SaslMechanism::Plain) => {
                let verify = |user: &str, password: &str| {
                    Mechanism::ALL
                        .iter()
                        .rev()
                        .find_map(|m| credential(users, user, *m))
                        .is_some_and(|c| c.matches(password))
                };
                match plain(bytes, verify) {
                    Ok(user) => Step::Authenticated(answer(Vec::new()), user),
                    Err(e) => failed(SaslMechanism::Plain, e.to_string()),
                }
            }
            State::Authenticate(SaslMechanism::Scram(m)) => {
                let mut server = ScramServer::new(m, nonce());
                match server.client_first(bytes, |user| credential(users, user, m)) {
                    Ok(first) => {
                        self.state = State::ScramFinal(Box::new(server));
                        Step::Answer(answer(first.into_bytes()))
                    }
                    Err(e) => failed(SaslMechanism::Scram(m), e.to_string()),
                }
            }
            State::ScramFinal(mut server) => {
                let m = server.mechanism();
                match server.client_final(bytes) {
                    Ok(done) => {
                        Step::Authenticated(answer(done.server_final.into_bytes()), done.user)
                    }
                    Err(e) => failed(SaslMechanism::Scram(m), e.to_string()),
                }
            }
            State::BadMechanism(message) => Step::Refused(
                ResponseKind::SaslAuthenticate(
                    SaslAuthenticateResponse::default()
                        .with_error_code(E::SaslAuthenticationFailed.code())
                        .with_error_message(Some(StrBytes::from_string(message.clone()))),
                ),
                message,
            ),
            State::Handshake | State::Done => Step::Refused(
                ResponseKind::SaslAuthenticate(
                    SaslAuthenticateResponse::default()
                        .with_error_code(E::IllegalSaslState.code())
                        .with_error_message(Some(StrBytes::from_static_str(
                            "SaslAuthenticate before SaslHandshake",
                        ))),
                ),
                "SaslAuthenticate before SaslHandshake".into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
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
}
