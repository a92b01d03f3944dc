//! Waiting for one's turn, as the waiting-room page does: on the WebSocket (reconnecting with
//! the same token when told to or when the socket drops), or reading the public queue snapshot
//! and working out its place as the page does (`page`), asking its own status only near the
//! front.

use std::time::Duration;

use futures::{SinkExt, StreamExt};
use reqwest::Method;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::time::Instant;
use tokio_tungstenite::tungstenite::Message;

use super::client::{Call, Socket};
use super::context::Ctx;
use super::page;
use super::plan::Plan;
use super::stats::Live;

/// How the wait ended.
pub enum Turn {
    /// Offered; a WebSocket buyer keeps the socket to claim on. The seconds the offer had
    /// left when the buyer learned of it, where the answer said.
    Offered(Option<Box<Socket>>, Option<u64>),
    SoldOut,
    Closed,
    Lapsed,
    /// The run's deadline came first.
    TimedOut,
}

/// The first wait estimate the buyer was shown: when, and its range in seconds.
#[derive(Clone, Copy)]
pub struct Eta {
    pub at: Instant,
    /// The point the range was drawn around, where the source gave one.
    pub point_s: Option<u64>,
    pub low_s: u64,
    pub high_s: u64,
}

/// A bare point (from a server or frame that sends no range), shown as 0.8…1.25 × it.
pub fn eta_from_point(s: u64) -> Eta {
    Eta {
        at: Instant::now(),
        point_s: Some(s),
        low_s: (s as f64 * 0.8).floor() as u64,
        high_s: (s as f64 * 1.25).ceil() as u64,
    }
}

pub fn eta_from_status(body: &Value) -> Option<Eta> {
    let range = body.get("estimated_wait_range_s")?.as_array()?;
    Some(Eta {
        at: Instant::now(),
        point_s: body.get("estimated_wait_s").and_then(Value::as_u64),
        low_s: range.first()?.as_u64()?,
        high_s: range.get(1)?.as_u64()?,
    })
}

pub struct Waiter<'a> {
    pub ctx: &'a Ctx,
    pub plan: &'a Plan,
    pub token: &'a str,
    pub eta: Option<Eta>,
    /// The first chance of a seat stated: `None` before any place was heard, `Some(None)`
    /// while it was shown only as not known yet (or not at all).
    pub chance: Option<Option<f64>>,
    /// The place in the whole line (offers made before it, plus those ahead) when the first
    /// chance was stated, where the snapshot tells it.
    pub chance_place: Option<u64>,
    /// Whether any answer told the buyer its place in line: one offered at its first word
    /// after joining or after the opening had no wait to be shown.
    pub told_waiting: bool,
    /// Whether a read went unanswered before the buyer was told its place: such a buyer was
    /// left without a wait, not offered at its first word.
    pub unanswered: bool,
    /// When the first read is due: the join's answer told what it would, and asked the page
    /// to wait (`None`: read at once).
    pub first_read_at: Option<Instant>,
}

/// How long a page waits when told `seconds`: its own jitter (0.9–1.1 ×), so a crowd told the
/// same interval spreads out.
pub fn page_wait(seconds: u64) -> Duration {
    let jitter = 0.9 + rand::random::<f64>() * 0.2;
    Duration::from_secs_f64(seconds.clamp(1, 120) as f64 * jitter)
}

impl Waiter<'_> {
    /// A read failed or was refused.
    fn unanswered_read(&mut self) {
        self.unanswered |= !self.told_waiting;
    }

    /// Keeps the first chance stated; "not known yet" counts only until a number is shown.
    fn heard_chance(&mut self, chance: Option<f64>, place: Option<u64>) {
        if matches!(self.chance, Some(Some(_))) {
            return;
        }
        if self.chance == Some(None) && chance.is_some() {
            self.ctx.stats.count("chance_stated_after_not_known_yet");
        }
        self.chance = Some(chance);
        self.chance_place = chance.and(place);
    }

    pub async fn wait(&mut self) -> Turn {
        if self.plan.websocket {
            // Only so many sockets fit in one process; the rest poll, as a browser would
            // whose socket cannot connect.
            if let Ok(permit) = self.ctx.net.sockets.try_acquire() {
                if let Some(turn) = self.on_socket().await {
                    drop(permit);
                    return turn;
                }
                drop(permit);
                self.ctx.stats.count("ws_fell_back_to_polling");
            } else {
                self.ctx.stats.count("ws_over_budget_polled");
            }
        }
        self.polling().await
    }

    /// `None`: the socket could not be kept; fall back to polling.
    async fn on_socket(&mut self) -> Option<Turn> {
        let path = format!(
            "/api/events/{}/queue/ws?token={}",
            self.ctx.event, self.token
        );
        let mut failures = 0u32;
        loop {
            let mut ws = match self.ctx.net.websocket(self.plan.gateway, &path).await {
                Ok(ws) => ws,
                Err(code) => {
                    self.ctx.stats.error(&code);
                    failures += 1;
                    if failures > 3 {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(500 * u64::from(failures))).await;
                    continue;
                }
            };
            Live::gauge(&self.ctx.live().sockets, 1);
            let outcome = self.listen(&mut ws).await;
            Live::gauge(&self.ctx.live().sockets, -1);
            match outcome {
                Heard::Turn(Turn::Offered(_, left)) => {
                    return Some(Turn::Offered(Some(Box::new(ws)), left));
                }
                Heard::Turn(turn) => {
                    let _ = ws.close(None).await;
                    return Some(turn);
                }
                Heard::Reconnect(after) => {
                    self.ctx.stats.count("ws_reconnect_asked");
                    tokio::time::sleep(after).await;
                }
                Heard::Dropped => {
                    self.ctx.stats.error("ws_dropped");
                    failures += 1;
                    if failures > 3 {
                        return None;
                    }
                    tokio::time::sleep(Duration::from_millis(500 * u64::from(failures))).await;
                }
                Heard::Refused => return None,
            }
        }
    }

    async fn listen(&mut self, ws: &mut Socket) -> Heard {
        loop {
            let frame = tokio::time::timeout_at(self.ctx.deadline, ws.next()).await;
            let Ok(frame) = frame else {
                return Heard::Turn(Turn::TimedOut);
            };
            let text = match frame {
                Some(Ok(Message::Text(t))) => t,
                Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Heard::Dropped,
                Some(Ok(_)) => continue,
            };
            let Ok(m) = serde_json::from_str::<Frame>(text.as_str()) else {
                self.ctx.stats.error("ws_non_json");
                continue;
            };
            match m.kind {
                "position" => {
                    self.told_waiting = true;
                    self.heard_chance(m.seat_chance, None);
                    if self.eta.is_none() {
                        self.eta = match (m.estimated_wait_range_s, m.estimated_wait_s) {
                            (Some([low, high]), point_s) => Some(Eta {
                                at: Instant::now(),
                                point_s,
                                low_s: low.max(0.0).floor() as u64,
                                high_s: high.max(0.0).ceil() as u64,
                            }),
                            (None, Some(s)) => Some(eta_from_point(s)),
                            (None, None) => None,
                        };
                    }
                }
                "offered" => return Heard::Turn(Turn::Offered(None, m.offer_expires_in_s)),
                "status" => match m.status {
                    Some("sold_out") => return Heard::Turn(Turn::SoldOut),
                    Some("closed") => return Heard::Turn(Turn::Closed),
                    Some("offer_lapsed") => return Heard::Turn(Turn::Lapsed),
                    // Paused, the place is kept and told.
                    Some("paused") => self.told_waiting = true,
                    _ => {}
                },
                "reconnect" => {
                    let after = m.after_ms.unwrap_or(1000);
                    return Heard::Reconnect(Duration::from_millis(after));
                }
                "error" => {
                    let code = m.code.unwrap_or("ws_error");
                    self.ctx.stats.error(&format!("ws_{code}"));
                    return Heard::Refused;
                }
                _ => {}
            }
        }
    }

    /// Waiting as the page does without its socket: the public snapshot (cacheable, one
    /// conditional read), and the per-token status only when the snapshot cannot tell (near
    /// the front, another epoch, a pre-queue score not yet known).
    async fn polling(&mut self) -> Turn {
        let event = &self.ctx.event;
        let snapshot_path = format!("/api/events/{event}/queue/snapshot");
        let claims = page::Claims::of(self.token);
        let mut last: Option<(page::Snapshot, Option<String>)> = None;
        let mut score: Option<f64> = None;
        let mut near_front = false;
        if let Some(at) = self.first_read_at.take() {
            tokio::time::sleep_until(at.min(self.ctx.deadline)).await;
        }
        loop {
            if Instant::now() >= self.ctx.deadline {
                return Turn::TimedOut;
            }
            let asked = Instant::now();
            let read = self
                .ctx
                .send(Call {
                    method: Method::GET,
                    gateway: self.plan.gateway,
                    path: &snapshot_path,
                    bearer: None,
                    idempotency_key: None,
                    forwarded_for: self.plan.forwarded_for,
                    json: None,
                    receipt: None,
                    if_none_match: last.as_ref().and_then(|l| l.1.as_deref()),
                    raw: true,
                    near_front,
                })
                .await;
            self.ctx
                .stats
                .record("poll_ms", asked.elapsed().as_millis() as u64);
            let wait_s = match read {
                Some(a) if a.status.as_u16() == 304 || a.status.is_success() => {
                    if a.status.as_u16() == 304 {
                        self.ctx.stats.count("snapshot_not_modified");
                    } else if let Some(snap) = a
                        .raw
                        .as_deref()
                        .and_then(|b| serde_json::from_slice::<page::Snapshot>(b).ok())
                    {
                        last = Some((snap, a.etag));
                    }
                    let snap = last.as_ref().map(|l| &l.0);
                    self.told_by(snap, claims.as_ref(), &mut score, &mut near_front)
                        .await
                }
                Some(a) => {
                    self.unanswered_read();
                    Err(a.retry_after_s.unwrap_or(2))
                }
                None => {
                    self.unanswered_read();
                    Err(2)
                }
            };
            let wait_s = match wait_s {
                Ok(turn) => return turn,
                Err(s) => s,
            };
            tokio::time::sleep(page_wait(wait_s)).await;
        }
    }

    /// What one snapshot means for this buyer: `Ok` with the end of the wait, or `Err` with
    /// the seconds until the next read. `near_front` becomes whether the turn may come within
    /// an offer's time of the next read.
    async fn told_by(
        &mut self,
        snap: Option<&page::Snapshot>,
        claims: Option<&page::Claims>,
        score: &mut Option<f64>,
        near_front: &mut bool,
    ) -> Result<Turn, u64> {
        *near_front = true;
        let (Some(snap), Some(claims)) = (snap, claims) else {
            return self.status_once().await;
        };
        if claims.pre && score.is_none() {
            *score = snap
                .seed
                .as_deref()
                .map(|seed| admission::pre_score(seed, &claims.ticket));
        }
        let Some(update) = page::read(snap, claims, *score) else {
            return self.status_once().await;
        };
        *near_front = page::near_front(snap, &update);
        let next = page::next_read_s(
            snap,
            &update,
            super::context::unix_ms(),
            admission::opening_share(&claims.ticket),
        );
        match update {
            page::Update::SoldOut => Ok(Turn::SoldOut),
            page::Update::Closed => Ok(Turn::Closed),
            page::Update::PreQueue => Err(next),
            page::Update::Paused { .. } => {
                self.told_waiting = true;
                Err(next)
            }
            page::Update::Waiting {
                wait,
                chance,
                position,
            } => {
                self.told_waiting = true;
                self.heard_chance(chance, Some(snap.served + position));
                if self.eta.is_none() {
                    self.eta = wait.map(|(point_s, low_s, high_s)| Eta {
                        at: Instant::now(),
                        point_s: Some(point_s),
                        low_s,
                        high_s,
                    });
                }
                Err(next)
            }
        }
    }

    /// One read of the per-token status, when the turn may have come.
    async fn status_once(&mut self) -> Result<Turn, u64> {
        let path = format!("/api/events/{}/queue/status", self.ctx.event);
        let asked = Instant::now();
        let answer = self
            .ctx
            .call(self.plan, Method::GET, &path, Some(self.token), None, None)
            .await;
        self.ctx
            .stats
            .record("status_ms", asked.elapsed().as_millis() as u64);
        let Some(a) = answer else {
            self.unanswered_read();
            return Err(2);
        };
        if !a.status.is_success() {
            self.unanswered_read();
            return Err(a.retry_after_s.unwrap_or(2));
        }
        match a.body.get("status").and_then(Value::as_str) {
            Some("offered") => {
                let left = a.body.get("offer_expires_in_s").and_then(Value::as_u64);
                return Ok(Turn::Offered(None, left));
            }
            Some("admitted") => return Ok(Turn::Offered(None, None)),
            Some("sold_out") => return Ok(Turn::SoldOut),
            Some("closed") => return Ok(Turn::Closed),
            Some("offer_lapsed") => return Ok(Turn::Lapsed),
            _ => {}
        }
        if a.body.get("position").is_some_and(|p| !p.is_null()) {
            self.told_waiting = true;
            self.heard_chance(a.body.get("seat_chance").and_then(Value::as_f64), None);
        }
        if self.eta.is_none() {
            self.eta = eta_from_status(&a.body);
        }
        Err(a
            .body
            .get("retry_after_s")
            .and_then(Value::as_u64)
            .unwrap_or(2))
    }
}

/// A server frame, read without building a JSON tree: thousands of sockets hear one a tick.
#[derive(Deserialize)]
struct Frame<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    status: Option<&'a str>,
    estimated_wait_s: Option<u64>,
    /// Whole seconds in the contract; read as numbers of any kind so a fraction is no error.
    estimated_wait_range_s: Option<[f64; 2]>,
    seat_chance: Option<f64>,
    after_ms: Option<u64>,
    offer_expires_in_s: Option<u64>,
    code: Option<&'a str>,
}

enum Heard {
    Turn(Turn),
    Reconnect(Duration),
    Dropped,
    Refused,
}

/// Claims on the socket; returns the `admitted` message's body or the error code.
pub async fn claim_on_socket(ws: &mut Socket) -> Result<Value, String> {
    ws.send(Message::Text(json!({"type": "claim"}).to_string().into()))
        .await
        .map_err(|_| "ws_send".to_owned())?;
    loop {
        let frame = tokio::time::timeout(Duration::from_secs(30), ws.next())
            .await
            .map_err(|_| "ws_claim_timeout".to_owned())?;
        match frame {
            Some(Ok(Message::Text(t))) => {
                let m: Value = serde_json::from_str(t.as_str()).unwrap_or(Value::Null);
                match m.get("type").and_then(Value::as_str) {
                    Some("admitted") => return Ok(m),
                    Some("error") => {
                        return Err(m
                            .get("code")
                            .and_then(Value::as_str)
                            .unwrap_or("ws_error")
                            .to_owned());
                    }
                    _ => {}
                }
            }
            Some(Ok(Message::Close(_))) | None | Some(Err(_)) => return Err("ws_dropped".into()),
            Some(Ok(_)) => {}
        }
    }
}
