//! Every setting is a flag and an environment variable; with none set the gateway runs the
//! embedded default (SQLite file, in-memory queue, in-process simulated payments, demo event).

use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use ipnet::IpNet;

use crate::payment_mode::PaymentChoice;

#[derive(Parser, Debug, Clone)]
#[command(
    name = "gateway",
    about = "Floodgate: a virtual waiting room in front of a reservation core"
)]
pub struct Config {
    /// Address to serve on (`127.0.0.1:0` picks a free port and logs it).
    #[arg(long, env = "FLOODGATE_LISTEN", default_value = "127.0.0.1:8080")]
    pub listen: SocketAddr,

    /// `postgres://…` or `sqlite:…`.
    #[arg(long, env = "DATABASE_URL", default_value = "sqlite:floodgate.db")]
    pub database_url: String,

    /// `redis://…` (several comma-separated nodes = Redis Cluster); unset = in-memory queue.
    #[arg(long, env = "REDIS_URL")]
    pub redis_url: Option<String>,

    /// Bearer key of the organizer API; generated once and kept in the database when unset.
    #[arg(long, env = "FLOODGATE_ORGANIZER_KEY")]
    pub organizer_key: Option<Secret>,

    /// HS256 secret for queue and admission tokens; generated once and kept when unset.
    #[arg(long, env = "FLOODGATE_TOKEN_SECRET")]
    pub token_secret: Option<Secret>,

    /// `kid:secret,…` for key rotation: the first signs, all verify.
    #[arg(long, env = "FLOODGATE_TOKEN_SECRETS")]
    pub token_secrets: Option<Secret>,

    /// Base URL of the Stripe-shaped payment provider (`https://`; `http://` only on loopback).
    /// Unset = the in-process simulator, which PostgreSQL deployments must ask for by name.
    #[arg(long, env = "FLOODGATE_PAYMENT_URL")]
    pub payment_url: Option<String>,

    /// `simulated`: sell through the in-process simulator, taking no money. Needed on PostgreSQL
    /// without `FLOODGATE_PAYMENT_URL` (the embedded SQLite default uses the simulator anyway).
    #[arg(long, env = "FLOODGATE_PAYMENT", value_enum)]
    pub payment: Option<PaymentChoice>,

    /// API key of the payment provider.
    #[arg(long, env = "FLOODGATE_PAYMENT_KEY")]
    pub payment_key: Option<Secret>,

    /// Webhook signature secret; generated and kept when unset.
    #[arg(long, env = "FLOODGATE_WEBHOOK_SECRET")]
    pub webhook_secret: Option<Secret>,

    /// Extra trusted CA certificates (PEM) for the provider, PostgreSQL and Redis, beside the
    /// platform's roots: for servers behind a private CA.
    #[arg(long, env = "FLOODGATE_TLS_CA_FILE")]
    pub tls_ca_file: Option<PathBuf>,

    /// Certificate chain (PEM) to serve HTTPS with; with `FLOODGATE_TLS_KEY_FILE`. Unset = HTTP.
    #[arg(long, env = "FLOODGATE_TLS_CERT_FILE", requires = "tls_key_file")]
    pub tls_cert_file: Option<PathBuf>,

    /// Private key (PEM) of `FLOODGATE_TLS_CERT_FILE`.
    #[arg(long, env = "FLOODGATE_TLS_KEY_FILE", requires = "tls_cert_file")]
    pub tls_key_file: Option<PathBuf>,

    /// Joins per client address per minute.
    #[arg(long, env = "FLOODGATE_JOIN_LIMIT_PER_MIN", default_value_t = 60)]
    pub join_limit_per_min: u32,

    /// Reads per second of the queue snapshot and status the front answers waiting buyers
    /// (the proxy or CDN, or the gateways without one): waiting pages space their reads so
    /// the whole crowd makes about this many.
    #[arg(long, env = "FLOODGATE_WAITING_READS_PER_S", default_value_t = 10_000,
          value_parser = clap::value_parser!(u32).range(1..))]
    pub waiting_reads_per_s: u32,

    /// CIDRs of proxies whose `X-Forwarded-For` is believed, comma-separated.
    #[arg(long, env = "FLOODGATE_TRUSTED_PROXIES", value_delimiter = ',')]
    pub trusted_proxies: Vec<IpNet>,

    /// Seed the `demo` event; on by default with a SQLite database (the embedded default).
    #[arg(long, env = "FLOODGATE_DEMO")]
    pub demo: Option<bool>,

    /// `json` for JSON logs, anything else for text.
    #[arg(long, env = "FLOODGATE_LOG", default_value = "text")]
    pub log: String,

    /// Backpressure: slow, then hold, offers while the reservation core is unhealthy.
    #[arg(long, env = "FLOODGATE_BACKPRESSURE", default_value_t = true, action = clap::ArgAction::Set)]
    pub backpressure: bool,

    /// Backpressure: holds slower than this at p99 (over one second) mean the core struggles.
    #[arg(
        long,
        env = "FLOODGATE_BACKPRESSURE_HOLD_P99_MS",
        default_value_t = 1_000
    )]
    pub backpressure_hold_p99_ms: u64,

    /// Backpressure: an admitted buyer's request waiting longer than this for a permit of the
    /// reservations budget means more buyers are let in than the core serves.
    #[arg(
        long,
        env = "FLOODGATE_BACKPRESSURE_ADMITTED_WAIT_MS",
        default_value_t = 1_000
    )]
    pub backpressure_admitted_wait_ms: u64,

    /// Backpressure: half the owed outbox jobs older than this means payments are not keeping
    /// up (a few stuck jobs, such as buyers' failing cards, do not count).
    #[arg(long, env = "FLOODGATE_BACKPRESSURE_OUTBOX_AGE_S", default_value_t = 5)]
    pub backpressure_outbox_age_s: u64,

    /// Joins in flight at once; more are answered 503 `overloaded`.
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_JOINS", default_value_t = 64)]
    pub max_inflight_joins: usize,

    /// Joins that may wait for a permit at once when all are in flight, in arrival order,
    /// rather than being refused: a burst at opening keeps the order people came in. Beyond
    /// it, or past `join_patience_ms`, a join is answered 503 `overloaded`. 0 turns it off.
    #[arg(long, env = "FLOODGATE_JOIN_QUEUE", default_value_t = 4_096)]
    pub join_queue: usize,

    /// How long a join may wait in that line: a shed buyer comes back seconds later behind
    /// everyone who came meanwhile, so waiting this long is the better answer.
    #[arg(long, env = "FLOODGATE_JOIN_PATIENCE_MS", default_value_t = 2_000)]
    pub join_patience_ms: u64,

    /// Queue snapshot and status polls in flight at once (a budget apart from joins and
    /// reads, so neither a join storm nor a seat-map rush sheds the polls of buyers waiting).
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_POLLS", default_value_t = 256)]
    pub max_inflight_polls: usize,

    /// WebSocket handshakes in flight at once (open sockets are not counted).
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_SOCKETS", default_value_t = 256)]
    pub max_inflight_sockets: usize,

    /// Claims, holds, extend, checkout, release, session and order requests in flight.
    #[arg(
        long,
        env = "FLOODGATE_MAX_INFLIGHT_RESERVATIONS",
        default_value_t = 128
    )]
    pub max_inflight_reservations: usize,

    /// Payment provider webhooks in flight.
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_WEBHOOKS", default_value_t = 16)]
    pub max_inflight_webhooks: usize,

    /// Requests of admitted buyers (an admission token: holds, checkout, session, their hold
    /// and order) that may wait for a reservations permit at once, rather than being refused
    /// for load; beyond it they are answered 503 `overloaded`. A buyer who queued for their
    /// turn is owed an answer, and there are at most `max_active` of them per event.
    #[arg(long, env = "FLOODGATE_ADMITTED_QUEUE", default_value_t = 4_096)]
    pub admitted_queue: usize,

    /// Organizer requests in flight.
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_ORGANIZER", default_value_t = 16)]
    pub max_inflight_organizer: usize,

    /// Event, seat map, fairness, page and OpenAPI reads in flight.
    #[arg(long, env = "FLOODGATE_MAX_INFLIGHT_READS", default_value_t = 128)]
    pub max_inflight_reads: usize,

    /// Seconds a request may take before the client hears 503 `overloaded` (not WebSockets).
    #[arg(long, env = "FLOODGATE_REQUEST_TIMEOUT_S", default_value_t = 10)]
    pub request_timeout_s: u64,

    /// Seconds a client may take to send a request's body; past it the request is refused
    /// (408) and its connection closed.
    #[arg(long, env = "FLOODGATE_BODY_TIMEOUT_S", default_value_t = 10)]
    pub body_timeout_s: u64,

    /// Seconds an organizer request may take (bulk seat generation is slow).
    #[arg(long, env = "FLOODGATE_ORGANIZER_TIMEOUT_S", default_value_t = 120)]
    pub organizer_timeout_s: u64,

    /// Seconds past its `abandon_at` after which a payment still without a provider answer is
    /// escalated (`floodgate_payments_overdue`, an error log, flagged on the dashboard).
    #[arg(long, env = "FLOODGATE_PAYMENT_OVERDUE_S", default_value_t = 60)]
    pub payment_overdue_s: u32,

    /// Seconds a client has to send a request's headers, from the connection's start or the
    /// end of its last answer; a slower one is disconnected.
    #[arg(long, env = "FLOODGATE_HEADER_TIMEOUT_S", default_value_t = 10)]
    pub header_timeout_s: u64,

    /// Connections open at once, waiting sockets included; more are closed as they arrive.
    /// Leaves room under the process's 20,000 open files for TLS handshakes in progress, the
    /// database pool and Redis.
    #[arg(long, env = "FLOODGATE_MAX_CONNECTIONS", default_value_t = 16_000)]
    pub max_connections: usize,

    /// Waiting-room sockets open at once from one client address (an IPv6 /64 counts as one);
    /// more are answered 429.
    #[arg(long, env = "FLOODGATE_SOCKETS_PER_ADDRESS", default_value_t = 20)]
    pub sockets_per_address: usize,

    /// Organizer webhooks: the first retry of a failed delivery waits this long; each next one
    /// twice as long, up to an hour.
    #[arg(long, env = "FLOODGATE_HOOK_RETRY_BASE_MS", default_value_t = 10_000)]
    pub hook_retry_base_ms: u64,

    /// Organizer webhooks: a delivery still failing this long after its fact is given up
    /// (logged, and shown as `failed` on the dashboard).
    #[arg(long, env = "FLOODGATE_HOOK_GIVE_UP_S", default_value_t = 86_400)]
    pub hook_give_up_s: u64,

    /// Sites that may show the pages in a frame, as CSP sources separated by spaces (such as
    /// `'self' https://tickets.example.com`); `'none'` refuses every frame.
    #[arg(long, env = "FLOODGATE_FRAME_ANCESTORS", default_value = crate::security_headers::NO_FRAMING)]
    pub frame_ancestors: String,
}

impl Config {
    /// The embedded default without reading the environment (tests start gateways in a process
    /// whose environment names the test servers).
    pub fn embedded(listen: SocketAddr, database_url: impl Into<String>) -> Self {
        Self {
            listen,
            database_url: database_url.into(),
            redis_url: None,
            organizer_key: None,
            token_secret: None,
            token_secrets: None,
            payment_url: None,
            payment: None,
            payment_key: None,
            webhook_secret: None,
            tls_ca_file: None,
            tls_cert_file: None,
            tls_key_file: None,
            join_limit_per_min: 60,
            waiting_reads_per_s: 10_000,
            trusted_proxies: Vec::new(),
            demo: None,
            log: "text".to_owned(),
            backpressure: true,
            backpressure_hold_p99_ms: 1_000,
            backpressure_admitted_wait_ms: 1_000,
            backpressure_outbox_age_s: 5,
            max_inflight_joins: 64,
            max_inflight_polls: 256,
            max_inflight_sockets: 256,
            max_inflight_reservations: 128,
            max_inflight_webhooks: 16,
            admitted_queue: 4_096,
            join_queue: 4_096,
            join_patience_ms: 2_000,
            max_inflight_organizer: 16,
            max_inflight_reads: 128,
            request_timeout_s: 10,
            body_timeout_s: 10,
            organizer_timeout_s: 120,
            payment_overdue_s: 60,
            header_timeout_s: 10,
            max_connections: 16_000,
            sockets_per_address: 20,
            frame_ancestors: crate::security_headers::NO_FRAMING.to_owned(),
            hook_retry_base_ms: 10_000,
            hook_give_up_s: 86_400,
        }
    }

    /// How the organizer-webhook worker paces itself (`reservation::hooks`).
    pub fn hooks(&self) -> reservation::hooks::HookConfig {
        let base = std::time::Duration::from_millis(self.hook_retry_base_ms.max(1));
        reservation::hooks::HookConfig {
            backoff_base: base,
            backoff_max: std::time::Duration::from_secs(3600).max(base),
            give_up_after: std::time::Duration::from_secs(self.hook_give_up_s.max(1)),
            payment_overdue_s: i64::from(self.payment_overdue_s),
            ..Default::default()
        }
    }

    /// When backpressure counts the reservation core as unhealthy (`backpressure.rs`).
    pub fn backpressure(&self) -> crate::backpressure::Thresholds {
        crate::backpressure::Thresholds {
            enabled: self.backpressure,
            hold_p99: std::time::Duration::from_millis(self.backpressure_hold_p99_ms),
            admitted_wait: std::time::Duration::from_millis(self.backpressure_admitted_wait_ms),
            outbox_age: std::time::Duration::from_secs(self.backpressure_outbox_age_s),
        }
    }

    /// The in-flight budgets and deadlines of the route groups (`overload.rs`).
    pub fn budgets(&self) -> crate::overload::Budgets {
        crate::overload::Budgets {
            joins: self.max_inflight_joins.max(1),
            polls: self.max_inflight_polls.max(1),
            sockets: self.max_inflight_sockets.max(1),
            reservations: self.max_inflight_reservations.max(1),
            webhooks: self.max_inflight_webhooks.max(1),
            admitted_queue: self.admitted_queue,
            join_queue: self.join_queue,
            join_patience: std::time::Duration::from_millis(self.join_patience_ms),
            organizer: self.max_inflight_organizer.max(1),
            reads: self.max_inflight_reads.max(1),
            request_timeout: std::time::Duration::from_secs(self.request_timeout_s.max(1)),
            organizer_timeout: std::time::Duration::from_secs(self.organizer_timeout_s.max(1)),
            body_timeout: std::time::Duration::from_secs(self.body_timeout_s.max(1)),
        }
    }

    /// What one connection may cost (`connections.rs`).
    pub fn connection_limits(&self) -> crate::connections::ConnectionLimits {
        crate::connections::ConnectionLimits {
            header_timeout: std::time::Duration::from_secs(self.header_timeout_s.max(1)),
            max_connections: self.max_connections.max(1),
        }
    }

    pub fn demo_enabled(&self) -> bool {
        self.demo
            .unwrap_or_else(|| self.database_url.starts_with("sqlite:"))
    }
}

/// A secret setting: never shown by `Debug` or in logs.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(***)")
    }
}

impl std::str::FromStr for Secret {
    type Err = std::convert::Infallible;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(Self(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_never_show_in_debug() {
        let config = Config::parse_from(["gateway", "--organizer-key", "hunter2"]);
        assert!(!format!("{config:?}").contains("hunter2"));
        assert_eq!(
            config.organizer_key.as_ref().map(Secret::expose),
            Some("hunter2")
        );
    }

    #[test]
    fn embedded_budgets_match_the_flag_defaults() {
        let parsed = Config::parse_from(["gateway"]).budgets();
        let embedded = Config::embedded("127.0.0.1:0".parse().unwrap(), "sqlite:x.db").budgets();
        assert_eq!(format!("{parsed:?}"), format!("{embedded:?}"));
        let parsed = Config::parse_from(["gateway"]);
        let embedded = Config::embedded("127.0.0.1:0".parse().unwrap(), "sqlite:x.db");
        assert_eq!(
            format!("{:?}", parsed.connection_limits()),
            format!("{:?}", embedded.connection_limits())
        );
        assert_eq!(parsed.sockets_per_address, embedded.sockets_per_address);
        let tuned = Config::parse_from(["gateway", "--max-inflight-joins", "7"]).budgets();
        assert_eq!(tuned.joins, 7);
    }

    #[test]
    fn demo_defaults_on_for_sqlite_only() {
        let sqlite = Config::parse_from(["gateway", "--database-url", "sqlite:x.db"]);
        assert!(sqlite.demo_enabled());
        let pg = Config::parse_from(["gateway", "--database-url", "postgres://h/db"]);
        assert!(!pg.demo_enabled());
        let forced = Config::parse_from([
            "gateway",
            "--database-url",
            "postgres://h/db",
            "--demo",
            "true",
        ]);
        assert!(forced.demo_enabled());
    }
}
