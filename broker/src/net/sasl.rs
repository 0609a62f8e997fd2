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
}

impl Default for SaslSettings {
    fn default() -> Self {
        SaslSettings {
            mechanisms: SaslMechanism::ALL.to_vec(),
            failed_authentication_delay_ms: 100,
            max_receive_bytes: 524_288,
        }
    }
}

enum State {
    Handshake,
    Authenticate(SaslMechanism),
    ScramFinal(Box<ScramServer>),
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
}

impl Authenticator {
    pub fn new(settings: &SaslSettings) -> Authenticator {
        Authenticator {
            mechanisms: settings.mechanisms.clone(),
            state: State::Handshake,
        }
    }

    fn offered(&self) -> Vec<StrBytes> {
        self.mechanisms
            .iter()
            .map(|m| StrBytes::from_static_str(m.name()))
            .collect()
    }

    /// One request of a connection not yet authenticated; `nonce` draws
    /// the server's SCRAM nonce.
    pub fn step(
        &mut self,
        key: ApiKey,
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
                self.authenticate(&r.auth_bytes, users, nonce)
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
                self.state = State::Authenticate(m);
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
                &RequestKind::ApiVersions(Default::default()),
                &users,
                nonce
            ),
            Step::Serve
        ));
        let s = a.step(
            ApiKey::SaslHandshake,
            &handshake("SCRAM-SHA-256"),
            &users,
            nonce,
        );
        assert_eq!(error_of(&s), 0);
        let s = a.step(
            ApiKey::SaslAuthenticate,
            &auth(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"),
            &users,
            nonce,
        );
        assert_eq!(error_of(&s), 0);
        let s = a.step(
            ApiKey::SaslAuthenticate,
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
            &handshake("PLAIN"),
            &users,
            String::new,
        );
        assert!(matches!(
            a.step(ApiKey::SaslAuthenticate, &auth(b"\0user\0pencil"), &users, String::new),
            Step::Authenticated(_, u) if u == "user"
        ));
        let mut a = Authenticator::new(&SaslSettings::default());
        a.step(
            ApiKey::SaslHandshake,
            &handshake("PLAIN"),
            &users,
            String::new,
        );
        let s = a.step(
            ApiKey::SaslAuthenticate,
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
            a.step(ApiKey::Metadata, &metadata, &users, String::new),
            Step::Close(_)
        ));
        let s = a.step(
            ApiKey::SaslHandshake,
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
            &handshake("SCRAM-SHA-256"),
            &users,
            || "n".into(),
        );
        let s = a.step(
            ApiKey::SaslAuthenticate,
            &auth(b"\xff\xfe garbage"),
            &users,
            || "n".into(),
        );
        assert_eq!(error_of(&s), E::SaslAuthenticationFailed.code());
    }
}
