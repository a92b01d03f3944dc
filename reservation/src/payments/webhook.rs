//! Provider webhooks: the `Stripe-Signature: t=UNIX,v1=HEX` scheme and the event payload.
//!
//! The signature is HMAC-SHA256 over `"{t}.{body}"` with the webhook secret. Several `v1`
//! entries are allowed (the provider signs with old and new secrets while rolling them).
//!
//! The header comes from anyone on the internet, so its cost is bounded before any hashing:
//! its size and number of entries are capped, the timestamp is judged first, and the body is
//! hashed once however many candidates the header names.

use hmac::digest::{CtOutput, generic_array::GenericArray};
use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// How far a signature's timestamp may be from now, either way, against replays.
pub const TOLERANCE_S: i64 = 300;

/// The longest `Stripe-Signature` header read. The provider's are about 150 bytes (a
/// timestamp and one or two 64-digit signatures while a secret rolls).
pub const MAX_HEADER_BYTES: usize = 8 * 1024;

/// The most entries (`t`, `v1`, and any other scheme alike) a header may carry.
pub const MAX_ENTRIES: usize = 16;

/// An HMAC-SHA256 tag's length in bytes.
const TAG_BYTES: usize = 32;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header")]
    Missing,
    #[error("malformed Stripe-Signature header")]
    Malformed,
    #[error("Stripe-Signature header over {MAX_HEADER_BYTES} bytes or {MAX_ENTRIES} entries")]
    TooLarge,
    #[error("signature timestamp outside the tolerance")]
    Stale,
    #[error("no signature matches")]
    BadSignature,
}

fn mac(secret: &[u8], t: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes keys of any length: `new_from_slice` cannot fail for it.
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts any key length");
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

/// The header value for `body` signed at `t` (what the provider, or the simulator, sends).
pub fn sign(secret: &[u8], t: i64, body: &[u8]) -> String {
    let digest = mac(secret, t, body).finalize().into_bytes();
    format!("t={t},v1={}", hex::encode(digest))
}

/// What a header names, read without hashing anything.
struct Parsed {
    t: i64,
    /// The `v1` entries that can be tags at all; a well-formed entry of another length is a
    /// candidate that matches nothing.
    candidates: [[u8; TAG_BYTES]; MAX_ENTRIES],
    count: usize,
    /// Some `v1` entry was present (even one that cannot match).
    any_v1: bool,
}

fn parse(header: &str) -> Result<Parsed, SignatureError> {
    if header.len() > MAX_HEADER_BYTES {
        return Err(SignatureError::TooLarge);
    }
    let mut t = None;
    let mut parsed = Parsed {
        t: 0,
        candidates: [[0; TAG_BYTES]; MAX_ENTRIES],
        count: 0,
        any_v1: false,
    };
    for (n, part) in header.split(',').enumerate() {
        if n >= MAX_ENTRIES {
            return Err(SignatureError::TooLarge);
        }
        let (k, v) = part
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match k {
            // Two timestamps would leave it to the reader which one was signed.
            "t" if t.is_some() => return Err(SignatureError::Malformed),
            "t" => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            "v1" => {
                if v.len() % 2 != 0 || !v.bytes().all(|b| b.is_ascii_hexdigit()) {
                    return Err(SignatureError::Malformed);
                }
                parsed.any_v1 = true;
                let slot = &mut parsed.candidates[parsed.count];
                if hex::decode_to_slice(v, slot).is_ok() {
                    parsed.count += 1;
                }
            }
            // Other schemes (`v0`, future ones) are ignored, as Stripe's own libraries do.
            _ => {}
        }
    }
    parsed.t = t.ok_or(SignatureError::Malformed)?;
    if !parsed.any_v1 {
        return Err(SignatureError::Malformed);
    }
    Ok(parsed)
}

/// Checks a `Stripe-Signature` header against the raw body, at `now` (unix seconds).
///
/// Order of the checks: presence, size and shape, then the timestamp, and only then one HMAC
/// of the body, compared in constant time with every candidate.
pub fn verify(
    secret: &[u8],
    header: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let parsed = parse(header)?;
    if now.abs_diff(parsed.t) > TOLERANCE_S.unsigned_abs() {
        return Err(SignatureError::Stale);
    }
    let tag = mac(secret, parsed.t, body).finalize();
    // `CtOutput`'s equality is constant time, so a forger learns nothing from timing; every
    // candidate is compared, matched or not.
    let matched = parsed.candidates[..parsed.count]
        .iter()
        .fold(false, |matched, candidate| {
            let candidate =
                CtOutput::<Hmac<Sha256>>::new(GenericArray::clone_from_slice(candidate));
            (candidate == tag) | matched
        });
    if matched {
        Ok(())
    } else {
        Err(SignatureError::BadSignature)
    }
}

/// A provider event: `data.object` is a PaymentIntent, or a charge for `charge.refunded`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct WebhookEvent {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: String,
    pub data: EventData,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EventData {
    pub object: EventObject,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct EventObject {
    pub id: String,
    /// `payment_intent` or `charge`.
    pub object: String,
    #[serde(default)]
    pub status: Option<String>,
    /// Set on charges: the intent the charge belongs to.
    #[serde(default)]
    pub payment_intent: Option<String>,
    #[serde(default)]
    pub metadata: Metadata,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Metadata {
    #[serde(default)]
    pub attempt_id: Option<String>,
}

impl WebhookEvent {
    /// The payment the event is about, to re-fetch rather than trust the payload.
    pub fn payment_id(&self) -> &str {
        let o = &self.data.object;
        o.payment_intent.as_deref().unwrap_or(&o.id)
    }

    pub fn attempt_id(&self) -> Option<&str> {
        self.data.object.metadata.attempt_id.as_deref()
    }
}

#[derive(Debug, thiserror::Error)]
#[error("malformed webhook event: {0}")]
pub struct MalformedEvent(#[from] serde_json::Error);

pub fn parse_event(body: &[u8]) -> Result<WebhookEvent, MalformedEvent> {
    Ok(serde_json::from_slice(body)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SECRET: &[u8] = b"whsec_test";
    const BODY: &[u8] = br#"{"id":"evt_1","type":"payment_intent.succeeded","data":{"object":{"id":"pi_1","object":"payment_intent","status":"succeeded","metadata":{"attempt_id":"att_1"}}}}"#;

    #[test]
    fn a_signed_body_verifies_and_parses() {
        let header = sign(SECRET, 1_000, BODY);
        assert_eq!(verify(SECRET, Some(&header), BODY, 1_100), Ok(()));
        let event = parse_event(BODY).unwrap();
        assert_eq!(event.kind, "payment_intent.succeeded");
        assert_eq!(event.payment_id(), "pi_1");
        assert_eq!(event.attempt_id(), Some("att_1"));
    }

    #[test]
    fn any_of_several_v1_entries_may_match() {
        let good = sign(SECRET, 1_000, BODY);
        let other = sign(b"old secret", 1_000, BODY);
        let v1 = good.split_once(",v1=").unwrap().1;
        let header = format!("{other},v0=abcd,v1={v1}");
        assert_eq!(verify(SECRET, Some(&header), BODY, 1_000), Ok(()));
    }

    #[test]
    fn each_failure_has_its_own_error() {
        let header = sign(SECRET, 1_000, BODY);
        assert_eq!(
            verify(SECRET, None, BODY, 1_000),
            Err(SignatureError::Missing)
        );
        for bad in [
            "",
            "t=abc,v1=00",
            "v1=00",
            "t=1000",
            "t=1000,v1=zz",
            "garbage",
        ] {
            assert_eq!(
                verify(SECRET, Some(bad), BODY, 1_000),
                Err(SignatureError::Malformed),
                "{bad}"
            );
        }
        assert_eq!(
            verify(b"wrong", Some(&header), BODY, 1_000),
            Err(SignatureError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, Some(&header), b"{}", 1_000),
            Err(SignatureError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, Some(&header), BODY, 1_000 + TOLERANCE_S + 1),
            Err(SignatureError::Stale)
        );
        assert!(parse_event(b"{\"id\":1}").is_err());
    }

    #[test]
    fn the_timestamp_is_judged_before_any_signature() {
        // A wrong signature at a stale time is refused as stale: nothing was hashed.
        let header = sign(b"wrong", 1_000, BODY);
        assert_eq!(
            verify(SECRET, Some(&header), BODY, 1_000 - TOLERANCE_S - 1),
            Err(SignatureError::Stale)
        );
        let edge = sign(SECRET, 1_000, BODY);
        assert_eq!(
            verify(SECRET, Some(&edge), BODY, 1_000 + TOLERANCE_S),
            Ok(())
        );
        // Timestamps at the ends of the integer range are stale, not an overflow.
        for t in [i64::MIN, i64::MAX] {
            let header = format!("t={t},v1={}", "00".repeat(32));
            assert_eq!(
                verify(SECRET, Some(&header), BODY, 1_000),
                Err(SignatureError::Stale),
                "{t}"
            );
        }
    }

    #[test]
    fn oversized_headers_are_refused_unread() {
        let good = sign(SECRET, 1_000, BODY);
        // 60,000 empty candidates, as an attacker sends them.
        let flood = format!("t=1000{}", ",v1=".repeat(60_000));
        assert_eq!(
            verify(SECRET, Some(&flood), BODY, 1_000),
            Err(SignatureError::TooLarge)
        );
        let long = format!("{good},v0={}", "0".repeat(MAX_HEADER_BYTES));
        assert_eq!(
            verify(SECRET, Some(&long), BODY, 1_000),
            Err(SignatureError::TooLarge)
        );
        // Unknown schemes count toward the cap like `v1` entries do.
        let padded = |n: usize| format!("{good}{}", ",v9=ab".repeat(n));
        assert_eq!(
            verify(SECRET, Some(&padded(MAX_ENTRIES - 2)), BODY, 1_000),
            Ok(())
        );
        assert_eq!(
            verify(SECRET, Some(&padded(MAX_ENTRIES - 1)), BODY, 1_000),
            Err(SignatureError::TooLarge)
        );
    }

    #[test]
    fn the_matching_candidate_may_come_last_among_the_most_allowed() {
        let good = sign(SECRET, 1_000, BODY);
        let v1 = good.split_once(",v1=").unwrap().1;
        let wrong = "ab".repeat(32);
        let mut header = "t=1000".to_owned();
        for _ in 0..MAX_ENTRIES - 2 {
            header.push_str(&format!(",v1={wrong}"));
        }
        header.push_str(&format!(",v1={v1}"));
        assert_eq!(verify(SECRET, Some(&header), BODY, 1_000), Ok(()));
        // Well-formed hex of another length is a candidate that matches nothing.
        assert_eq!(
            verify(SECRET, Some("t=1000,v1=,v1=abcd"), BODY, 1_000),
            Err(SignatureError::BadSignature)
        );
        assert_eq!(
            verify(SECRET, Some(&format!("t=1000,{good}")), BODY, 1_000),
            Err(SignatureError::Malformed),
            "two timestamps"
        );
        assert_eq!(
            verify(SECRET, Some("t=1000,v1=abc"), BODY, 1_000),
            Err(SignatureError::Malformed),
            "odd length"
        );
    }
}
