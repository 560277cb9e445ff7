//! Who may log in: `trust` (loopback only), `password` (cleartext over the
//! wire) or `scram-sha-256`, both checked against SCRAM verifiers in the
//! Postgres format — `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`
//! — so no password, nor anything that logs in like one, is stored.
//!
//! pgwire's SCRAM wants the salted password (a password equivalent), so the
//! exchange (RFC 5802 / 7677, without channel binding) is done here.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::num::NonZeroU32;

use aws_lc_rs::{constant_time, digest, hmac, pbkdf2, rand::SecureRandom};
use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;

/// PBKDF2 iterations of new verifiers (Postgres' default).
const ITERATIONS: u32 = 4096;

/// How clients prove who they are.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Any user name logs in, from loopback addresses only.
    Trust,
    /// The client sends the password; checked against the verifier.
    Password,
    /// SCRAM-SHA-256: the password never crosses the wire.
    ScramSha256,
}

impl std::str::FromStr for Method {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "trust" => Ok(Self::Trust),
            "password" => Ok(Self::Password),
            "scram-sha-256" => Ok(Self::ScramSha256),
            other => Err(format!(
                "unknown authentication method {other:?} (trust, password, scram-sha-256)"
            )),
        }
    }
}

/// A user's SCRAM-SHA-256 verifier.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verifier {
    iterations: u32,
    salt: Vec<u8>,
    stored_key: Vec<u8>,
    server_key: Vec<u8>,
}

impl Verifier {
    /// A verifier for `password` with a fresh random salt.
    pub fn new(password: &str) -> Result<Self, String> {
        let mut salt = vec![0u8; 16];
        aws_lc_rs::rand::SystemRandom::new()
            .fill(&mut salt)
            .map_err(|_| "no random numbers".to_string())?;
        Ok(Self::derive(password, salt, ITERATIONS))
    }

    fn derive(password: &str, salt: Vec<u8>, iterations: u32) -> Self {
        let salted = salted_password(password, &salt, iterations);
        let client_key = hmac_sha256(&salted, b"Client Key");
        Self {
            iterations,
            stored_key: digest::digest(&digest::SHA256, &client_key)
                .as_ref()
                .to_vec(),
            server_key: hmac_sha256(&salted, b"Server Key"),
            salt,
        }
    }

    /// Reads `SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>`.
    pub fn parse(text: &str) -> Option<Self> {
        let rest = text.strip_prefix("SCRAM-SHA-256$")?;
        let (params, keys) = rest.split_once('$')?;
        let (iterations, salt) = params.split_once(':')?;
        let (stored, server) = keys.split_once(':')?;
        let verifier = Self {
            iterations: iterations.parse().ok().filter(|i| *i > 0)?,
            salt: STANDARD.decode(salt).ok()?,
            stored_key: STANDARD.decode(stored).ok()?,
            server_key: STANDARD.decode(server).ok()?,
        };
        (verifier.stored_key.len() == 32 && verifier.server_key.len() == 32).then_some(verifier)
    }

    /// Whether `password` is the one this verifier was made from.
    pub fn matches(&self, password: &str) -> bool {
        let other = Self::derive(password, self.salt.clone(), self.iterations);
        constant_time::verify_slices_are_equal(&other.stored_key, &self.stored_key).is_ok()
    }
}

impl std::fmt::Display for Verifier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "SCRAM-SHA-256${}:{}${}:{}",
            self.iterations,
            STANDARD.encode(&self.salt),
            STANDARD.encode(&self.stored_key),
            STANDARD.encode(&self.server_key)
        )
    }
}

fn salted_password(password: &str, salt: &[u8], iterations: u32) -> Vec<u8> {
    let mut out = vec![0u8; 32];
    let iterations = NonZeroU32::new(iterations).unwrap_or(NonZeroU32::MIN);
    pbkdf2::derive(
        pbkdf2::PBKDF2_HMAC_SHA256,
        iterations,
        salt,
        password.as_bytes(),
        &mut out,
    );
    out
}

fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), message)
        .as_ref()
        .to_vec()
}

/// The server's authentication settings.
#[derive(Debug, Clone)]
pub struct Auth {
    pub method: Method,
    /// User name → verifier.
    pub users: HashMap<String, Verifier>,
}

impl Auth {
    /// Anyone from loopback.
    pub fn trust() -> Self {
        Self {
            method: Method::Trust,
            users: HashMap::new(),
        }
    }

    /// Whether `peer` may use trust: loopback only.
    pub fn trust_allowed(peer: &SocketAddr) -> bool {
        peer.ip().is_loopback()
    }
}

/// The server's half of one SCRAM exchange, between its two messages.
#[derive(Debug)]
pub struct ScramExchange {
    client_first_bare: String,
    server_first: String,
    nonce: String,
    gs2_header: String,
    /// `None` for an unknown user: the exchange runs on and fails at the end,
    /// as for a wrong password, so it does not tell which users exist.
    verifier: Option<Verifier>,
}

/// Why a SCRAM exchange failed.
#[derive(Debug, PartialEq, Eq)]
pub enum ScramError {
    /// The messages do not follow the protocol.
    Malformed(&'static str),
    /// Wrong password or unknown user.
    Rejected,
}

impl ScramExchange {
    /// Takes the client-first message; returns the exchange and the
    /// server-first message.
    pub fn start(
        client_first: &[u8],
        verifier: Option<Verifier>,
    ) -> Result<(Self, String), ScramError> {
        let text =
            std::str::from_utf8(client_first).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        // gs2-header: "n,," or "y,," (no channel binding), then the bare message.
        let mut parts = text.splitn(3, ',');
        let flag = parts.next().unwrap_or_default();
        let authzid = parts.next().unwrap_or_default();
        let bare = parts
            .next()
            .ok_or(ScramError::Malformed("no client-first-bare"))?;
        if !(flag == "n" || flag == "y") {
            return Err(ScramError::Malformed("channel binding is not supported"));
        }
        let client_nonce = attribute(bare, 'r').ok_or(ScramError::Malformed("no nonce"))?;
        let mut server_nonce = [0u8; 18];
        aws_lc_rs::rand::SystemRandom::new()
            .fill(&mut server_nonce)
            .map_err(|_| ScramError::Malformed("no random numbers"))?;
        let nonce = format!("{client_nonce}{}", STANDARD.encode(server_nonce));
        // An unknown user gets a made-up salt, stable per server run.
        let (salt, iterations) = match &verifier {
            Some(v) => (v.salt.clone(), v.iterations),
            None => (b"lakegres-unknown".to_vec(), ITERATIONS),
        };
        let server_first = format!("r={nonce},s={},i={iterations}", STANDARD.encode(salt));
        Ok((
            Self {
                client_first_bare: bare.to_string(),
                server_first: server_first.clone(),
                nonce,
                gs2_header: format!("{flag},{authzid},"),
                verifier,
            },
            server_first,
        ))
    }

    /// Checks the client-final message's proof; returns the server-final
    /// message (the server's signature).
    pub fn finish(&self, client_final: &[u8]) -> Result<String, ScramError> {
        let text =
            std::str::from_utf8(client_final).map_err(|_| ScramError::Malformed("not UTF-8"))?;
        let (without_proof, proof) = text
            .rsplit_once(",p=")
            .ok_or(ScramError::Malformed("no proof"))?;
        let binding = attribute(without_proof, 'c').ok_or(ScramError::Malformed("no binding"))?;
        if binding != STANDARD.encode(&self.gs2_header) {
            return Err(ScramError::Malformed("channel binding mismatch"));
        }
        if attribute(without_proof, 'r') != Some(self.nonce.as_str()) {
            return Err(ScramError::Malformed("nonce mismatch"));
        }
        let proof = STANDARD
            .decode(proof)
            .map_err(|_| ScramError::Malformed("proof is not base64"))?;
        let verifier = self.verifier.as_ref().ok_or(ScramError::Rejected)?;
        let auth_message = format!(
            "{},{},{without_proof}",
            self.client_first_bare, self.server_first
        );
        let client_signature = hmac_sha256(&verifier.stored_key, auth_message.as_bytes());
        if proof.len() != client_signature.len() {
            return Err(ScramError::Rejected);
        }
        let client_key: Vec<u8> = proof
            .iter()
            .zip(&client_signature)
            .map(|(a, b)| a ^ b)
            .collect();
        let stored = digest::digest(&digest::SHA256, &client_key);
        constant_time::verify_slices_are_equal(stored.as_ref(), &verifier.stored_key)
            .map_err(|_| ScramError::Rejected)?;
        let server_signature = hmac_sha256(&verifier.server_key, auth_message.as_bytes());
        Ok(format!("v={}", STANDARD.encode(server_signature)))
    }
}

/// The value of `name=` in a SCRAM message's comma-separated attributes.
fn attribute(message: &str, name: char) -> Option<&str> {
    message
        .split(',')
        .find_map(|a| a.strip_prefix(name).and_then(|a| a.strip_prefix('=')))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verifiers_round_trip_and_check_passwords() {
        let v = Verifier::new("s3cret").unwrap();
        let parsed = Verifier::parse(&v.to_string()).unwrap();
        assert_eq!(parsed, v);
        assert!(parsed.matches("s3cret"));
        assert!(!parsed.matches("s3cret "));
        assert!(Verifier::parse("md5abc").is_none());
    }

    /// The exchange of RFC 7677 §3, computed the client's way.
    #[test]
    fn a_client_with_the_password_is_accepted_and_others_are_not() {
        let verifier = Verifier::derive("pencil", b"salty".to_vec(), 4096);
        let client = |password: &str| -> Result<String, ScramError> {
            let client_first = "n,,n=user,r=rOprNGfwEbeRWgbNEkqO";
            let (exchange, server_first) =
                ScramExchange::start(client_first.as_bytes(), Some(verifier.clone()))?;
            let nonce = attribute(&server_first, 'r').unwrap();
            let without_proof = format!("c=biws,r={nonce}");
            let salted = salted_password(password, b"salty", 4096);
            let client_key = hmac_sha256(&salted, b"Client Key");
            let stored = digest::digest(&digest::SHA256, &client_key);
            let auth = format!("n=user,r=rOprNGfwEbeRWgbNEkqO,{server_first},{without_proof}");
            let signature = hmac_sha256(stored.as_ref(), auth.as_bytes());
            let proof: Vec<u8> = client_key
                .iter()
                .zip(&signature)
                .map(|(a, b)| a ^ b)
                .collect();
            exchange.finish(format!("{without_proof},p={}", STANDARD.encode(proof)).as_bytes())
        };
        let server_final = client("pencil").unwrap();
        assert!(server_final.starts_with("v="));
        assert_eq!(client("pen"), Err(ScramError::Rejected));
    }
}
