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
mod tests {
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
        let first = |m: &[u8]| {
            ScramServer::new(Mechanism::ScramSha256, "srv".into()).client_first(m, |_| None)
        };
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
}
