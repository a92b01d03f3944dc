//! Signed tokens: the queue token (a place in line) and the admission token (a session).
//! HS256 with a `kid` header; the ring accepts several keys so secrets rotate without logging
//! anyone out. Expiry is judged by admission's clock, not the library's, so tests steer it.

use std::collections::HashMap;
use std::fmt;

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use jsonwebtoken::{Algorithm, DecodingKey, Header, Validation};
use serde::{Deserialize, Serialize};
use sha2::Sha256;

use crate::clock::UnixMs;
use crate::entry::Lane;
use crate::error::{AdmissionError, InvalidToken};

const QUEUE: &str = "queue";
const ADMISSION: &str = "admission";

/// What a queue token proves: this ticket joined this event with this sequence number.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueClaims {
    #[serde(rename = "ev")]
    pub event: String,
    #[serde(rename = "tid")]
    pub ticket_id: String,
    /// Join sequence: the FIFO place of a post-opening arrival.
    pub seq: u64,
    /// Joined before `opens_at`: placed by the seeded permutation instead of `seq`.
    #[serde(rename = "pre")]
    pub pre_queue: bool,
    /// The queue epoch at join: a different current epoch means Redis lost this place and the
    /// token re-registers it.
    #[serde(rename = "ep")]
    pub epoch: String,
    pub iat: i64,
    pub exp: i64,
    pub(crate) typ: String,
    /// The lane of the place (absent: general). Follows from `seq`; carried so a page reads it.
    #[serde(rename = "ln", default, skip_serializing_if = "Lane::is_general")]
    pub lane: Lane,
}

impl QueueClaims {
    pub(crate) fn issue(
        event: &str,
        ticket_id: &str,
        seq: u64,
        pre_queue: bool,
        epoch: &str,
    ) -> Self {
        QueueClaims {
            event: event.to_owned(),
            ticket_id: ticket_id.to_owned(),
            seq,
            pre_queue,
            epoch: epoch.to_owned(),
            iat: 0,
            exp: 0,
            typ: QUEUE.to_owned(),
            lane: Lane::of_seq(seq),
        }
    }
}

/// What an admission token proves: a durable session (`jti`) until `exp`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AdmissionClaims {
    #[serde(rename = "ev")]
    pub event: String,
    #[serde(rename = "jti")]
    pub session_id: String,
    #[serde(rename = "sub")]
    pub ticket_id: String,
    pub iat: i64,
    pub exp: i64,
    typ: String,
}

/// Any of our tokens, before its type is checked.
#[derive(Deserialize)]
struct Envelope {
    ev: String,
    exp: i64,
    #[serde(default)]
    typ: String,
}

#[derive(Clone)]
struct Key {
    dec: DecodingKey,
}

/// HS256 keys by `kid`; the first one given signs, all verify.
#[derive(Clone)]
pub struct KeyRing {
    keys: HashMap<String, Key>,
    signer: Signer,
}

/// The signing key made ready once: its encoded header and its keyed HMAC state. Every join
/// signs a token, and `jsonwebtoken::encode` re-serialized the same header and re-keyed the
/// HMAC each time. The tokens are byte for byte what it writes (see the tests).
#[derive(Clone)]
struct Signer {
    /// The signing key's id (the first of the ring).
    kid: String,
    /// `base64url(header JSON)` as `jsonwebtoken` serializes `Header { alg: HS256, kid }`.
    header: String,
    mac: Hmac<Sha256>,
}

impl Signer {
    fn new(kid: &str, secret: &[u8]) -> Result<Self, KeyRingError> {
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some(kid.to_owned());
        let json = serde_json::to_vec(&header).map_err(jsonwebtoken::errors::Error::from)?;
        Ok(Signer {
            kid: kid.to_owned(),
            header: URL_SAFE_NO_PAD.encode(json),
            mac: Hmac::new_from_slice(secret).map_err(|_| KeyRingError::Entry)?,
        })
    }

    /// `header.claims.signature`, each part base64url without padding, as in RFC 7515.
    fn sign<T: Serialize>(&self, claims: &T) -> Result<String, AdmissionError> {
        let json = serde_json::to_vec(claims).map_err(jsonwebtoken::errors::Error::from)?;
        let mut token = String::with_capacity(self.header.len() + json.len() * 4 / 3 + 48);
        token.push_str(&self.header);
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(&json, &mut token);
        let mut mac = self.mac.clone();
        mac.update(token.as_bytes());
        token.push('.');
        URL_SAFE_NO_PAD.encode_string(mac.finalize().into_bytes(), &mut token);
        Ok(token)
    }
}

impl fmt::Debug for KeyRing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut kids: Vec<&String> = self.keys.keys().collect();
        kids.sort();
        f.debug_struct("KeyRing")
            .field("signing", &self.signer.kid)
            .field("kids", &kids)
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum KeyRingError {
    #[error("no keys")]
    Empty,
    #[error("key entries are `kid:secret`, got an entry without a colon or empty parts")]
    Entry,
    #[error(transparent)]
    Key(#[from] jsonwebtoken::errors::Error),
}

impl KeyRing {
    /// `keys` in order: the first signs; all verify.
    pub fn new<'a>(
        keys: impl IntoIterator<Item = (&'a str, &'a [u8])>,
    ) -> Result<Self, KeyRingError> {
        let mut signing: Option<(&str, &[u8])> = None;
        let mut ring = HashMap::new();
        for (kid, secret) in keys {
            if kid.is_empty() || secret.is_empty() {
                return Err(KeyRingError::Entry);
            }
            // The first kid signs; given again, its last secret is the one kept (and verified
            // with, below).
            if signing.is_none_or(|(first, _)| first == kid) {
                signing = Some((kid, secret));
            }
            let key = Key {
                dec: DecodingKey::from_secret(secret)?,
            };
            ring.insert(kid.to_owned(), key);
        }
        let (kid, secret) = signing.ok_or(KeyRingError::Empty)?;
        Ok(KeyRing {
            keys: ring,
            signer: Signer::new(kid, secret)?,
        })
    }

    /// Parses `FLOODGATE_TOKEN_SECRETS`: `kid:secret,kid:secret` (first signs).
    pub fn parse(spec: &str) -> Result<Self, KeyRingError> {
        let mut pairs = Vec::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (kid, secret) = entry.split_once(':').ok_or(KeyRingError::Entry)?;
            pairs.push((kid, secret.as_bytes()));
        }
        Self::new(pairs)
    }

    fn sign<T: Serialize>(&self, claims: &T) -> Result<String, AdmissionError> {
        self.signer.sign(claims)
    }

    /// The ticket id a join with this `Idempotency-Key` gets: 128 bits of HMAC under the
    /// signing secret, which is never revealed. The input cannot be a JWT's signing input
    /// (those hold no `:`), so the two uses of the key never meet.
    pub(crate) fn keyed_ticket_id(&self, event: &str, key: &str) -> String {
        let mut mac = self.signer.mac.clone();
        mac.update(b"ticket-id:");
        mac.update(event.as_bytes());
        mac.update(b":");
        mac.update(key.as_bytes());
        hex::encode(&mac.finalize().into_bytes()[..16])
    }

    pub(crate) fn sign_queue(&self, claims: &QueueClaims) -> Result<String, AdmissionError> {
        self.sign(claims)
    }

    pub(crate) fn sign_admission(
        &self,
        event: &str,
        session_id: &str,
        ticket_id: &str,
        now_ms: UnixMs,
        exp: i64,
    ) -> Result<String, AdmissionError> {
        let claims = AdmissionClaims {
            event: event.to_owned(),
            session_id: session_id.to_owned(),
            ticket_id: ticket_id.to_owned(),
            iat: now_ms.div_euclid(1000),
            exp,
            typ: ADMISSION.to_owned(),
        };
        self.sign(&claims)
    }

    pub(crate) fn verify_queue(
        &self,
        token: &str,
        event: &str,
        now_ms: UnixMs,
    ) -> Result<QueueClaims, AdmissionError> {
        let raw = self.verify_raw(token)?;
        if raw.claims.typ != QUEUE {
            return Err(AdmissionError::TokenInvalid(InvalidToken::Malformed));
        }
        check(&raw.claims, event, now_ms)?;
        serde_json::from_value(raw.value)
            .map_err(|_| AdmissionError::TokenInvalid(InvalidToken::Malformed))
    }

    /// `event`: the event the route names; `None` on routes that name none (`/api/holds/…`),
    /// where the token's own event is taken and the caller checks the resource against it.
    pub(crate) fn verify_admission(
        &self,
        token: &str,
        event: Option<&str>,
        now_ms: UnixMs,
    ) -> Result<AdmissionClaims, AdmissionError> {
        let raw = self.verify_raw(token)?;
        match raw.claims.typ.as_str() {
            ADMISSION => {}
            // A place in line is not a session: a distinct, actionable refusal.
            QUEUE => return Err(AdmissionError::NotAdmitted),
            _ => return Err(AdmissionError::TokenInvalid(InvalidToken::Malformed)),
        }
        check(&raw.claims, event.unwrap_or(&raw.claims.ev), now_ms)?;
        serde_json::from_value(raw.value)
            .map_err(|_| AdmissionError::TokenInvalid(InvalidToken::Malformed))
    }

    fn verify_raw(&self, token: &str) -> Result<Raw, AdmissionError> {
        let token = token.trim();
        if token.is_empty() {
            return Err(AdmissionError::TokenMissing);
        }
        let invalid = AdmissionError::TokenInvalid;
        // Read the header ourselves: the library refuses `alg: none` as a parse error, and we
        // want that told apart from garbage.
        let header_b64 = token.split('.').next().unwrap_or_default();
        if token.split('.').count() != 3 {
            return Err(invalid(InvalidToken::Malformed));
        }
        let header: serde_json::Value = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(header_b64)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .ok_or(invalid(InvalidToken::Malformed))?;
        if header.get("alg").and_then(|a| a.as_str()) != Some("HS256") {
            return Err(invalid(InvalidToken::AlgorithmNotAllowed));
        }
        let key = header
            .get("kid")
            .and_then(|k| k.as_str())
            .and_then(|kid| self.keys.get(kid))
            .ok_or(invalid(InvalidToken::UnknownKey))?;
        let mut validation = Validation::new(Algorithm::HS256);
        validation.validate_exp = false;
        validation.set_required_spec_claims(&["exp"]);
        let data = jsonwebtoken::decode::<serde_json::Value>(token, &key.dec, &validation)
            .map_err(|e| match e.kind() {
                jsonwebtoken::errors::ErrorKind::InvalidSignature => {
                    invalid(InvalidToken::BadSignature)
                }
                _ => invalid(InvalidToken::Malformed),
            })?;
        let claims: Envelope = serde_json::from_value(data.claims.clone())
            .map_err(|_| invalid(InvalidToken::Malformed))?;
        Ok(Raw {
            claims,
            value: data.claims,
        })
    }
}

struct Raw {
    claims: Envelope,
    value: serde_json::Value,
}

fn check(claims: &Envelope, event: &str, now_ms: UnixMs) -> Result<(), AdmissionError> {
    if claims.ev != event {
        return Err(AdmissionError::WrongEvent);
    }
    // Saturating: a signed `exp` far in the future means "not expired", never a wrapped past.
    if claims.exp.saturating_mul(1000) <= now_ms {
        return Err(AdmissionError::TokenExpired);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The prepared signer writes exactly the token `jsonwebtoken::encode` writes.
    #[test]
    fn signs_as_jsonwebtoken_does() {
        let ring = KeyRing::new([("k2", &b"second secret"[..]), ("k1", &b"first"[..])])
            .expect("a valid ring");
        let mut claims = QueueClaims::issue("ev-1", "0123abcd", 42, false, "epoch");
        claims.iat = 1_700_000_000;
        claims.exp = 1_700_003_600;
        let mut header = Header::new(Algorithm::HS256);
        header.kid = Some("k2".to_owned());
        let key = jsonwebtoken::EncodingKey::from_secret(b"second secret").expect("a key");
        let expected = jsonwebtoken::encode(&header, &claims, &key).expect("signed");
        let token = ring.sign_queue(&claims).expect("signed");
        assert_eq!(token, expected);
        let back = ring
            .verify_queue(&token, "ev-1", 1_700_000_000_000)
            .expect("verifies");
        assert_eq!(back, claims);
    }

    /// A keyed ticket id is fixed by the event, the key and the secret alone: a retried join
    /// finds its place, and without the secret (which, unlike the seed, is never published)
    /// nobody can tell which key gives which ticket.
    #[test]
    fn keyed_ticket_ids_need_the_secret() {
        let ring = |secret: &'static [u8]| KeyRing::new([("k1", secret)]).expect("a valid ring");
        let ours = ring(b"a secret of the service, long enough");
        let other = ring(b"another secret, just as long as it");
        let id = ours.keyed_ticket_id("ev-1", "key-1");
        assert_eq!(id, ours.keyed_ticket_id("ev-1", "key-1"));
        assert_eq!(id.len(), 32);
        assert_ne!(id, ours.keyed_ticket_id("ev-2", "key-1"));
        assert_ne!(id, ours.keyed_ticket_id("ev-1", "key-2"));
        assert_ne!(id, other.keyed_ticket_id("ev-1", "key-1"));
    }
}
