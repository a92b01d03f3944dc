//! The waiting room over WebSocket: one task per socket, woken by the event's change feed (a
//! `watch`, paced to once a second away from the front: `socket_feed.rs`), so a tick costs one
//! wake-up per socket and no backend call; the backend is asked only when this buyer's turn may
//! have come.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, WebSocket, close_code};
use axum::extract::{ConnectInfo, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use rand::Rng;
use serde_json::{Value, json};

use admission::{Admission, EventState, QueueClaims, QueueMessage, QueueStatus, Snapshot};
use reservation::EventId;
use tokio_util::sync::CancellationToken;

use crate::auth;
use crate::client_ip::client_ip;
use crate::clock::rfc3339;
use crate::extract::{PathId, Query, Upgrade};
use crate::fanout::FanOut;
use crate::overload::{Group, Limit};
use crate::problem::Problem;
use crate::requests::TokenQuery;
use crate::socket_feed::SocketFeeds;
use crate::socket_limits::{AddressSlot, TicketSeat};
use crate::state::AppState;

/// Read buffer per socket: tungstenite's 128 KiB default would cost ≈137 KB per idle buyer.
const READ_BUFFER: usize = 4 * 1024;
const MAX_FRAME: usize = 1024;
const PING_EVERY: Duration = Duration::from_secs(25);
/// Client messages allowed per second before the socket is closed as a flood.
const MAX_MESSAGES_PER_S: u32 = 5;
/// How soon a client refused for having too many sockets open is told to try again.
const SOCKETS_RETRY_S: u64 = 10;
/// Places from the front within which a socket hears every tick rather than the paced feed:
/// a handful of sockets at any time, whatever the crowd.
const NEAR_FRONT: u64 = 100;

pub(crate) async fn upgrade(
    State(state): State<AppState>,
    PathId(event): PathId<EventId>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    headers: HeaderMap,
    Query(query): Query<TokenQuery>,
    Upgrade(ws): Upgrade,
) -> Result<Response, Problem> {
    let slot = address_slot(&state, peer, &headers)?;
    // Only the code of a refusal is kept: a whole `Problem` would size every socket's task.
    let checked = auth::queued(&state, event.as_str(), query.token.as_deref())
        .map(|claims| Box::new(Buyer::new(&state, claims, slot)))
        .map_err(|problem| problem.code);
    Ok(ws
        .read_buffer_size(READ_BUFFER)
        .write_buffer_size(0)
        .max_frame_size(MAX_FRAME)
        .max_message_size(MAX_FRAME)
        .on_upgrade(move |socket| async move {
            match checked {
                Ok(buyer) => serve(buyer, socket).await,
                Err(code) => refuse(socket, code).await,
            }
        }))
}

/// This socket's share of its client address, refused (before the upgrade) past the cap.
fn address_slot(
    state: &AppState,
    peer: SocketAddr,
    headers: &HeaderMap,
) -> Result<AddressSlot, Problem> {
    let address = client_ip(peer, headers, &state.settings.trusted_proxies);
    state.sockets.reserve(address).ok_or_else(|| {
        metrics::counter!("floodgate_rejections_total", "status" => "429", "reason" => "sockets_per_address")
            .increment(1);
        Problem::new(
            StatusCode::TOO_MANY_REQUESTS,
            "rate_limited",
            "too many waiting-room sockets open from this address",
        )
        .retry_after(SOCKETS_RETRY_S)
    })
}

/// What a waiting socket keeps for its whole life, and nothing more (not the `AppState`):
/// thousands of sockets idle at once, each holding it. Boxed, so the socket's task carries a
/// pointer where the upgrade closure and `serve` would each have held a copy.
struct Buyer {
    admission: Admission,
    shutdown: CancellationToken,
    fanout: Arc<FanOut>,
    socket_feeds: SocketFeeds,
    /// The budget `POST …/claim` is shed by: a claim over the socket spends the same.
    claim_budget: Option<Limit>,
    /// How long an offered place's claim may wait for that budget, as over HTTP.
    claim_patience: Duration,
    /// The one live socket of this ticket, until a newer one replaces it.
    ticket: TicketSeat,
    _address: AddressSlot,
    claims: QueueClaims,
}

impl Buyer {
    fn new(state: &AppState, claims: QueueClaims, address: AddressSlot) -> Self {
        Buyer {
            admission: state.admission.clone(),
            shutdown: state.shutdown.clone(),
            fanout: state.fanouts.of(&claims.event),
            socket_feeds: state.socket_feeds.clone(),
            claim_budget: state.guard.limit(Group::Reservations).cloned(),
            claim_patience: state
                .guard
                .timeout(Group::Reservations)
                .unwrap_or(Duration::ZERO),
            ticket: state.sockets.take_ticket(&claims.event, &claims.ticket_id),
            _address: address,
            claims,
        }
    }
}

async fn refuse(mut socket: WebSocket, code: &'static str) {
    let _ = socket
        .send(text(&json!({"type": "error", "code": code})))
        .await;
    close(&mut socket, close_code::POLICY, code).await;
}

/// Sends a close frame (whether the peer hears it or not, the socket ends).
async fn close(socket: &mut WebSocket, code: u16, reason: &'static str) {
    let _ = socket
        .send(Message::Close(Some(CloseFrame {
            code,
            reason: reason.into(),
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
    /// The rest of the position frame (wait and chance), packed by `Place::said`: every
    /// waiting socket keeps this, so it stays one word.
    said: u64,
    status: Option<&'static str>,
    /// The organizer's message last told (`QueueMessage::fingerprint`; 0: none).
    message: u64,
}

/// A place, its wait (point and range) and its chance of a seat, as the position frame says.
struct Place {
    position: u64,
    wait: Option<(u64, u64, u64)>,
    chance: Option<f64>,
    /// So the page can say "N seats for M people ahead" when the chance is slim.
    seats_left: u64,
}

impl Place {
    /// The wait's point (48 bits, all ones when unknown) and the chance in percent (255 when
    /// unknown), so a frame is sent only when one of them changed.
    fn said(&self) -> u64 {
        const UNKNOWN_WAIT: u64 = (1 << 48) - 1;
        let wait = self
            .wait
            .map_or(UNKNOWN_WAIT, |w| w.0.min(UNKNOWN_WAIT - 1));
        let chance = self
            .chance
            .map_or(255, |c| (c * 100.0).round().clamp(0.0, 100.0) as u64);
        (wait << 8) | chance
    }

    fn from_snapshot(snapshot: &Snapshot, position: u64) -> Self {
        Place {
            position,
            wait: snapshot.wait_estimate(position),
            chance: snapshot.seat_chance(position),
            seats_left: snapshot.seats_left,
        }
    }
}

impl Told {
    /// Waiting within `NEAR_FRONT` places of the front.
    fn near_front(&self) -> bool {
        self.status.is_none() && self.position.is_some_and(|p| p < NEAR_FRONT)
    }
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

/// One waiting socket. Its task idles in the `select!` below for minutes, so its size is
/// what every waiting buyer costs: the work done once in a while (a tick's message, a claim,
/// a goodbye) is boxed and awaited, its future allocated only while it runs instead of sized
/// into every idle task.
async fn serve(buyer: Box<Buyer>, mut socket: WebSocket) {
    let _live = LiveSocket::open();
    // Most sockets hear the paced feed (a place at most a second old); the few near the front
    // hear every tick, so "you are next" is not skipped on the way to the offer.
    let mut paced = buyer
        .socket_feeds
        .subscribe(&buyer.admission, &buyer.claims.event);
    let mut every_tick = buyer.admission.subscribe(&buyer.claims.event);
    let mut told = Told::default();
    let mut ping = tokio::time::interval(PING_EVERY);
    ping.reset();
    let mut awaiting_pong = false;
    let mut window_start = tokio::time::Instant::now();
    let mut messages_in_window = 0u32;
    // A reconnect resumes the same place: tell the buyer where they stand at once.
    paced.mark_unchanged();
    let first = every_tick.borrow_and_update().clone();
    if !Box::pin(push(&buyer, &first, &mut told, &mut socket)).await {
        return;
    }
    let mut last_at_ms = first.at_ms;
    drop(first);
    loop {
        let mut heard = None;
        tokio::select! {
            () = buyer.shutdown.cancelled() => {
                Box::pin(reconnect(&mut socket)).await;
                return;
            }
            () = buyer.ticket.replaced() => {
                Box::pin(replaced(&mut socket)).await;
                return;
            }
            changed = paced.changed(), if !told.near_front() => {
                if changed.is_err() {
                    return;
                }
                heard = Some((paced.borrow_and_update().clone(), true));
            }
            changed = every_tick.changed(), if told.near_front() => {
                if changed.is_err() {
                    return;
                }
                heard = Some((every_tick.borrow_and_update().clone(), false));
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
                    Box::pin(close(&mut socket, close_code::POLICY, "too many messages")).await;
                    return;
                }
                match message {
                    Message::Pong(_) => awaiting_pong = false,
                    Message::Text(body) if is_claim(&body) => {
                        if !Box::pin(claim(&buyer, &mut told, &mut socket)).await {
                            return;
                        }
                    }
                    Message::Close(_) => return,
                    Message::Ping(_) => {}
                    _ => {
                        Box::pin(close(&mut socket, close_code::POLICY, "unexpected message")).await;
                        return;
                    }
                }
            }
        }
        let Some((snapshot, paced_tick)) = heard else {
            continue;
        };
        // The paced feed lags the meter's: after hearing a newer tick near the front, an older
        // one would move the buyer back (or un-offer them).
        if snapshot.at_ms < last_at_ms {
            continue;
        }
        last_at_ms = snapshot.at_ms;
        if !Box::pin(push(&buyer, &snapshot, &mut told, &mut socket)).await {
            return;
        }
        if paced_tick {
            // Only the paced feed is timed: nearly every socket hears it.
            buyer.fanout.done(snapshot.at_ms);
        }
    }
}

/// The gateway is draining: send the buyer elsewhere, jittered, so a drained instance does
/// not send everyone to the others at once.
async fn reconnect(socket: &mut WebSocket) {
    let after_ms = rand::rng().random_range(500..5_000);
    let _ = socket
        .send(text(&json!({"type": "reconnect", "after_ms": after_ms})))
        .await;
    close(socket, close_code::RESTART, "reconnect").await;
}

/// A newer socket of the same ticket took over (another tab, or a script opening many): this
/// one says why it ends, so the page stops reconnecting and leaves the line to the newer.
async fn replaced(socket: &mut WebSocket) {
    let _ = socket.send(text(&json!({"type": "replaced"}))).await;
    close(socket, close_code::NORMAL, "replaced").await;
}

fn is_claim(body: &str) -> bool {
    serde_json::from_str::<Value>(body)
        .ok()
        .is_some_and(|v| v.get("type").and_then(Value::as_str) == Some("claim"))
}

/// Sends what changed for this buyer. Returns false when the socket is gone.
async fn push(buyer: &Buyer, snapshot: &Snapshot, told: &mut Told, socket: &mut WebSocket) -> bool {
    let claims = &buyer.claims;
    if snapshot.at_ms == 0 {
        // No tick has run for this event on this instance yet: nothing true to say.
        return true;
    }
    // The organizer's message first (set, changed or cleared), whatever the buyer's place.
    let message = QueueMessage::fingerprint(snapshot.message.as_ref());
    if told.message != message {
        told.message = message;
        let frame = json!({"type": "message", "message": snapshot.message});
        if socket.send(text(&frame)).await.is_err() {
            return false;
        }
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
    // A pre-queue ticket behind the pre-queue's served frontier has not been offered: told
    // "sold out" from the snapshot like everyone else, with no backend call per socket.
    let unreached = hint.is_some()
        || (sold_out
            && claims.pre_queue
            && snapshot.epoch == claims.epoch
            && buyer.admission.pre_rank(claims).is_some_and(|rank| {
                snapshot
                    .prequeue_served_through
                    .is_none_or(|frontier| rank > frontier)
            }));
    if let Some(status) = event_status {
        // Sold out can be a moment (lapsed holds give seats back): a ticket whose turn may
        // have come hears about its offer first, so offers are not skipped in queue order.
        if !sold_out || unreached {
            // A pause keeps the line: the place (and its chance) go with the news.
            let place = hint
                .filter(|_| status == "paused")
                .map(|p| Place::from_snapshot(snapshot, p));
            return send_status_at(told, socket, status, place).await;
        }
    }
    if let Some(position) = hint {
        let place = Place::from_snapshot(snapshot, position);
        return send_position(told, socket, place).await;
    }
    // Boxed: this backend call's future is large, and most ticks never make it.
    match Box::pin(buyer.admission.status(claims)).await {
        Ok(status) => match status.status {
            QueueStatus::Waiting | QueueStatus::PreQueue | QueueStatus::SoldOut if sold_out => {
                send_status(told, socket, "sold_out").await
            }
            QueueStatus::Waiting => match status.position {
                Some(position) => {
                    let wait = status
                        .estimated_wait_s
                        .zip(status.estimated_wait_range_s)
                        .map(|(point, (low, high))| (point, low, high));
                    let place = Place {
                        position,
                        wait,
                        chance: status.seat_chance,
                        seats_left: snapshot.seats_left,
                    };
                    send_position(told, socket, place).await
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

/// The position frame of API.md.
fn position_frame(place: &Place) -> Value {
    json!({
        "type": "position",
        "position": place.position,
        "estimated_wait_s": place.wait.map(|w| w.0),
        "estimated_wait_range_s": place.wait.map(|w| [w.1, w.2]),
        "seat_chance": place.chance,
        "seats_left": place.seats_left,
    })
}

/// Still waiting: the place, the wait and the chance, when they changed.
async fn send_position(told: &mut Told, socket: &mut WebSocket, place: Place) -> bool {
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
    let said = place.said();
    if told.position == Some(place.position) && told.said == said {
        return true;
    }
    told.position = Some(place.position);
    told.said = said;
    socket.send(text(&position_frame(&place))).await.is_ok()
}

async fn send_status(told: &mut Told, socket: &mut WebSocket, status: &'static str) -> bool {
    send_status_at(told, socket, status, None).await
}

/// The event's or the ticket's status; while paused, with the place that is kept.
async fn send_status_at(
    told: &mut Told,
    socket: &mut WebSocket,
    status: &'static str,
    place: Option<Place>,
) -> bool {
    if told.status == Some(status) {
        return true;
    }
    told.status = Some(status);
    if status == "admitted" {
        // The token itself comes with the claim; nothing more to say here.
        return true;
    }
    let mut frame = json!({"type": "status", "status": status});
    if let Some(place) = place {
        frame["position"] = json!(place.position);
        frame["seat_chance"] = json!(place.chance);
    }
    socket.send(text(&frame)).await.is_ok()
}

async fn claim(buyer: &Buyer, told: &mut Told, socket: &mut WebSocket) -> bool {
    // Held while the claim runs, as the HTTP route's permit is. As over HTTP, an offered
    // place's claim waits for it in the admitted buyers' line; any other is shed when full.
    let permit = match buyer.claim_budget.as_ref() {
        Some(limit) if buyer.admission.turn_has_come(&buyer.claims) => {
            Some(limit.admit_waiting(buyer.claim_patience).await)
        }
        Some(limit) => Some(limit.admit()),
        None => None,
    };
    let _permit = match permit {
        Some(None) => {
            metrics::counter!("floodgate_rejections_total", "status" => "503", "reason" => "reservations")
                .increment(1);
            let shed = json!({"type": "error", "code": "overloaded"});
            return socket.send(text(&shed)).await.is_ok();
        }
        Some(Some(permit)) => Some(permit),
        None => None,
    };
    let message = match buyer.admission.claim(&buyer.claims).await {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The task of an idle socket is mostly `serve`'s future: what every waiting buyer costs,
    /// thousands at once (the sockets bench holds it to 8 KiB per socket, all told).
    #[test]
    fn an_idle_socket_task_stays_small() {
        fn returned<A, B, R>(_: impl FnOnce(A, B) -> R) -> usize {
            std::mem::size_of::<R>()
        }
        // About 1.3 KB with Rust 1.95, of which the WebSocket is 368 bytes.
        let size = returned(serve);
        assert!(size <= 1536, "serve's future is {size} bytes");
    }
}
