//! SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677) as Apache's
//! `ScramSaslServer` runs them, and PLAIN (RFC 4616) checked against the
//! same credentials. A credential keeps the salt, the iteration count, the
//! stored key and the server key, never the password. Pure: the server's
//! nonce is handed in, the credentials are looked up through a closure.

use std::fmt;

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use kaas_client::scram::{hmac_of, same};
pub use kaas_client::scram::{salted_password, Mechanism};
use ring::digest;
use serde::{Deserialize, Serialize};

/// Apache's bounds on SCRAM iterations (`ScramMechanism.minIterations`,
/// `maxIterations`).
pub const MIN_ITERATIONS: u32 = 4096;
pub const MAX_ITERATIONS: u32 = 16384;

/// What a broker keeps of a SCRAM password.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScramCredential {
    pub mechanism: Mechanism,
    #[serde(with = "b64")]
    pub salt: Vec<u8>,
    pub iterations: u32,
    #[serde(with = "b64")]
    pub stored_key: Vec<u8>,
    #[serde(with = "b64")]
    pub server_key: Vec<u8>,
}

/// Never print keys.
impl fmt::Debug for ScramCredential {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScramCredential")
            .field("mechanism", &self.mechanism)
            .field("iterations", &self.iterations)
            .finish_non_exhaustive()
    }
}

impl ScramCredential {
    /// The credential of `password` (SaltedPassword by PBKDF2, then the
    /// client key's digest and the server key).
    pub fn derive(m: Mechanism, password: &str, salt: &[u8], iterations: u32) -> ScramCredential {
        let salted = salted_password(m, password.as_bytes(), salt, iterations);
        ScramCredential::from_salted_password(m, &salted, salt, iterations)
    }

    /// The credential of an already salted password (what
    /// AlterUserScramCredentials carries).
    pub fn from_salted_password(
        m: Mechanism,
        salted: &[u8],
        salt: &[u8],
        iterations: u32,
    ) -> ScramCredential {
        let client_key = hmac_of(m, salted, b"Client Key");
        ScramCredential {
            mechanism: m,
            salt: salt.to_vec(),
            iterations,
            stored_key: digest::digest(m.digest(), &client_key).as_ref().to_vec(),
            server_key: hmac_of(m, salted, b"Server Key"),
        }
    }

    /// Whether `password` is this credential's (PLAIN against SCRAM
    /// credentials), compared in constant time.
    pub fn matches(&self, password: &str) -> bool {
        let other = ScramCredential::derive(self.mechanism, password, &self.salt, self.iterations);
        same(&other.stored_key, &self.stored_key)
    }
}

/// Why an exchange failed. The client sees SASL_AUTHENTICATION_FAILED;
/// the text is for the broker's log (it names no secret).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaslError {
    #[error("malformed {0}")]
    Malformed(&'static str),
    #[error("channel binding is not supported")]
    ChannelBinding,
    #[error("authorization id {0:?} is not the user name")]
    AuthorizationId(String),
    #[error("invalid credentials for user {0:?}")]
    InvalidCredentials(String),
    #[error("unexpected message in state {0}")]
    OutOfOrder(&'static str),
}

/// RFC 5802's `saslname`: `=2C` is `,` and `=3D` is `=`; any other `=` is
/// malformed.
fn decode_saslname(s: &str) -> Result<String, SaslError> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('=') {
        out.push_str(&rest[..i]);
        match rest.get(i..i + 3) {
            Some("=2C") => out.push(','),
            Some("=3D") => out.push('='),
            _ => return Err(SaslError::Malformed("user name")),
        }
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Ok(out)
}

/// `key=value` attributes in order.
fn attributes(s: &str) -> Vec<(&str, &str)> {
    s.split(',').filter_map(|a| a.split_once('=')).collect()
}

enum State {
    First,
    Final {
        user: String,
        credential: Option<ScramCredential>,
        nonce: String,
        client_first_bare: String,
        server_first: String,
        gs2_header: String,
    },
    Done,
}

/// One SCRAM exchange, server side: `client_first`, then `client_final`.
pub struct ScramServer {
    mechanism: Mechanism,
    server_nonce: String,
    state: State,
}

/// The user an exchange authenticated and the server-final to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authenticated {
    pub user: String,
    pub server_final: String,
}

impl ScramServer {
    /// `server_nonce`: printable, without `,` (the shell draws it at random).
    pub fn new(mechanism: Mechanism, server_nonce: String) -> ScramServer {
        ScramServer {
            mechanism,
            server_nonce,
            state: State::First,
        }
    }

    pub fn mechanism(&self) -> Mechanism {
        self.mechanism
    }

    /// The client's first message; `lookup` finds the user's credential for
    /// this mechanism. An unknown user gets a server-first like any other
    /// (a salt derived from the name and the nonce), so the exchange does
    /// not tell which users exist; it fails at the proof.
    pub fn client_first(
        &mut self,
        message: &[u8],
        lookup: impl FnOnce(&str) -> Option<ScramCredential>,
    ) -> Result<String, SaslError> {
        if !matches!(self.state, State::First) {
            return Err(SaslError::OutOfOrder("client-first"));
        }
        self.state = State::Done;
        let message =
            std::str::from_utf8(message).map_err(|_| SaslError::Malformed("client-first"))?;
        // gs2-header: "n,," / "y,," then an optional "a=authzid".
        let mut parts = message.splitn(3, ',');
        let cbind = parts.next().ok_or(SaslError::Malformed("client-first"))?;
        let authzid = parts.next().ok_or(SaslError::Malformed("client-first"))?;
        let bare = parts.next().ok_or(SaslError::Malformed("client-first"))?;
        match cbind {
            "n" | "y" => {}
            c if c.starts_with("p=") => return Err(SaslError::ChannelBinding),
            _ => return Err(SaslError::Malformed("gs2 header")),
        }
        let attrs = attributes(bare);
        let user = match attrs.first() {
            Some(("n", name)) => decode_saslname(name)?,
            _ => return Err(SaslError::Malformed("client-first")),
        };
        let client_nonce = match attrs.get(1) {
            Some(("r", nonce)) if !nonce.is_empty() => *nonce,
            _ => return Err(SaslError::Malformed("client-first")),
        };
        if let Some(id) = authzid.strip_prefix("a=") {
            let id = decode_saslname(id)?;
            if id != user {
                return Err(SaslError::AuthorizationId(id));
            }
        } else if !authzid.is_empty() {
            return Err(SaslError::Malformed("gs2 header"));
        }
        let credential = lookup(&user);
        let (salt, iterations) = match &credential {
            Some(c) => (c.salt.clone(), c.iterations),
            None => (
                digest::digest(
                    self.mechanism.digest(),
                    format!("{user}\0{}", self.server_nonce).as_bytes(),
                )
                .as_ref()[..16]
                    .to_vec(),
                MIN_ITERATIONS,
            ),
        };
        let nonce = format!("{client_nonce}{}", self.server_nonce);
        let server_first = format!("r={nonce},s={},i={iterations}", B64.encode(&salt));
        self.state = State::Final {
            user,
            credential,
            nonce,
            client_first_bare: bare.to_string(),
            server_first: server_first.clone(),
            gs2_header: format!("{cbind},{authzid},"),
        };
        Ok(server_first)
    }

    /// The client's final message: the proof checked against the stored
    /// key; the server's signature to send back.
    pub fn client_final(&mut self, message: &[u8]) -> Result<Authenticated, SaslError> {
        let State::Final {
            user,
            credential,
            nonce,
            client_first_bare,
            server_first,
            gs2_header,
        } = std::mem::replace(&mut self.state, State::Done)
        else {
            return Err(SaslError::OutOfOrder("client-final"));
        };
        let message =
            std::str::from_utf8(message).map_err(|_| SaslError::Malformed("client-final"))?;
        let (without_proof, proof) = message
            .rsplit_once(",p=")
            .ok_or(SaslError::Malformed("client-final"))?;
        let attrs = attributes(without_proof);
        match attrs.first() {
            Some(("c", binding)) if B64.decode(binding).ok() == Some(gs2_header.into_bytes()) => {}
            _ => return Err(SaslError::Malformed("channel binding")),
        }
        // Ends with, not equals, as Apache since 3.8.1: librdkafka before
        // 2.6.1 repeats its own nonce in front (librdkafka #4895).
        match attrs.get(1) {
            Some(("r", r)) if r.ends_with(nonce.as_str()) => {}
            _ => return Err(SaslError::Malformed("nonce")),
        }
        let proof = B64
            .decode(proof)
            .map_err(|_| SaslError::Malformed("proof"))?;
        let Some(credential) = credential else {
            return Err(SaslError::InvalidCredentials(user));
        };
        let m = self.mechanism;
        let auth_message = format!("{client_first_bare},{server_first},{without_proof}");
        let client_signature = hmac_of(m, &credential.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(SaslError::InvalidCredentials(user));
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(p, s)| p ^ s)
            .collect();
        let stored = digest::digest(m.digest(), &client_key);
        if !same(stored.as_ref(), &credential.stored_key) {
            return Err(SaslError::InvalidCredentials(user));
        }
        let server_signature = hmac_of(m, &credential.server_key, auth_message.as_bytes());
        Ok(Authenticated {
            user,
            server_final: format!("v={}", B64.encode(server_signature)),
        })
    }
}

/// PLAIN (RFC 4616), as Apache's `PlainSaslServer`: `authzid NUL authcid
/// NUL password`, the authorization id empty or the user's; the password
/// checked by `verify`. The authenticated user.
pub fn plain(message: &[u8], verify: impl FnOnce(&str, &str) -> bool) -> Result<String, SaslError> {
    let message = std::str::from_utf8(message).map_err(|_| SaslError::Malformed("PLAIN"))?;
    let mut parts = message.split('\0');
    let (Some(authzid), Some(user), Some(password), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(SaslError::Malformed("PLAIN"));
    };
    if user.is_empty() || password.is_empty() {
        return Err(SaslError::Malformed("PLAIN"));
    }
    if !authzid.is_empty() && authzid != user {
        return Err(SaslError::AuthorizationId(authzid.to_string()));
    }
    if !verify(user, password) {
        return Err(SaslError::InvalidCredentials(user.to_string()));
    }
    Ok(user.to_string())
}

mod b64 {
    use base64::Engine;
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    use super::B64;

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&B64.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let s = String::deserialize(d)?;
        B64.decode(s).map_err(D::Error::custom)
    }
}

#[cfg(test)]
mod tests;
