//! The waiting room's WebSocket as a browser uses it: watch the position, hear the offer,
//! claim over the socket.

use futures::{SinkExt, StreamExt};
use serde_json::{Value, json};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::buyer::{Admitted, Queued};
use super::http::{DEADLINE, Gateway};

pub struct WaitingSocket {
    ws: WebSocketStream<MaybeTlsStream<TcpStream>>,
    event: String,
    /// Every JSON message heard so far, in order.
    pub heard: Vec<Value>,
}

/// What a buyer saw while waiting for their turn.
#[derive(Debug)]
pub struct Turn {
    /// Each `position` message, in order.
    pub positions: Vec<u64>,
    pub offer_expires_in_s: u64,
}

impl Gateway {
    /// Opens the waiting-room socket of `queued` on this gateway.
    pub async fn open_socket(&self, queued: &Queued) -> WaitingSocket {
        self.open_socket_with_token(&queued.event, &queued.queue_token)
            .await
    }

    pub async fn open_socket_with_token(&self, event: &str, token: &str) -> WaitingSocket {
        let url = self.ws_url(&format!("/api/events/{event}/queue/ws?token={token}"));
        let (ws, _) = tokio_tungstenite::connect_async(url.as_str())
            .await
            .unwrap_or_else(|e| panic!("WebSocket upgrade at {url}: {e}"));
        WaitingSocket {
            ws,
            event: event.to_owned(),
            heard: Vec::new(),
        }
    }

    /// Joins on the socket and waits for the offer; returns the socket (to claim on) and what
    /// was seen on the way.
    pub async fn wait_for_turn(&self, queued: &Queued) -> (WaitingSocket, Turn) {
        let mut socket = self.open_socket(queued).await;
        let turn = socket.wait_for_turn().await;
        (socket, turn)
    }
}

impl WaitingSocket {
    /// The next JSON message; `None` when the server closed the socket. Panics after `DEADLINE`.
    pub async fn next(&mut self) -> Option<Value> {
        loop {
            let frame = tokio::time::timeout(DEADLINE, self.ws.next())
                .await
                .unwrap_or_else(|_| {
                    panic!(
                        "no message within {DEADLINE:?}; heard so far: {:?}",
                        self.heard
                    )
                });
            match frame {
                None | Some(Ok(Message::Close(_))) | Some(Err(_)) => return None,
                Some(Ok(Message::Text(text))) => {
                    let value: Value = serde_json::from_str(text.as_str())
                        .unwrap_or_else(|e| panic!("non-JSON text frame {text:?}: {e}"));
                    self.heard.push(value.clone());
                    return Some(value);
                }
                // Pings are answered by tungstenite itself.
                Some(Ok(_)) => {}
            }
        }
    }

    /// Skips messages until one of `type` arrives.
    pub async fn next_of(&mut self, kind: &str) -> Value {
        loop {
            match self.next().await {
                Some(message) if message["type"] == kind => return message,
                Some(_) => {}
                None => panic!(
                    "socket closed before a `{kind}` message; heard: {:?}",
                    self.heard
                ),
            }
        }
    }

    /// Reads position messages until the position is `expected`. Positions are upper bounds
    /// (DESIGN §3): an instance that has not ticked the event yet may say more, never less.
    pub async fn settle_at(&mut self, expected: u64) {
        loop {
            let message = self.next_of("position").await;
            let position = message["position"].as_u64().expect("a numeric position");
            assert!(
                position >= expected,
                "position {position} below the true {expected}: {:?}",
                self.heard
            );
            if position == expected {
                return;
            }
        }
    }

    /// Reads position messages until the offer.
    pub async fn wait_for_turn(&mut self) -> Turn {
        let mut positions = Vec::new();
        loop {
            let message = self
                .next()
                .await
                .unwrap_or_else(|| panic!("socket closed while waiting; heard: {:?}", self.heard));
            match message["type"].as_str() {
                Some("position") => positions.push(
                    message["position"]
                        .as_u64()
                        .unwrap_or_else(|| panic!("position message without a number: {message}")),
                ),
                Some("offered") => {
                    return Turn {
                        positions,
                        offer_expires_in_s: message["offer_expires_in_s"].as_u64().unwrap_or(0),
                    };
                }
                _ => panic!("unexpected message while waiting: {message}"),
            }
        }
    }

    /// Sends `{"type":"claim"}` and waits for `admitted`.
    pub async fn claim(&mut self) -> Admitted {
        self.send(&json!({"type": "claim"})).await;
        let admitted = self.next_of("admitted").await;
        let field = |k: &str| {
            admitted[k]
                .as_str()
                .unwrap_or_else(|| panic!("no `{k}` in {admitted}"))
                .to_owned()
        };
        Admitted {
            event: self.event.clone(),
            admission_token: field("admission_token"),
            session_id: field("session_id"),
        }
    }

    pub async fn send(&mut self, message: &Value) {
        self.ws
            .send(Message::text(message.to_string()))
            .await
            .expect("send on the waiting-room socket");
    }

    /// Closes from the client side, as a browser leaving the page.
    pub async fn close(mut self) {
        let _ = self.ws.close(None).await;
    }
}
