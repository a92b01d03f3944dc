//! Provider webhooks: the `Stripe-Signature: t=UNIX,v1=HEX` scheme and the event payload.
//!
//! The signature is HMAC-SHA256 over `"{t}.{body}"` with the webhook secret. Several `v1`
//! entries are allowed (the provider signs with old and new secrets while rolling them).

use hmac::{Hmac, Mac};
use serde::Deserialize;
use sha2::Sha256;

/// How far a signature's timestamp may be from now, either way, against replays.
pub const TOLERANCE_S: i64 = 300;

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("no Stripe-Signature header")]
    Missing,
    #[error("malformed Stripe-Signature header")]
    Malformed,
    #[error("no signature matches")]
    BadSignature,
    #[error("signature timestamp outside the tolerance")]
    TooOld,
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

/// Checks a `Stripe-Signature` header against the raw body, at `now` (unix seconds).
pub fn verify(
    secret: &[u8],
    header: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<(), SignatureError> {
    let header = header.ok_or(SignatureError::Missing)?;
    let mut t = None;
    let mut signatures = Vec::new();
    for part in header.split(',') {
        let (k, v) = part
            .trim()
            .split_once('=')
            .ok_or(SignatureError::Malformed)?;
        match k {
            "t" => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            "v1" => signatures.push(hex::decode(v).map_err(|_| SignatureError::Malformed)?),
            // Other schemes (`v0`, future ones) are ignored, as Stripe's own libraries do.
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if signatures.is_empty() {
        return Err(SignatureError::Malformed);
    }
    // `verify_slice` compares in constant time, so a forger learns nothing from timing.
    if !signatures
        .iter()
        .any(|s| mac(secret, t, body).verify_slice(s).is_ok())
    {
        return Err(SignatureError::BadSignature);
    }
    if (now - t).abs() > TOLERANCE_S {
        return Err(SignatureError::TooOld);
    }
    Ok(())
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
            Err(SignatureError::TooOld)
        );
        assert!(parse_event(b"{\"id\":1}").is_err());
    }
}
