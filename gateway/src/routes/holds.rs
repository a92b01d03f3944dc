//! Holding seats, extending, checking out and releasing: the reservation core's transitions,
//! reached only with a valid admission token of the hold's event and session.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};

use reservation::{EventId, Hold, HoldId, HoldState, SeatId};

use crate::auth::{Admitted, Reader};
use crate::clock::{rfc3339, seconds_until};
use crate::extract::{JsonBody, PathId};
use crate::idempotent;
use crate::problem::Problem;
use crate::requests::{CheckoutRequest, HoldRequest};
use crate::state::AppState;

/// An absolute `http(s)` URL of sane length; the provider is asked to send the buyer there,
/// so nothing else (no `javascript:`, no relative path) is passed on.
fn valid_return_url(url: &str) -> bool {
    (url.starts_with("https://") || url.starts_with("http://"))
        && url.len() <= 2048
        && !url.bytes().any(|b| b.is_ascii_control() || b == b' ')
}

/// A hold as API.md shows it; `expires_in_s` is what a countdown starts from.
pub fn hold_json(hold: &Hold) -> Value {
    let mut body = json!({
        "hold_id": hold.hold_id.as_str(),
        "event": hold.event_id.as_str(),
        "state": hold.state.as_str(),
        "seats": hold.seats.iter().map(SeatId::as_str).collect::<Vec<_>>(),
        "expires_at": rfc3339(hold.expires_at_ms),
        "expires_in_s": if hold.state == HoldState::Held { seconds_until(hold.expires_at_ms) } else { 0 },
        "total_cents": hold.total_cents,
    });
    if let Some(order) = &hold.order_id {
        body["order_id"] = json!(order.as_str());
    }
    if let Some(error) = &hold.last_payment_error {
        body["last_payment_error"] = json!(error);
    }
    body
}

/// The admission token was checked against the path's event at the edge.
pub(crate) async fn create(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    Admitted { session, .. }: Admitted,
    headers: HeaderMap,
    body: JsonBody<HoldRequest>,
) -> Result<Response, Problem> {
    let request = body.value;
    let key = idempotent::key(&headers)?;
    idempotent::once(&state, key.as_deref(), session.as_str(), "hold", &body.hash, || async {
        let started = std::time::Instant::now();
        let hold = match request {
            HoldRequest { seats: Some(seats), section: None, quantity: None } => {
                let seats = seats
                    .into_iter()
                    .map(|s| s.parse::<SeatId>())
                    .collect::<Result<Vec<_>, _>>()
                    .map_err(Problem::from)?;
                state.store.hold(&session, &seats).await
            }
            HoldRequest { seats: None, section: Some(section), quantity: Some(quantity) } => {
                state.store.hold_ga(&session, &section, quantity).await
            }
            _ => return Err(Problem::bad_request("give either `seats` or `section` with `quantity`")),
        };
        state.health.record_hold(started.elapsed());
        let hold = hold.inspect_err(|error| {
            let outcome =
                if matches!(error, reservation::Error::SeatUnavailable { .. }) { "conflict" } else { "refused" };
            metrics::counter!("floodgate_holds_total", "outcome" => outcome).increment(1);
        })?;
        if hold.event_id != event {
            // The session's token named this event; the store agrees or something is badly off.
            tracing::error!(hold = %hold.hold_id, "hold created for another event than the path's");
            return Err(Problem::internal());
        }
        metrics::counter!("floodgate_holds_total", "outcome" => "held").increment(1);
        let mut body = hold_json(&hold);
        body["receipt_key"] = json!(hold.receipt_key);
        Ok((StatusCode::CREATED, body))
    })
    .await
}

pub(crate) async fn extend(
    State(state): State<AppState>,
    PathId(hold): PathId<HoldId>,
    Admitted { session, .. }: Admitted,
) -> Result<Response, Problem> {
    let hold = state.store.extend(&session, &hold).await?;
    Ok(axum::Json(json!({
        "expires_at": rfc3339(hold.expires_at_ms),
        "expires_in_s": seconds_until(hold.expires_at_ms),
    }))
    .into_response())
}

pub(crate) async fn checkout(
    State(state): State<AppState>,
    PathId(hold): PathId<HoldId>,
    Admitted { session, .. }: Admitted,
    headers: HeaderMap,
    body: JsonBody<CheckoutRequest>,
) -> Result<Response, Problem> {
    let key = idempotent::key(&headers)?
        .ok_or_else(|| Problem::bad_request("checkout needs an Idempotency-Key header"))?;
    let request = body.value;
    if request.payment_method.is_empty() || request.payment_method.len() > 64 {
        return Err(Problem::bad_request(
            "payment_method must be 1-64 characters",
        ));
    }
    if let Some(url) = &request.return_url
        && !valid_return_url(url)
    {
        return Err(Problem::bad_request(
            "return_url must be an absolute http(s) URL of at most 2048 characters",
        ));
    }
    let route = format!("checkout:{}", hold.as_str());
    idempotent::once(&state, Some(&key), session.as_str(), &route, &body.hash, || async {
        let attempt = state
            .store
            .begin_payment_returning(&session, &hold, &request.payment_method, request.return_url.as_deref())
            .await?;
        Ok((
            StatusCode::ACCEPTED,
            json!({ "hold_id": hold.as_str(), "state": "paying", "payment_id": attempt.attempt_id.as_str() }),
        ))
    })
    .await
}

pub(crate) async fn release(
    State(state): State<AppState>,
    PathId(hold): PathId<HoldId>,
    Admitted { session, .. }: Admitted,
) -> Result<Response, Problem> {
    state.store.release(&session, &hold).await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// With an admission token the hold must be the session's; with a receipt key, the key's.
pub(crate) async fn read(
    State(state): State<AppState>,
    PathId(hold_id): PathId<HoldId>,
    reader: Reader,
) -> Result<Response, Problem> {
    let hold = match reader {
        Reader::Receipt { key, .. } => {
            let hold = state
                .store
                .get_hold_by_receipt(&key)
                .await
                .map_err(|_| Problem::not_found("no such hold"))?;
            if hold.hold_id != hold_id {
                return Err(Problem::not_found("no such hold"));
            }
            hold
        }
        Reader::Admitted(Admitted { session, .. }) => {
            let hold = state.store.get_hold(&hold_id).await?;
            if hold.session_id != session {
                return Err(Problem::not_found("no such hold"));
            }
            hold
        }
    };
    let mut body = hold_json(&hold);
    // A payment waiting for the buyer to authenticate (3-D Secure): the page follows
    // `next_action` as Stripe's own clients do.
    if hold.state == HoldState::Paying
        && let Some(url) = state.store.next_action_url(&hold.hold_id).await?
    {
        body["next_action"] = json!({"type": "redirect_to_url", "redirect_to_url": {"url": url}});
    }
    Ok(axum::Json(body).into_response())
}
