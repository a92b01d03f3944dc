//! The waiting room over WebSocket: one task per socket, woken once per tick by the event's
//! change feed (a `watch`), so a tick costs one wake-up per socket and no backend call; the
//! backend is asked only when this buyer's turn may have come.

use std::time::Duration;

use axum::Router;
use axum::extract::ws::{CloseFrame, Message, WebSocket, WebSocketUpgrade, close_code};
use axum::extract::{Query, State};
use axum::response::Response;
use axum::routing::get;
use rand::Rng;
use serde::Deserialize;
use serde_json::{Value, json};

use admission::{EventState, QueueClaims, QueueStatus, Snapshot};

use crate::auth;
use crate::clock::rfc3339;
use crate::extract::PathId;
use crate::problem::Problem;
use crate::state::AppState;

/// Read buffer per socket: tungstenite's 128 KiB default would cost ≈137 KB per idle buyer.
const READ_BUFFER: usize = 4 * 1024;
const MAX_FRAME: usize = 1024;
const PING_EVERY: Duration = Duration::from_secs(25);
/// Client messages allowed per second before the socket is closed as a flood.
const MAX_MESSAGES_PER_S: u32 = 5;

pub fn router() -> Router<AppState> {
    Router::new().route("/api/events/{event}/queue/ws", get(upgrade))
}

#[derive(Deserialize)]
struct TokenQuery {
    token: Option<String>,
}

async fn upgrade(
    State(state): State<AppState>,
    PathId(event): PathId,
    Query(query): Query<TokenQuery>,
    ws: WebSocketUpgrade,
) -> Result<Response, Problem> {
    let checked = auth::queued(&state, &event, query.token.as_deref());
    Ok(ws
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_frame_size(MAX_FRAME)
        .max_message_size(MAX_FRAME)
        .on_upgrade(move |socket| async move {
            match checked {
                Ok(claims) => serve(state, claims, socket).await,
                Err(problem) => refuse(socket, problem.code).await,
            }
        }))
}

async fn refuse(mut socket: WebSocket, code: &'static str) {
    let _ = socket
        .send(text(&json!({"type": "error", "code": code})))
        .await;
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code: close_code::POLICY,
            reason: code.into(),
        })))
        .await;
}

fn text(value: &Value) -> Message {
    Message::Text(value.to_string().into())
}

/// What this socket last told its buyer, so only changes are sent.
#[derive(Default, PartialEq)]
struct Told {
    position: Option<u64>,
    wait: Option<u64>,
    status: Option<&'static str>,
}

struct LiveSocket;

impl LiveSocket {
    fn open() -> Self {
        metrics::gauge!("floodgate_live_sockets").increment(1.0);
        Self
    }
}

impl Drop for LiveSocket {
    fn drop(&mut self) {
        metrics::gauge!("floodgate_live_sockets").decrement(1.0);
    }
}

async fn serve(state: AppState, claims: QueueClaims, mut socket: WebSocket) {
    let _live = LiveSocket::open();
    let mut feed = state.admission.subscribe(&claims.event);
    let fanout = state.fanouts.of(&claims.event);
    let mut told = Told::default();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut awaiting_pong = false;
    let mut window_start = tokio::time::Instant::now();
    let mut messages_in_window = 0u32;
    // A reconnect resumes the same place: tell the buyer where they stand at once.
    let first = feed.borrow_and_update().clone();
    if !push(&state, &claims, &first, &mut told, &mut socket).await {
        return;
    }
    loop {
        tokio::select! {
            () = state.shutdown.cancelled() => {
                // Jittered, so a drained instance does not send everyone to the others at once.
                let after_ms = rand::rng().random_range(500..5_000);
                let _ = socket.send(text(&json!({"type": "reconnect", "after_ms": after_ms}))).await;
                let _ = socket.send(Message::Close(Some(CloseFrame { code: close_code::RESTART, reason: "reconnect".into() }))).await;
                return;
            }
            changed = feed.changed() => {
                if changed.is_err() {
                    return;
                }
                let snapshot = feed.borrow_and_update().clone();
                if !push(&state, &claims, &snapshot, &mut told, &mut socket).await {
                    return;
                }
                fanout.done(snapshot.at_ms);
            }
            _ = ping.tick() => {
                if awaiting_pong {
                    return; // the peer went away without closing
                }
                awaiting_pong = true;
                if socket.send(Message::Ping(Default::default())).await.is_err() {
                    return;
                }
            }
            incoming = socket.recv() => {
                let Some(Ok(message)) = incoming else { return };
                if window_start.elapsed() >= Duration::from_secs(1) {
                    window_start = tokio::time::Instant::now();
                    messages_in_window = 0;
                }
                messages_in_window += 1;
                if messages_in_window > MAX_MESSAGES_PER_S {
                    let _ = socket.send(Message::Close(Some(CloseFrame { code: close_code::POLICY, reason: "too many messages".into() }))).await;
                    return;
                }
                match message {
                    Message::Pong(_) => awaiting_pong = false,
                    Message::Text(body) if is_claim(&body) => {
                        if !claim(&state, &claims, &mut told, &mut socket).await {
                            return;
                        }
                    }
                    Message::Close(_) => return,
                    Message::Ping(_) => {}
                    _ => {
                        let _ = socket.send(Message::Close(Some(CloseFrame { code: close_code::POLICY, reason: "unexpected message".into() }))).await;
                        return;
                    }
                }
            }
        }
    }
}

fn is_claim(body: &str) -> bool {
    serde_json::from_str::<Value>(body)
        .ok()
        .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some("claim"))
}

/// Sends what changed for this buyer. Returns false when the socket is gone.
async fn push(
    state: &AppState,
    claims: &QueueClaims,
    snapshot: &Snapshot,
    told: &mut Told,
    socket: &mut WebSocket,
) -> bool {
    if snapshot.at_ms == 0 {
        // No tick has run for this event on this instance yet: nothing true to say.
        return true;
    }
    let event_status = match snapshot.state {
        // Before opening the order is not drawn yet: places mean nothing until then.
        EventState::PreQueue => Some("pre_queue"),
        EventState::Paused => Some("paused"),
        EventState::SoldOut => Some("sold_out"),
        EventState::Closed => Some("closed"),
        EventState::Open => None,
    };
    // A FIFO ticket of the current epoch finds its place in the snapshot. A pre-queue ticket's
    // place is its rank in the permutation, and a ticket of an older epoch (Redis was lost)
    // must re-register: both ask the backend, as polling does.
    let from_snapshot = !claims.pre_queue && snapshot.epoch == claims.epoch;
    let hint = from_snapshot
        .then(|| snapshot.position_hint(claims))
        .flatten();
    let sold_out = snapshot.state == EventState::SoldOut;
    if let Some(status) = event_status {
        // Sold out can be a moment (lapsed holds give seats back): a ticket whose turn may
        // have come hears about its offer first, so offers are not skipped in queue order.
        if !sold_out || hint.is_some() {
            return send_status(told, socket, status).await;
        }
    }
    if let Some(position) = hint {
        let wait = snapshot.estimated_wait_s(position);
        return send_position(told, socket, position, wait).await;
    }
    // Boxed: this backend call's future would otherwise be inlined into every idle socket's
    // task and sized into its memory for the socket's whole life.
    match Box::pin(state.admission.status(claims)).await {
        Ok(status) => match status.status {
            QueueStatus::Waiting | QueueStatus::PreQueue | QueueStatus::SoldOut if sold_out => {
                send_status(told, socket, "sold_out").await
            }
            QueueStatus::Waiting => match status.position {
                Some(position) => {
                    send_position(told, socket, position, status.estimated_wait_s).await
                }
                None => true,
            },
            QueueStatus::Offered => {
                if told.status == Some("offered") {
                    return true;
                }
                told.status = Some("offered");
                let left = status.offer_expires_in_s.unwrap_or(0);
                socket
                    .send(text(
                        &json!({"type": "offered", "offer_expires_in_s": left}),
                    ))
                    .await
                    .is_ok()
            }
            QueueStatus::OfferLapsed => send_status(told, socket, "offer_lapsed").await,
            QueueStatus::Admitted => send_status(told, socket, "admitted").await,
            _ => true,
        },
        Err(error) => {
            tracing::debug!(%error, "status lookup failed; the next tick retries");
            true
        }
    }
}

/// Still waiting: the place and the wait, when they changed.
async fn send_position(
    told: &mut Told,
    socket: &mut WebSocket,
    position: u64,
    wait: Option<u64>,
) -> bool {
    if matches!(told.status, Some("paused" | "pre_queue" | "sold_out")) {
        told.status = None;
        if socket
            .send(text(&json!({"type": "status", "status": "waiting"})))
            .await
            .is_err()
        {
            return false;
        }
    }
    if told.position == Some(position) && told.wait == wait {
        return true;
    }
    told.position = Some(position);
    told.wait = wait;
    socket
        .send(text(
            &json!({"type": "position", "position": position, "estimated_wait_s": wait}),
        ))
        .await
        .is_ok()
}

async fn send_status(told: &mut Told, socket: &mut WebSocket, status: &'static str) -> bool {
    if told.status == Some(status) {
        return true;
    }
    told.status = Some(status);
    if status == "admitted" {
        // The token itself comes with the claim; nothing more to say here.
        return true;
    }
    socket
        .send(text(&json!({"type": "status", "status": status})))
        .await
        .is_ok()
}

async fn claim(
    state: &AppState,
    claims: &QueueClaims,
    told: &mut Told,
    socket: &mut WebSocket,
) -> bool {
    // Boxed for the same reason: a claim's database future is large and happens once.
    let message = match Box::pin(state.admission.claim(claims)).await {
        Ok(admitted) => {
            metrics::counter!("floodgate_claims_total").increment(1);
            told.status = Some("admitted");
            let expires_ms = crate::clock::ms(admitted.session_expires_at);
            json!({
                "type": "admitted",
                "admission_token": admitted.admission_token,
                "session_id": admitted.session_id,
                "session_expires_at": rfc3339(expires_ms),
            })
        }
        Err(error) => json!({"type": "error", "code": Problem::from(error).code}),
    };
    socket.send(text(&message)).await.is_ok()
}
