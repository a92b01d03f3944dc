//! Who may take a place, and in which lane: the event's access rule (open, presale,
//! invitation only), the organizer's identity key for "one place per person", and the check of
//! an identity token the organizer's site signed. Read with the live controls on every tick,
//! so judging a join costs no database call; spending a code is the caller's (the database's).

use std::fmt;
use std::sync::Arc;

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use time::OffsetDateTime;

use crate::clock::UnixMs;
use crate::error::AdmissionError;

/// The two lanes of a queue. Inside each, order is fair (pre-queue permutation, then FIFO);
/// the priority lane is offered first within its share of the outflow.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Lane {
    #[default]
    General,
    Priority,
}

impl Lane {
    pub fn is_general(&self) -> bool {
        *self == Lane::General
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Lane::General => "general",
            Lane::Priority => "priority",
        }
    }

    /// The lane a place belongs to, from its number (see [`PRIORITY_BASE`]).
    pub fn of_seq(seq: u64) -> Lane {
        if seq >= PRIORITY_BASE {
            Lane::Priority
        } else {
            Lane::General
        }
    }
}

/// Priority places are numbered from here, so one number names any place and the general FIFO
/// range `(cursor, seq]` never contains one. 2^50 stays exact in Lua's doubles.
pub const PRIORITY_BASE: u64 = 1 << 50;

/// Who may join.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Access {
    #[default]
    Open,
    /// A code is needed until the general opening; anyone may join after it.
    Presale { general_opens_at: OffsetDateTime },
    /// A code is always needed.
    InviteOnly,
}

impl Access {
    /// Whether a join at `now_ms` needs a code.
    pub fn needs_code(&self, now_ms: UnixMs) -> bool {
        match self {
            Access::Open => false,
            Access::Presale { general_opens_at } => {
                now_ms < (general_opens_at.unix_timestamp_nanos() / 1_000_000) as UnixMs
            }
            Access::InviteOnly => true,
        }
    }
}

/// The signature algorithms an organizer's identity tokens may use.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdentityAlg {
    Hs256,
    Es256,
    Rs256,
}

impl IdentityAlg {
    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "HS256" => Some(IdentityAlg::Hs256),
            "ES256" => Some(IdentityAlg::Es256),
            "RS256" => Some(IdentityAlg::Rs256),
            _ => None,
        }
    }

    fn algorithm(self) -> Algorithm {
        match self {
            IdentityAlg::Hs256 => Algorithm::HS256,
            IdentityAlg::Es256 => Algorithm::ES256,
            IdentityAlg::Rs256 => Algorithm::RS256,
        }
    }

    /// The verifying key from the stored text: the shared secret, or a public key PEM.
    pub fn key(self, text: &str) -> Result<DecodingKey, jsonwebtoken::errors::Error> {
        match self {
            IdentityAlg::Hs256 => DecodingKey::from_secret(text.as_bytes()),
            IdentityAlg::Es256 => DecodingKey::from_ec_pem(text.as_bytes()),
            IdentityAlg::Rs256 => DecodingKey::from_rsa_pem(text.as_bytes()),
        }
    }
}

/// The organizer's identity key for one event, parsed once: a PEM public key costs far more to
/// parse than a signature costs to check, so a storm of identity joins pays the check only.
#[derive(Clone)]
pub struct IdentityRule {
    pub alg: IdentityAlg,
    /// The shared secret or public key PEM: never in `Debug`.
    pub key: String,
    /// Every join must carry an identity token.
    pub required: bool,
    /// `key` as a verifying key; `None` when it does not parse (every token is then invalid,
    /// as the organizer API never stores such a key).
    verifier: Option<Arc<DecodingKey>>,
}

impl IdentityRule {
    /// Parses `key` for `alg` now, once for the life of the rule and its clones.
    pub fn new(alg: IdentityAlg, key: String, required: bool) -> Self {
        let verifier = alg.key(&key).ok().map(Arc::new);
        IdentityRule {
            alg,
            key,
            required,
            verifier,
        }
    }

    /// Whether `other` names the same key (its parsed verifier can be kept).
    pub fn same_key(&self, alg: IdentityAlg, key: &str) -> bool {
        self.alg == alg && self.key == key
    }

    /// Whether the key parsed (a rule that parsed nothing refuses every token).
    pub fn is_usable(&self) -> bool {
        self.verifier.is_some()
    }
}

impl PartialEq for IdentityRule {
    /// Equal when the settings are: the verifier follows from them.
    fn eq(&self, other: &Self) -> bool {
        self.alg == other.alg && self.key == other.key && self.required == other.required
    }
}

impl Eq for IdentityRule {}

impl fmt::Debug for IdentityRule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("IdentityRule")
            .field("alg", &self.alg)
            .field("required", &self.required)
            .finish_non_exhaustive()
    }
}

/// The longest identity token read: an RS256 token with a few claims is under 1 KiB.
pub const IDENTITY_TOKEN_BYTES: usize = 4096;
/// The longest subject kept (it keys the buyer's place).
pub const SUBJECT_BYTES: usize = 256;

/// Who an identity token says the buyer is, and the lane the organizer gave them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Person {
    pub subject: String,
    pub lane: Lane,
}

#[derive(Deserialize)]
struct IdentityClaims {
    sub: String,
    exp: i64,
    #[serde(default)]
    lane: Option<Lane>,
}

impl IdentityRule {
    /// Checks a token the organizer's site signed: the configured algorithm only (no `none`,
    /// no switching HS256 for a public key), a `sub` and an `exp` not past by admission's
    /// clock. Anything else is `IdentityInvalid`, whatever the reason.
    pub fn verify(&self, token: &str, now_ms: UnixMs) -> Result<Person, AdmissionError> {
        let invalid = || AdmissionError::IdentityInvalid;
        if token.is_empty() || token.len() > IDENTITY_TOKEN_BYTES {
            return Err(invalid());
        }
        let key = self.verifier.as_deref().ok_or_else(invalid)?;
        let mut validation = Validation::new(self.alg.algorithm());
        validation.validate_exp = false;
        validation.validate_aud = false;
        validation.set_required_spec_claims(&["exp", "sub"]);
        let data = jsonwebtoken::decode::<IdentityClaims>(token, key, &validation)
            .map_err(|_| invalid())?;
        let claims = data.claims;
        if claims.exp.saturating_mul(1000) <= now_ms
            || claims.sub.is_empty()
            || claims.sub.len() > SUBJECT_BYTES
        {
            return Err(invalid());
        }
        Ok(Person {
            subject: claims.sub,
            lane: claims.lane.unwrap_or_default(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jsonwebtoken::{EncodingKey, Header};

    fn hs(secret: &str) -> IdentityRule {
        IdentityRule::new(IdentityAlg::Hs256, secret.to_owned(), false)
    }

    fn sign(secret: &str, claims: &serde_json::Value) -> String {
        let key = EncodingKey::from_secret(secret.as_bytes()).expect("a key");
        jsonwebtoken::encode(&Header::new(Algorithm::HS256), claims, &key).expect("signed")
    }

    #[test]
    fn a_signed_subject_passes_and_anything_else_is_invalid() {
        let rule = hs("organizer-secret");
        let now = 1_700_000_000_000;
        let good = sign(
            "organizer-secret",
            &serde_json::json!({"sub": "fan-1", "exp": 1_700_000_060, "lane": "priority"}),
        );
        assert_eq!(
            rule.verify(&good, now).expect("valid"),
            Person {
                subject: "fan-1".into(),
                lane: Lane::Priority
            }
        );
        let expired = sign(
            "organizer-secret",
            &serde_json::json!({"sub": "fan-1", "exp": 1_699_999_999}),
        );
        let foreign = sign(
            "another-secret",
            &serde_json::json!({"sub": "fan-1", "exp": 1_700_000_060}),
        );
        let no_sub = sign(
            "organizer-secret",
            &serde_json::json!({"exp": 1_700_000_060}),
        );
        for bad in [expired, foreign, no_sub, "garbage".into(), String::new()] {
            assert!(
                matches!(rule.verify(&bad, now), Err(AdmissionError::IdentityInvalid)),
                "{bad}"
            );
        }
    }

    #[test]
    fn the_key_is_parsed_once_and_shared_by_every_copy_of_the_rule() {
        let rule = hs("organizer-secret");
        let copy = rule.clone();
        let (Some(a), Some(b)) = (&rule.verifier, &copy.verifier) else {
            panic!("an HS256 secret always makes a key");
        };
        assert!(Arc::ptr_eq(a, b));
        assert!(rule.same_key(IdentityAlg::Hs256, "organizer-secret"));
        assert!(!rule.same_key(IdentityAlg::Hs256, "another-secret"));
        // A PEM that does not parse makes a rule that refuses every token.
        let broken = IdentityRule::new(IdentityAlg::Es256, "not a pem".into(), true);
        assert!(!broken.is_usable());
        let token = sign(
            "organizer-secret",
            &serde_json::json!({"sub": "fan-1", "exp": 1_700_000_060}),
        );
        assert!(matches!(
            broken.verify(&token, 1_700_000_000_000),
            Err(AdmissionError::IdentityInvalid)
        ));
    }

    #[test]
    fn presale_needs_a_code_until_the_general_opening() {
        let at = OffsetDateTime::from_unix_timestamp(1_700_000_000).expect("a time");
        let presale = Access::Presale {
            general_opens_at: at,
        };
        assert!(presale.needs_code(1_699_999_999_999));
        assert!(!presale.needs_code(1_700_000_000_000));
        assert!(Access::InviteOnly.needs_code(0));
        assert!(!Access::Open.needs_code(0));
    }

    #[test]
    fn lanes_follow_the_place_number() {
        assert_eq!(Lane::of_seq(1), Lane::General);
        assert_eq!(Lane::of_seq(PRIORITY_BASE + 1), Lane::Priority);
    }
}
