//! Who is calling, decided from the headers before any byte of the body is read. Each kind of
//! caller is an extractor: `QueueTicket`, `Admitted`, `Reader` (admission token or receipt
//! key), `Organizer`, `SignedWebhook`. The route book names the kind of every route; the edge
//! runs that check first (`authenticate`) and leaves the result for the handler's extractor,
//! so a request that fails it is refused without its body being waited for.

use axum::extract::{FromRequestParts, RawPathParams};
use axum::http::HeaderMap;
use axum::http::request::Parts;
use subtle::ConstantTimeEq;

use admission::{AdmissionClaims, AdmissionError, QueueClaims};
use reservation::organizer_keys::Role;
use reservation::{Actor, SessionId};

use crate::problem::Problem;
use crate::secrets::hash_key;
use crate::state::AppState;

pub const RECEIPT_HEADER: &str = "floodgate-receipt";
pub const SIGNATURE_HEADER: &str = "stripe-signature";
/// A provider's signature header is a timestamp and a few signatures: a couple of hundred
/// bytes. Anything far beyond is refused before the body is read or a hash computed.
pub const MAX_SIGNATURE_HEADER: usize = 4096;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Caller {
    /// No credentials (a socket's token travels in its query and is checked over the socket).
    Anyone,
    /// A queue token of the path's event.
    QueueToken,
    /// An admission token (of the path's event, when the path names one).
    AdmissionToken,
    /// An admission token, or a hold's receipt key (`Floodgate-Receipt`).
    AdmissionOrReceipt,
    /// An organizer key of at least this role.
    Organizer(Role),
    /// The payment provider, by its `Stripe-Signature` over the body.
    WebhookSignature,
}

/// Checks the caller of `parts` as `caller` says, before the body is read, and leaves what was
/// verified in the request's extensions for the handler's extractor.
pub async fn authenticate(
    caller: Caller,
    parts: &mut Parts,
    state: &AppState,
) -> Result<(), Problem> {
    match caller {
        Caller::Anyone => {}
        Caller::QueueToken => {
            let ticket = QueueTicket::verify(parts, state).await?;
            if state.admission.turn_has_come(&ticket.0) {
                parts.extensions.insert(TurnHasCome);
            }
            parts.extensions.insert(ticket);
        }
        Caller::AdmissionToken => {
            let admitted = Admitted::verify(parts, state).await?;
            parts.extensions.insert(admitted);
        }
        Caller::AdmissionOrReceipt => {
            let reader = Reader::verify(parts, state).await?;
            parts.extensions.insert(reader);
        }
        Caller::Organizer(needed) => {
            let organizer = Organizer::verify(parts, state).await?.at_least(needed)?;
            parts.extensions.insert(organizer);
        }
        Caller::WebhookSignature => {
            let signed = SignedWebhook::verify(&parts.headers)?;
            parts.extensions.insert(signed);
        }
    }
    Ok(())
}

/// A queue token whose place has been offered: its claim is one of the few the meter lets
/// through (at most the cap's), owed a real answer like an admitted buyer's request.
#[derive(Clone, Copy, Debug)]
pub struct TurnHasCome;

/// Whether the request was verified as an admitted buyer's, or as a claim of an offered place
/// (by `authenticate`): such a request waits for a permit rather than being shed
/// (`overload.rs`).
pub fn carries_admission(extensions: &axum::http::Extensions) -> bool {
    extensions.get::<Admitted>().is_some()
        || extensions.get::<TurnHasCome>().is_some()
        || matches!(
            extensions.get::<Reader>(),
            Some(Reader::Admitted(_) | Reader::Receipt { issued: true, .. })
        )
}

pub fn bearer(headers: &HeaderMap) -> Option<&str> {
    let value = headers
        .get(axum::http::header::AUTHORIZATION)?
        .to_str()
        .ok()?;
    let (scheme, token) = value.split_once(' ')?;
    scheme
        .eq_ignore_ascii_case("bearer")
        .then(|| token.trim())
        .filter(|t| !t.is_empty())
}

/// The path's `{event}`, when the route has one (as text: the token names it so).
async fn path_event(parts: &mut Parts, state: &AppState) -> Option<String> {
    let params = RawPathParams::from_request_parts(parts, state).await.ok()?;
    params
        .iter()
        .find(|(name, _)| *name == "event")
        .map(|(_, value)| value.to_owned())
}

/// Checks a queue token for `event` (the waiting-room socket, whose token is in its query).
pub fn queued(state: &AppState, event: &str, token: Option<&str>) -> Result<QueueClaims, Problem> {
    Ok(state.admission.verify_queue_token(event, token)?)
}

/// A buyer in the queue of the path's event, by a queue token.
#[derive(Clone, Debug)]
pub struct QueueTicket(pub QueueClaims);

impl QueueTicket {
    async fn verify(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let event = path_event(parts, state).await.unwrap_or_default();
        let claims = state
            .admission
            .verify_queue_token(&event, bearer(&parts.headers))?;
        Ok(Self(claims))
    }
}

/// An admitted buyer: verified admission claims and the session they name.
#[derive(Clone, Debug)]
pub struct Admitted {
    pub claims: AdmissionClaims,
    pub session: SessionId,
}

impl Admitted {
    async fn verify(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        let event = path_event(parts, state).await;
        let token = bearer(&parts.headers);
        let claims = match event {
            Some(event) => state.admission.verify_admission_token(&event, token)?,
            None => state.admission.verify_admission_token_any_event(token)?,
        };
        let session = claims
            .session_id
            .parse::<SessionId>()
            .map_err(|_| AdmissionError::TokenInvalid(admission::InvalidToken::Malformed))?;
        Ok(Self { claims, session })
    }
}

/// Who may read a hold or an order: its session's admission token, or its receipt key (which
/// keeps working after the session ended). The receipt is compared with the hold's by the
/// handler; an unknown receipt reads as "no such hold".
#[derive(Clone, Debug)]
pub enum Reader {
    Admitted(Admitted),
    /// `issued`: the key carries this deployment's tag, so it is a buyer's who held seats (which
    /// hold it opens, if any, is the database's to say).
    Receipt {
        key: String,
        issued: bool,
    },
}

impl Reader {
    async fn verify(parts: &mut Parts, state: &AppState) -> Result<Self, Problem> {
        if let Some(receipt) = receipt(&parts.headers) {
            return Ok(Self::Receipt {
                key: receipt.to_owned(),
                issued: state.store.receipt_keys().is_issued(receipt),
            });
        }
        Ok(Self::Admitted(Admitted::verify(parts, state).await?))
    }
}

/// The organizer's team member calling: the key's name and id (for the audit log) and role.
#[derive(Clone, Debug)]
pub struct Organizer {
    pub actor: Actor,
    pub role: Role,
}

/// The key of the configuration (or the one generated at first start): always an admin, and
/// recorded under this id and name.
pub const CONFIGURED_KEY_ID: &str = "configured";
pub const CONFIGURED_KEY_NAME: &str = "organizer";

/// A key of a role below the route's.
#[derive(Debug, Clone, Copy)]
pub struct RoleForbidden {
    pub needed: Role,
    pub has: Role,
}

impl Organizer {
    /// The configured keys are compared as hashes in constant time; a team key is looked up by
    /// its hash in the key book (`key_book.rs`), which sees a revocation within a second.
    async fn verify(parts: &Parts, state: &AppState) -> Result<Self, Problem> {
        let presented = bearer(&parts.headers)
            .map(hash_key)
            .ok_or_else(|| Problem::unauthorized("an organizer key is needed"))?;
        let configured = state
            .settings
            .organizer_key_hashes
            .iter()
            .fold(subtle::Choice::from(0), |found, known| {
                found | known.ct_eq(&presented)
            });
        if bool::from(configured) {
            return Ok(Self {
                actor: Actor {
                    name: CONFIGURED_KEY_NAME.to_owned(),
                    key_id: CONFIGURED_KEY_ID.to_owned(),
                },
                role: Role::Admin,
            });
        }
        match state.keys.identify(&state.store, &presented).await? {
            Some(member) => Ok(Self {
                actor: Actor {
                    name: member.name,
                    key_id: member.key_id,
                },
                role: member.role,
            }),
            None => Err(Problem::unauthorized("wrong organizer key")),
        }
    }

    fn at_least(self, needed: Role) -> Result<Self, RoleForbidden> {
        if self.role >= needed {
            Ok(self)
        } else {
            Err(RoleForbidden {
                needed,
                has: self.role,
            })
        }
    }
}

/// A webhook delivery carrying a signature header of sane size. The signature itself covers
/// the body, so it is checked against the body once that is read (`webhook_intake`).
#[derive(Clone, Debug)]
pub struct SignedWebhook(pub String);

impl SignedWebhook {
    fn verify(headers: &HeaderMap) -> Result<Self, Problem> {
        use reservation::payments::webhook::SignatureError;
        let value = headers
            .get(SIGNATURE_HEADER)
            .ok_or(SignatureError::Missing)?;
        if value.len() > MAX_SIGNATURE_HEADER {
            return Err(SignatureError::Malformed.into());
        }
        let text = value.to_str().map_err(|_| SignatureError::Malformed)?;
        Ok(Self(text.to_owned()))
    }
}

/// The receipt key of the request, if any.
pub fn receipt(headers: &HeaderMap) -> Option<&str> {
    headers
        .get(RECEIPT_HEADER)?
        .to_str()
        .ok()
        .map(str::trim)
        .filter(|k| !k.is_empty())
}

/// The extractors take what `authenticate` left; a route whose book entry names another kind
/// of caller gets the check done here instead (still from the headers alone).
macro_rules! caller_extractor {
    ($type:ty, |$parts:ident, $state:ident| $verify:expr) => {
        impl FromRequestParts<AppState> for $type {
            type Rejection = Problem;

            async fn from_request_parts(
                $parts: &mut Parts,
                $state: &AppState,
            ) -> Result<Self, Self::Rejection> {
                if let Some(done) = $parts.extensions.remove::<$type>() {
                    return Ok(done);
                }
                $verify
            }
        }
    };
}

caller_extractor!(QueueTicket, |parts, state| QueueTicket::verify(
    parts, state
)
.await);
caller_extractor!(Admitted, |parts, state| Admitted::verify(parts, state)
    .await);
caller_extractor!(Reader, |parts, state| Reader::verify(parts, state).await);
// A route the book does not name an organizer role for asks for the highest.
caller_extractor!(Organizer, |parts, state| Ok(Organizer::verify(
    parts, state
)
.await?
.at_least(Role::Admin)?));
caller_extractor!(SignedWebhook, |parts, state| {
    let _ = state;
    SignedWebhook::verify(&parts.headers)
});

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    #[test]
    fn bearer_is_case_insensitive_and_rejects_empty() {
        let mut h = HeaderMap::new();
        h.insert("authorization", HeaderValue::from_static("bearer abc"));
        assert_eq!(bearer(&h), Some("abc"));
        h.insert("authorization", HeaderValue::from_static("Bearer "));
        assert_eq!(bearer(&h), None);
        h.insert("authorization", HeaderValue::from_static("Basic abc"));
        assert_eq!(bearer(&h), None);
    }

    #[test]
    fn a_huge_signature_header_is_refused_from_the_headers() {
        let mut h = HeaderMap::new();
        assert!(SignedWebhook::verify(&h).is_err());
        let huge = format!("t=1,{}", "v1=,".repeat(60_000));
        h.insert(SIGNATURE_HEADER, HeaderValue::from_str(&huge).unwrap());
        assert_eq!(SignedWebhook::verify(&h).unwrap_err().code, "bad_signature");
        h.insert(SIGNATURE_HEADER, HeaderValue::from_static("t=1,v1=ab"));
        assert!(SignedWebhook::verify(&h).is_ok());
    }
}
