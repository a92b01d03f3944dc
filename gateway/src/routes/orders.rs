//! Reading an order, with the admission token of its session or the hold's receipt key (which
//! keeps working for days after the session ended).

use axum::extract::State;
use axum::response::{IntoResponse, Response};
use serde_json::json;
use subtle::ConstantTimeEq;

use reservation::{OrderId, SeatId};

use crate::auth::{Admitted, Reader};
use crate::extract::PathId;
use crate::problem::Problem;
use crate::state::AppState;

pub(crate) async fn read(
    State(state): State<AppState>,
    PathId(order_id): PathId<OrderId>,
    reader: Reader,
) -> Result<Response, Problem> {
    let not_found = || Problem::not_found("no such order");
    let order = state
        .store
        .get_order(&order_id)
        .await?
        .ok_or_else(not_found)?;
    let hold = state.store.get_hold(&order.hold_id).await?;
    let allowed = match &reader {
        // In constant time: how long a wrong key took must not tell how much of it was right.
        Reader::Receipt { key, .. } => {
            bool::from(hold.receipt_key.as_bytes().ct_eq(key.as_bytes()))
        }
        Reader::Admitted(Admitted { session, .. }) => hold.session_id == *session,
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
