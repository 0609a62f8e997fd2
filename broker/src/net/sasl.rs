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
mod tests;
