//! The SCRAM arithmetic both sides share (RFC 5802, RFC 7677): the
//! mechanisms, PBKDF2 of a password, HMAC, and a client's exchange
//! ([`ScramClient`]). The broker's server side is `kaas_broker::auth::scram`.

use base64::engine::general_purpose::STANDARD as B64;
use base64::Engine;
use ring::{digest, hmac, pbkdf2};
use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Mechanism {
    #[serde(rename = "SCRAM-SHA-256")]
    ScramSha256,
    #[serde(rename = "SCRAM-SHA-512")]
    ScramSha512,
}

impl Mechanism {
    pub const ALL: [Mechanism; 2] = [Mechanism::ScramSha256, Mechanism::ScramSha512];

    /// The SASL mechanism name.
    pub fn name(self) -> &'static str {
        match self {
            Mechanism::ScramSha256 => "SCRAM-SHA-256",
            Mechanism::ScramSha512 => "SCRAM-SHA-512",
        }
    }

    pub fn from_name(name: &str) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The code DescribeUserScramCredentials and AlterUserScramCredentials
    /// name it by (Apache's `ScramMechanism.type`).
    pub fn code(self) -> i8 {
        match self {
            Mechanism::ScramSha256 => 1,
            Mechanism::ScramSha512 => 2,
        }
    }

    pub fn from_code(code: i8) -> Option<Mechanism> {
        Mechanism::ALL.into_iter().find(|m| m.code() == code)
    }

    pub fn hmac(self) -> hmac::Algorithm {
        match self {
            Mechanism::ScramSha256 => hmac::HMAC_SHA256,
            Mechanism::ScramSha512 => hmac::HMAC_SHA512,
        }
    }

    pub fn pbkdf2(self) -> pbkdf2::Algorithm {
        match self {
            Mechanism::ScramSha256 => pbkdf2::PBKDF2_HMAC_SHA256,
            Mechanism::ScramSha512 => pbkdf2::PBKDF2_HMAC_SHA512,
        }
    }

    pub fn digest(self) -> &'static digest::Algorithm {
        match self {
            Mechanism::ScramSha256 => &digest::SHA256,
            Mechanism::ScramSha512 => &digest::SHA512,
        }
    }

    /// The length of its keys and of a salted password.
    pub fn key_len(self) -> usize {
        self.digest().output_len()
    }
}

pub fn hmac_of(m: Mechanism, key: &[u8], data: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(m.hmac(), key), data)
        .as_ref()
        .to_vec()
}

/// PBKDF2 of the password: what a client sends in AlterUserScramCredentials.
pub fn salted_password(m: Mechanism, password: &[u8], salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0; m.key_len()];
    let iterations = std::num::NonZeroU32::new(iterations.max(1)).expect("at least 1");
    pbkdf2::derive(m.pbkdf2(), iterations, salt, password, &mut out);
    out
}

/// Equal in time that does not depend on where the inputs differ.
pub fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// A SCRAM nonce: 18 random bytes in base64 (printable, no ',').
pub fn nonce() -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 18];
    ring::rand::SystemRandom::new()
        .fill(&mut bytes)
        .expect("the system's random source");
    B64.encode(bytes)
}

/// A client's SCRAM exchange: `first`, then `finish` with the server's
/// first message, then `verify` the server's final one.
pub struct ScramClient {
    mechanism: Mechanism,
    client_first_bare: String,
    client_nonce: String,
    server_signature: Vec<u8>,
}

impl ScramClient {
    /// The client-first message for `user` (no channel binding).
    pub fn first(mechanism: Mechanism, user: &str, nonce: &str) -> (ScramClient, String) {
        let name = user.replace('=', "=3D").replace(',', "=2C");
        let bare = format!("n={name},r={nonce}");
        let message = format!("n,,{bare}");
        (
            ScramClient {
                mechanism,
                client_first_bare: bare,
                client_nonce: nonce.to_string(),
                server_signature: Vec::new(),
            },
            message,
        )
    }

    /// The client-final message answering the server-first.
    pub fn finish(&mut self, server_first: &str, password: &str) -> anyhow::Result<String> {
        let mut nonce = None;
        let mut salt = None;
        let mut iterations = None;
        for attr in server_first.split(',') {
            match attr.split_once('=') {
                Some(("r", v)) => nonce = Some(v),
                Some(("s", v)) => salt = Some(B64.decode(v)?),
                Some(("i", v)) => iterations = Some(v.parse::<u32>()?),
                _ => {}
            }
        }
        let (Some(nonce), Some(salt), Some(iterations)) = (nonce, salt, iterations) else {
            anyhow::bail!("malformed server-first message");
        };
        anyhow::ensure!(
            nonce.starts_with(&self.client_nonce),
            "the server's nonce does not extend ours"
        );
        let m = self.mechanism;
        let salted = salted_password(m, password.as_bytes(), &salt, iterations);
        let client_key = hmac_of(m, &salted, b"Client Key");
        let stored_key = digest::digest(m.digest(), &client_key);
        let without_proof = format!("c=biws,r={nonce}");
        let auth_message = format!("{},{server_first},{without_proof}", self.client_first_bare);
        let signature = hmac_of(m, stored_key.as_ref(), auth_message.as_bytes());
        let proof: Vec<u8> = client_key
            .iter()
            .zip(&signature)
            .map(|(k, s)| k ^ s)
            .collect();
        let server_key = hmac_of(m, &salted, b"Server Key");
        self.server_signature = hmac_of(m, &server_key, auth_message.as_bytes());
        Ok(format!("{without_proof},p={}", B64.encode(proof)))
    }

    /// Whether the server-final proves the server knew the credential.
    pub fn verify(&self, server_final: &str) -> bool {
        server_final
            .strip_prefix("v=")
            .and_then(|v| B64.decode(v).ok())
            .is_some_and(|v| same(&v, &self.server_signature))
    }
}

#[cfg(test)]
mod tests;
