//! Who is calling: queue tokens, admission tokens and receipt keys, checked at the edge so
//! handlers receive verified claims. A route that needs an admission token refuses a queue
//! token with `not_admitted`, and a token of another event with `wrong_event`.

use axum::http::HeaderMap;
use subtle::ConstantTimeEq;

use admission::{AdmissionClaims, AdmissionError, QueueClaims};
use reservation::SessionId;

use crate::problem::Problem;
use crate::secrets::hash_key;
use crate::state::AppState;

pub const RECEIPT_HEADER: &str = "floodgate-receipt";

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

/// An admitted buyer: verified admission claims and the session they name.
pub struct Admitted {
    pub claims: AdmissionClaims,
    pub session: SessionId,
}

/// Checks the admission token of the request; `event` is the path's event when it has one.
pub fn admitted(
    state: &AppState,
    headers: &HeaderMap,
    event: Option<&str>,
) -> Result<Admitted, Problem> {
    let token = bearer(headers);
    let claims = match event {
        Some(event) => state.admission.verify_admission_token(event, token)?,
        None => state.admission.verify_admission_token_any_event(token)?,
    };
    let session = claims.session_id.parse::<SessionId>().map_err(|_| {
        Problem::from(AdmissionError::TokenInvalid(
            admission::InvalidToken::Malformed,
        ))
    })?;
    Ok(Admitted { claims, session })
}

/// Checks a queue token for `event`.
pub fn queued(state: &AppState, event: &str, token: Option<&str>) -> Result<QueueClaims, Problem> {
    Ok(state.admission.verify_queue_token(event, token)?)
}

/// Is this bearer one of the organizer keys? Compared as hashes, in constant time.
pub fn organizer(state: &AppState, headers: &HeaderMap) -> Result<(), Problem> {
    let presented = bearer(headers)
        .map(hash_key)
        .ok_or_else(|| Problem::unauthorized("an organizer key is needed"))?;
    let matched = state
        .settings
        .organizer_key_hashes
        .iter()
        .fold(subtle::Choice::from(0), |found, known| {
            found | known.ct_eq(&presented)
        });
    if bool::from(matched) {
        Ok(())
    } else {
        Err(Problem::unauthorized("wrong organizer key"))
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
}
