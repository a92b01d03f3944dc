//! The state every handler shares, built once at start (`startup.rs`).

use std::sync::Arc;

use admission::Admission;
use ipnet::IpNet;
use reservation::Store;
use reservation::payments::Provider;
use tokio_util::sync::CancellationToken;

use crate::fanout::FanOuts;
use crate::overload::Guard;
use crate::seat_cache::SeatCache;
use crate::socket_feed::SocketFeeds;

/// What every handler is handed: one shared pointer to the state. Every request takes a copy
/// (axum's `State`), so a copy is one reference count, not one per part of the state.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

impl AppState {
    pub fn new(shared: Shared) -> Self {
        Self(Arc::new(shared))
    }
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

/// The parts of the state, built once at start.
pub struct Shared {
    /// The reservation core: the only authority on who owns a seat.
    pub store: Store,
    /// The waiting room: tokens, queue positions, offers.
    pub admission: Admission,
    /// The payment provider (Stripe-shaped HTTP client, or the in-process simulator).
    pub provider: Provider,
    /// Seat maps and "seats left", stale by at most a second, never used for decisions.
    pub seats: SeatCache,
    pub settings: Arc<Settings>,
    /// What handlers saw of the core's health, judged once a second (`backpressure.rs`).
    pub health: Arc<crate::backpressure::CoreHealth>,
    /// What `/readyz` answers from: the database, the queue backend and the background loops,
    /// as the probe and the supervisor last saw them.
    pub readiness: Arc<crate::readiness::Readiness>,
    /// Cancelled when the gateway begins a graceful shutdown: sockets say `reconnect`.
    pub shutdown: CancellationToken,
    /// In-flight budgets and deadlines per route group.
    pub guard: Arc<Guard>,
    /// Per-event fan-out timing of the waiting-room sockets (for `/metrics`).
    pub fanouts: FanOuts,
    /// Per-event snapshots for the waiting-room sockets, paced (`socket_feed.rs`).
    pub socket_feeds: SocketFeeds,
    /// Waiting-room sockets open, by ticket and client address (`socket_limits.rs`).
    pub sockets: Arc<crate::socket_limits::LiveSockets>,
    /// The team's organizer keys, read from the database at most every half second.
    pub keys: Arc<crate::key_book::KeyBook>,
    /// Exports streaming at once from this instance (each a page query at a time).
    pub exports: Arc<tokio::sync::Semaphore>,
}

/// Settings resolved at start (secrets from the configuration or the database).
pub struct Settings {
    /// SHA-256 of each accepted organizer key; compared in constant time.
    pub organizer_key_hashes: Vec<[u8; 32]>,
    pub webhook_secret: String,
    pub trusted_proxies: Vec<IpNet>,
    /// Seconds past `abandon_at` before an unanswered payment is escalated.
    pub payment_overdue_s: i64,
    /// Simulated or a real provider: shown on `/readyz` and the dashboard.
    pub payment_mode: crate::payment_mode::PaymentMode,
}
