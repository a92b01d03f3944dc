//! Reading an order, with the admission token of its session or the hold's receipt key (which
//! keeps working for days after the session ended).

use axum::Router;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use serde_json::json;

use reservation::{OrderId, SeatId};

use crate::auth::{self, Admitted};
use crate::extract::PathId;
use crate::problem::Problem;
use crate::state::AppState;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/orders/{order}", get(read))
}

async fn read(
    State(state): State<AppState>,
    PathId(id): PathId,
    headers: HeaderMap,
) -> Result<Response, Problem> {
    let order_id = id
        .parse::<OrderId>()
        .map_err(|error| Problem::bad_request(error.to_string()))?;
    let not_found = || Problem::not_found("no such order");
    let order = state
        .store
        .get_order(&order_id)
        .await?
        .ok_or_else(not_found)?;
    let hold = state.store.get_hold(&order.hold_id).await?;
    let allowed = if let Some(receipt) = auth::receipt(&headers) {
        hold.receipt_key.as_bytes() == receipt.as_bytes()
    } else {
        let Admitted { session, .. } = auth::admitted(&state, &headers, None)?;
        hold.session_id == session
    };
    if !allowed {
        return Err(not_found());
    }
    Ok(axum::Json(json!({
        "order_id": order.order_id.as_str(),
        "event": order.event_id.as_str(),
        "hold_id": order.hold_id.as_str(),
        "seats": order.seats.iter().map(SeatId::as_str).collect::<Vec<_>>(),
        "total_cents": order.total_cents,
        "status": order.status,
        "payment_status": order.payment_status,
    }))
    .into_response())
}
