//! The soak tool's knobs: every one a flag (and most an environment variable), so an organizer
//! can point it at a staging deployment with nothing but a command line.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use clap::{Parser, ValueEnum};

/// How a buyer picks seats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum, serde::Serialize, serde::Deserialize)]
pub enum SeatChoice {
    /// Named seats, drawn with a Zipf skew toward the first (the "hot") seats.
    Named,
    /// General admission: `{"section": …, "quantity": 1}`.
    Ga,
}

#[derive(Parser, Debug, Clone, serde::Serialize, serde::Deserialize)]
#[command(
    name = "soak",
    about = "Replays an on-sale against Floodgate gateways and judges it from PostgreSQL and the payment ledger"
)]
pub struct Config {
    /// Gateway base URL; repeat for several gateways (buyers are spread across them).
    #[arg(
        long = "gateway",
        env = "SOAK_GATEWAYS",
        value_delimiter = ',',
        required = true
    )]
    pub gateways: Vec<String>,
    /// Extra trusted CA certificates (PEM) for `https://` gateways behind a private CA, beside
    /// the platform's roots.
    #[arg(long, env = "FLOODGATE_TLS_CA_FILE")]
    pub ca_file: Option<PathBuf>,
    /// The organizer API key of the gateways.
    #[arg(long, env = "FLOODGATE_ORGANIZER_KEY")]
    pub organizer_key: String,
    /// PostgreSQL the gateways write to (the verdict reads it).
    #[arg(long, env = "DATABASE_URL")]
    pub database_url: String,
    /// The payment simulator's base URL (its ledger is half of the verdict).
    #[arg(long, env = "SOAK_SIM_URL")]
    pub sim_url: String,
    /// Event id to create (seats, admission settings). Must not exist yet.
    #[arg(long, default_value_t = default_event())]
    pub event: String,
    /// Seconds between creating the event and `opens_at` (buyers arriving before are pre-queued).
    #[arg(long, default_value_t = 5)]
    pub opens_in_s: u64,

    /// Number of buyers.
    #[arg(long, default_value_t = 500_000)]
    pub arrivals: u64,
    /// Arrival times are drawn uniformly within this window, counted from the start of the run
    /// (open loop: an arrival never waits for an earlier one).
    #[arg(long, default_value_t = 60.0)]
    pub window_s: f64,
    /// Share of arrivals placed before `opens_at` (the pre-queue).
    #[arg(long, default_value_t = 0.2)]
    pub prequeue_share: f64,
    /// Share of buyers that wait on the WebSocket; the rest poll at `retry_after_s`.
    #[arg(long, default_value_t = 0.5)]
    pub ws_share: f64,

    /// Share that never claims its offer (the offer lapses).
    #[arg(long, default_value_t = 0.05)]
    pub abandon_offer_share: f64,
    /// Share that claims, then leaves without holding.
    #[arg(long, default_value_t = 0.03)]
    pub abandon_claimed_share: f64,
    /// Share that holds seats, then leaves (the hold expires).
    #[arg(long, default_value_t = 0.03)]
    pub abandon_hold_share: f64,

    /// Named seats with a Zipf skew, or general admission.
    #[arg(long, value_enum, default_value_t = SeatChoice::Named)]
    pub seats: SeatChoice,
    /// Zipf exponent for named seats (0 = uniform).
    #[arg(long, default_value_t = 1.0)]
    pub zipf_s: f64,
    /// Seats in the event.
    #[arg(long, default_value_t = 5_000)]
    pub seat_count: u32,

    /// Share of buyers acting from two tabs: the same checkout sent twice with one
    /// `Idempotency-Key`, the claim sent twice, and a second hold attempt.
    #[arg(long, default_value_t = 0.02)]
    pub two_tab_share: f64,
    /// Share paying first with `pm_card_declined` (then retrying with `pm_card_visa`).
    #[arg(long, default_value_t = 0.05)]
    pub declined_share: f64,
    /// Share paying with `pm_card_slow`.
    #[arg(long, default_value_t = 0.03)]
    pub slow_share: f64,
    /// Share paying with `pm_card_lost` (authorized, answer lost: reconciliation finds it).
    #[arg(long, default_value_t = 0.02)]
    pub lost_share: f64,
    /// Share paying with `pm_card_error` (the provider answers 5xx).
    #[arg(long, default_value_t = 0.02)]
    pub error_share: f64,

    /// Admission rate (offers per minute), set through the organizer API.
    #[arg(long, default_value_t = 6_000)]
    pub rate_per_min: u32,
    /// Cap on active sessions + open offers, set through the organizer API.
    #[arg(long, default_value_t = 2_000)]
    pub max_active: u32,
    /// Seconds an offer stays open.
    #[arg(long, default_value_t = 30)]
    pub offer_s: u32,
    /// Hold time to live (seconds).
    #[arg(long, default_value_t = 20)]
    pub hold_ttl_s: u32,
    /// Longest a hold may live with extensions and decline grace (seconds).
    #[arg(long, default_value_t = 60)]
    pub max_hold_s: u32,
    /// Payment attempt: reconciliation starts after this (seconds).
    #[arg(long, default_value_t = 5)]
    pub resolve_s: u32,
    /// Payment attempt: abandoned and voided after this (seconds).
    #[arg(long, default_value_t = 20)]
    pub abandon_s: u32,

    /// Worker processes (each holds at most ~20,000 open files); buyers are sharded by index.
    #[arg(long, default_value_t = 1)]
    pub workers: u32,
    /// Spread sockets over this many source addresses 127.0.0.2… (0 = let the kernel pick).
    #[arg(long, default_value_t = 4)]
    pub source_addrs: u8,
    /// Most HTTP requests in flight per worker, for joins, again for polls far back, again for
    /// polls near the turn and again for the rest (bounds the sockets polling costs).
    #[arg(long, default_value_t = 512)]
    pub http_concurrency: usize,
    /// Most live WebSockets per worker; WebSocket buyers beyond it poll instead.
    #[arg(long, default_value_t = 15_000)]
    pub max_sockets: usize,
    /// Give up on buyers still running after this many seconds (the verdict runs anyway).
    #[arg(long, default_value_t = 600)]
    pub max_duration_s: u64,
    /// Seconds to wait for payments to settle after the last buyer finished.
    #[arg(long, default_value_t = 120)]
    pub settle_s: u64,
    /// Also measure a bare axum route returning a join's bytes for this many seconds.
    #[arg(long, default_value_t = 0)]
    pub baseline_s: u64,
    /// Extra processes whose CPU time is reported (besides those found by name).
    #[arg(long = "watch-pid", value_delimiter = ',')]
    pub watch_pids: Vec<u32>,
    /// The proxy's log of joins (`deploy/nginx/`, `floodgate_door`): FIFO order is then
    /// judged by when each join reached the door.
    #[arg(long)]
    pub door_log: Option<PathBuf>,
    /// Write every offered buyer's first wait range and real wait here (CSV), to study the
    /// range against other ways of drawing it.
    #[arg(long)]
    pub range_samples: Option<PathBuf>,
    /// Write the report as JSON here.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Seed of every per-buyer draw (a run is reproducible up to timing).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// No progress bars (a line every 10 s instead).
    #[arg(long)]
    pub quiet: bool,

    /// Internal: run as worker `i` of `workers`, writing a partial report to `--json`.
    #[arg(long, hide = true)]
    pub worker_of: Option<u32>,
    /// Internal: the run's start (UNIX ms) shared by all workers.
    #[arg(long, hide = true)]
    pub start_ms: Option<u64>,
}

fn default_event() -> String {
    format!("soak-{}", uuid::Uuid::new_v4().simple())
}

impl Config {
    /// Source addresses to bind outgoing sockets to; empty = the kernel's choice.
    pub fn source_addresses(&self) -> Vec<Ipv4Addr> {
        (0..self.source_addrs)
            .map(|i| Ipv4Addr::new(127, 0, 0, i.saturating_add(2)))
            .collect()
    }

    /// Checks the shares add up and the settings are ones the gateway accepts.
    pub fn validate(&self) -> anyhow::Result<()> {
        let shares = [
            ("prequeue-share", self.prequeue_share),
            ("ws-share", self.ws_share),
            ("two-tab-share", self.two_tab_share),
        ];
        for (name, v) in shares {
            anyhow::ensure!((0.0..=1.0).contains(&v), "--{name} must be within 0..=1");
        }
        let leave = self.abandon_offer_share + self.abandon_claimed_share + self.abandon_hold_share;
        anyhow::ensure!(leave <= 1.0, "abandonment shares add up to more than 1");
        let pay = self.declined_share + self.slow_share + self.lost_share + self.error_share;
        anyhow::ensure!(pay <= 1.0, "payment shares add up to more than 1");
        anyhow::ensure!(
            self.arrivals > 0 && self.seat_count > 0,
            "need buyers and seats"
        );
        anyhow::ensure!(self.window_s > 0.0, "--window-s must be positive");
        anyhow::ensure!(self.workers >= 1, "--workers must be at least 1");
        anyhow::ensure!(
            self.hold_ttl_s <= self.max_hold_s,
            "--hold-ttl-s must not exceed --max-hold-s"
        );
        Ok(())
    }

    /// The session length the event gets: the least the gateway accepts.
    pub fn session_s(&self) -> u32 {
        self.max_hold_s + self.abandon_s
    }
}
