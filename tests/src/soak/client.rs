//! The buyers' network side: HTTP clients that reuse connections, one per source address so
//! sockets spread over 127.0.0.x, a bound on requests in flight (each costs an open file), and
//! WebSockets opened from a chosen source address.

use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde_json::Value;
use tokio::net::{TcpSocket, TcpStream};
use tokio::sync::Semaphore;
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::{Connector, MaybeTlsStream, WebSocketStream};

use super::trust::Trust;

/// An answer: status and JSON body (problem+json for errors), or a transport failure.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    /// The JSON body; `Null` when empty, not JSON, or asked for `raw`.
    pub body: Value,
    pub retry_after_s: Option<u64>,
    pub etag: Option<String>,
    /// The body's bytes, kept only for a `raw` call (the caller parses what it needs).
    pub raw: Option<bytes::Bytes>,
    /// When the request left the soak's pool for the gateway: the moment a browser would have
    /// sent it.
    pub sent: tokio::time::Instant,
}

impl Answer {
    /// The problem code of an error answer, or `http_<status>` without one.
    pub fn code(&self) -> String {
        self.body
            .get("code")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .unwrap_or_else(|| format!("http_{}", self.status.as_u16()))
    }
}

/// One request to send; headers besides the forwarded address are optional.
pub struct Call<'a> {
    pub method: Method,
    pub gateway: usize,
    pub path: &'a str,
    pub bearer: Option<&'a str>,
    pub idempotency_key: Option<&'a str>,
    pub forwarded_for: Ipv4Addr,
    pub json: Option<&'a Value>,
    /// A hold's receipt key (`Floodgate-Receipt`), which outlives the admission token.
    pub receipt: Option<&'a str>,
    /// A conditional read (`If-None-Match`), answered 304 while the resource is unchanged.
    pub if_none_match: Option<&'a str>,
    /// Keep the body as bytes instead of a `Value`: a 5,000-seat map parsed into a JSON tree
    /// per buyer was most of the soak's JSON work in a profile.
    pub raw: bool,
    /// A waiting read of a buyer whose turn is near: sent from its own pool (see `Net`).
    pub near_front: bool,
}

pub struct Net {
    gateways: Vec<String>,
    clients: Vec<reqwest::Client>,
    /// For `wss://` to `https://` gateways.
    trust: Trust,
    sources: Vec<Ipv4Addr>,
    next: AtomicUsize,
    /// Requests in flight, in four pools: joins (which a flooded gateway holds a moment before
    /// refusing), waiting reads far from the front (hundreds of thousands of waiting buyers),
    /// waiting reads near the front (the status a page asks when its turn may have come, and
    /// the snapshot reads of buyers that close), and the rest (claims, holds, checkouts, seat
    /// maps). In browsers, no buyer's request waits behind other buyers'; one shared pool
    /// would make it, and offers would lapse unseen and holds expire in the soak's own queue.
    join_in_flight: Semaphore,
    poll_in_flight: Semaphore,
    turn_in_flight: Semaphore,
    other_in_flight: Semaphore,
    pub sockets: Semaphore,
    /// Requests and sockets sent to the next gateway because theirs refused the connection
    /// (a dead gateway: buyers keep their tokens, as behind a load balancer).
    pub failovers: AtomicU64,
}

pub type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

impl Net {
    pub fn new(
        gateways: &[String],
        sources: Vec<Ipv4Addr>,
        concurrency: usize,
        max_sockets: usize,
        trust: &Trust,
    ) -> anyhow::Result<Arc<Net>> {
        let build = |source: Option<Ipv4Addr>| {
            reqwest::Client::builder()
                .tls_certs_merge(trust.extra.clone())
                .local_address(source.map(IpAddr::V4))
                .pool_max_idle_per_host(concurrency)
                .pool_idle_timeout(Duration::from_secs(30))
                .tcp_nodelay(true)
                .connect_timeout(Duration::from_secs(10))
                .timeout(Duration::from_secs(30))
                .build()
        };
        let clients = if sources.is_empty() {
            vec![build(None)?]
        } else {
            sources
                .iter()
                .map(|s| build(Some(*s)))
                .collect::<Result<_, _>>()?
        };
        Ok(Arc::new(Net {
            gateways: gateways
                .iter()
                .map(|g| g.trim_end_matches('/').to_owned())
                .collect(),
            clients,
            trust: trust.clone(),
            sources,
            next: AtomicUsize::new(0),
            join_in_flight: Semaphore::new(concurrency.max(1)),
            poll_in_flight: Semaphore::new(concurrency.max(1)),
            turn_in_flight: Semaphore::new(concurrency.max(1)),
            other_in_flight: Semaphore::new(concurrency.max(1)),
            sockets: Semaphore::new(max_sockets),
            failovers: AtomicU64::new(0),
        }))
    }

    pub fn gateway(&self, i: usize) -> &str {
        &self.gateways[i % self.gateways.len()]
    }

    fn client(&self) -> &reqwest::Client {
        let i = self.next.fetch_add(1, Ordering::Relaxed);
        &self.clients[i % self.clients.len()]
    }

    /// Sends one request; `Err` is a transport failure (its kind as a code).
    pub async fn send(&self, call: Call<'_>) -> Result<Answer, String> {
        // A refused connection never reached the gateway: the next one takes the request.
        let mut result = self.send_to(&call, call.gateway).await;
        for next in 1..self.gateways.len() {
            if !matches!(&result, Err(kind) if kind == "connect") {
                break;
            }
            self.failovers.fetch_add(1, Ordering::Relaxed);
            result = self.send_to(&call, call.gateway + next).await;
        }
        result
    }

    async fn send_to(&self, call: &Call<'_>, gateway: usize) -> Result<Answer, String> {
        let url = format!("{}{}", self.gateway(gateway), call.path);
        let path = call.path.split('?').next().unwrap_or(call.path);
        let pool = if path.ends_with("/queue") {
            &self.join_in_flight
        } else if path.ends_with("/queue/status") || call.near_front {
            &self.turn_in_flight
        } else if path.ends_with("/queue/snapshot") {
            &self.poll_in_flight
        } else {
            &self.other_in_flight
        };
        let _permit = pool.acquire().await.map_err(|_| "closed".to_owned())?;
        let sent = tokio::time::Instant::now();
        let mut request = self
            .client()
            .request(call.method.clone(), url)
            .header("x-forwarded-for", call.forwarded_for.to_string());
        if let Some(token) = call.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(key) = call.idempotency_key {
            request = request.header("idempotency-key", key);
        }
        if let Some(receipt) = call.receipt {
            request = request.header("floodgate-receipt", receipt);
        }
        if let Some(etag) = call.if_none_match {
            request = request.header(reqwest::header::IF_NONE_MATCH, etag);
        }
        if let Some(body) = call.json {
            request = request.json(body);
        }
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let retry_after_s = response
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse().ok());
        let etag = response
            .headers()
            .get(reqwest::header::ETAG)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let bytes = response.bytes().await.map_err(transport)?;
        let (body, raw) = if call.raw {
            (Value::Null, Some(bytes))
        } else if bytes.is_empty() {
            (Value::Null, None)
        } else {
            (serde_json::from_slice(&bytes).unwrap_or(Value::Null), None)
        };
        Ok(Answer {
            status,
            body,
            retry_after_s,
            etag,
            raw,
            sent,
        })
    }

    /// Opens the waiting-room socket from one of the source addresses, with small buffers
    /// (thousands of them live in this process).
    pub async fn websocket(&self, gateway: usize, path: &str) -> Result<Socket, String> {
        // As for requests: a refused connection tries the next gateway with the same token.
        let mut result = self.websocket_to(gateway, path).await;
        for next in 1..self.gateways.len() {
            if !matches!(&result, Err(kind) if kind == "ws_connect") {
                break;
            }
            self.failovers.fetch_add(1, Ordering::Relaxed);
            result = self.websocket_to(gateway + next, path).await;
        }
        result
    }

    async fn websocket_to(&self, gateway: usize, path: &str) -> Result<Socket, String> {
        let base = self.gateway(gateway);
        let (scheme, host, connector) = if let Some(host) = base.strip_prefix("https://") {
            ("wss", host, Connector::Rustls(self.trust.sockets.clone()))
        } else if let Some(host) = base.strip_prefix("http://") {
            ("ws", host, Connector::Plain)
        } else {
            return Err("ws_gateway_scheme".to_owned());
        };
        let addr: SocketAddr = tokio::net::lookup_host(host)
            .await
            .map_err(|_| "ws_resolve".to_owned())?
            .next()
            .ok_or_else(|| "ws_resolve".to_owned())?;
        let socket = TcpSocket::new_v4().map_err(|_| "ws_socket".to_owned())?;
        if !self.sources.is_empty() && addr.ip().is_loopback() {
            let i = self.next.fetch_add(1, Ordering::Relaxed) % self.sources.len();
            socket
                .bind(SocketAddr::new(IpAddr::V4(self.sources[i]), 0))
                .map_err(|_| "ws_bind".to_owned())?;
        }
        let stream = tokio::time::timeout(Duration::from_secs(10), socket.connect(addr))
            .await
            .map_err(|_| "ws_connect_timeout".to_owned())?
            .map_err(|_| "ws_connect".to_owned())?;
        let _ = stream.set_nodelay(true);
        let url = format!("{scheme}://{host}{path}");
        let config = WebSocketConfig::default()
            .read_buffer_size(4096)
            .write_buffer_size(0);
        let (ws, _) = tokio::time::timeout(
            Duration::from_secs(10),
            tokio_tungstenite::client_async_tls_with_config(
                url,
                stream,
                Some(config),
                Some(connector),
            ),
        )
        .await
        .map_err(|_| "ws_handshake_timeout".to_owned())?
        .map_err(|e| match e {
            tokio_tungstenite::tungstenite::Error::Http(r) => {
                format!("ws_http_{}", r.status().as_u16())
            }
            _ => "ws_handshake".to_owned(),
        })?;
        Ok(ws)
    }
}

fn transport(e: reqwest::Error) -> String {
    if e.is_timeout() {
        "timeout".to_owned()
    } else if e.is_connect() {
        "connect".to_owned()
    } else if e.is_body() || e.is_decode() {
        "body".to_owned()
    } else {
        "transport".to_owned()
    }
}
