//! `spawn_app()`: the real gateway (`gateway::run`) on `127.0.0.1:0` in a tokio task, against
//! real backends, with helpers named after what a buyer or an organizer does.
//!
//! # Layout
//! - `mod.rs`: backends, `spawn_app`, `TestApp` (one or more gateways on the same backends)
//! - `http.rs`: `Gateway`, one running instance, and `Answer`, what it said
//! - `buyer.rs`: buyer verbs (`join_queue`, `claim`, `hold`, `checkout`, …) and `create_event`
//! - `socket.rs`: the waiting-room WebSocket (`wait_for_turn`, claim over the socket)
//! - `tokens.rs`: hand-made JWTs (forged, expired, `alg: none`)
//! - `contract.rs`: API.md's routes, which the OpenAPI document and the router must cover
//! - `rows.rs`: what the database holds, for "nothing changed" and stats checks
//! - `nginx.rs`: the shipped nginx configuration in front of a gateway
//! - `flood.rs`: an anonymous crowd on cheap routes, counting what it was answered
//! - `process.rs`: the gateway binary as a child process, for figures that must be its own
//! - `team.rs`: team keys of each role, and "nothing changed" snapshots of organizer state
//!
//! Each story (a module of `e2e/` or a test binary of its own) uses a different subset of these
//! helpers.
#![allow(dead_code)]

pub mod buyer;
pub mod contract;
pub mod flood;
pub mod http;
pub mod nginx;
pub mod process;
pub mod rows;
pub mod socket;
pub mod team;
pub mod tokens;

use std::net::SocketAddr;
use std::ops::Deref;
use std::time::Duration;

use floodgate_tests::simulator::{SimServerConfig, SimulatorHandle};
use gateway::config::{Config, Secret};
use reservation::payments::simulator::{Knobs, SimulatorConfig};
use reservation::{Store, StoreOptions};

pub use http::Gateway;

/// The backend combination a test runs against.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backends {
    /// A fresh PostgreSQL database, the shared Redis, the HTTP payment simulator.
    Postgres,
    /// The embedded default: a fresh SQLite file, the in-memory queue, in-process payments.
    Embedded,
}

/// `REDIS_URL`, or the local default.
pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".into())
}

/// A test's own settings on top of the defaults below.
type Tune = std::sync::Arc<dyn Fn(&mut Config) + Send + Sync>;

/// Everything a gateway of this test is configured with; peers share it.
#[derive(Clone)]
struct Setup {
    tune: Tune,
    database_url: String,
    redis_url: Option<String>,
    payment_url: Option<String>,
    webhook_secret: String,
    token_secret: String,
    organizer_key: String,
}

/// One test's world: the gateway(s), a store on the same database, the simulator.
pub struct TestApp {
    /// The first gateway; `Deref` lets tests call buyer verbs on the app directly.
    pub gateway: Gateway,
    pub backends: Backends,
    /// A store on the gateway's database, for asserting rows.
    pub store: Store,
    /// The HS256 secret the gateways sign with (kid `k1`), for hand-made tokens.
    pub token_secret: String,
    pub organizer_key: String,
    /// The HTTP simulator (PostgreSQL backends only).
    pub simulator: Option<SimulatorHandle>,
    setup: Setup,
}

impl Deref for TestApp {
    type Target = Gateway;
    fn deref(&self) -> &Gateway {
        &self.gateway
    }
}

fn unique(prefix: &str) -> String {
    format!("{prefix}{}", uuid::Uuid::now_v7().simple())
}

/// Starts the gateway on `backends`; returns once `/readyz` answers 200.
pub async fn spawn_app(backends: Backends) -> TestApp {
    spawn_app_with(backends, |_| {}).await
}

/// `spawn_app` with settings of the test's own (`tune` edits the configuration last).
pub async fn spawn_app_with(
    backends: Backends,
    tune: impl Fn(&mut Config) + Send + Sync + 'static,
) -> TestApp {
    init_tracing();
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
        .expect("bind a loopback port for the gateway");
    let addr = listener.local_addr().expect("bound address");
    let webhook_secret = unique("whsec_");
    let (database_url, store) = match backends {
        Backends::Postgres => fresh_postgres_url().await,
        Backends::Embedded => fresh_sqlite_url().await,
    };
    let mut simulator = None;
    let (redis_url, payment_url) = match backends {
        Backends::Postgres => {
            let redis = redis_url();
            check_redis(&redis).await;
            let knobs = Knobs {
                webhook_url: Some(format!("http://{addr}/api/payments/webhook")),
                ..Knobs::default()
            };
            let sim = floodgate_tests::simulator::spawn(SimServerConfig {
                simulator: SimulatorConfig {
                    seed: 7,
                    webhook_secret: webhook_secret.clone(),
                    knobs,
                },
                ..SimServerConfig::default()
            })
            .await
            .expect("start the HTTP payment simulator");
            let url = sim.base_url.clone();
            simulator = Some(sim);
            (Some(redis), Some(url))
        }
        Backends::Embedded => (None, None),
    };
    let setup = Setup {
        tune: std::sync::Arc::new(tune),
        database_url,
        redis_url,
        payment_url,
        webhook_secret,
        token_secret: unique("tok_"),
        organizer_key: unique("org_"),
    };
    let gateway = start(&setup, listener).await;
    TestApp {
        gateway,
        backends,
        store,
        token_secret: setup.token_secret.clone(),
        organizer_key: setup.organizer_key.clone(),
        simulator,
        setup,
    }
}

impl TestApp {
    /// The secret the payment provider signs its webhooks with, for hand-made deliveries.
    pub fn webhook_secret(&self) -> &str {
        &self.setup.webhook_secret
    }

    /// Another gateway instance on the same database, queue backend and payment provider.
    pub async fn spawn_peer(&self) -> Gateway {
        let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0)))
            .expect("bind a loopback port for the peer gateway");
        start(&self.setup, listener).await
    }

    /// The database every gateway of this test uses.
    pub fn database_url(&self) -> &str {
        &self.setup.database_url
    }

    /// The queue backend's URL, when it is Redis.
    pub fn redis_url(&self) -> Option<&str> {
        self.setup.redis_url.as_deref()
    }
}

async fn start(setup: &Setup, listener: tokio::net::TcpListener) -> Gateway {
    let addr = listener.local_addr().expect("bound address");
    let mut config = Config::embedded(addr, setup.database_url.clone());
    config.redis_url = setup.redis_url.clone();
    config.payment_url = setup.payment_url.clone();
    config.webhook_secret = Some(Secret::new(setup.webhook_secret.clone()));
    config.token_secret = Some(Secret::new(setup.token_secret.clone()));
    config.organizer_key = Some(Secret::new(setup.organizer_key.clone()));
    // Every test buyer comes from 127.0.0.1; the join limit has its own unit tests.
    config.join_limit_per_min = 0;
    config.demo = Some(false);
    (setup.tune)(&mut config);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(gateway::run(config, listener, async move {
        let _ = stopped.await;
    }));
    let gateway = Gateway::new(
        format!("http://{addr}"),
        setup.organizer_key.clone(),
        stop,
        task,
    );
    gateway.wait_ready().await;
    gateway
}

/// A fresh PostgreSQL database on the server of `DATABASE_URL`, migrated; its URL and a store.
async fn fresh_postgres_url() -> (String, Store) {
    let db_url = reservation::testing::fresh_database_url("t_e2e_").await;
    (db_url.clone(), open_store(&db_url).await)
}

async fn fresh_sqlite_url() -> (String, Store) {
    let path = std::env::temp_dir().join(format!("{}.db", unique("floodgate-e2e-")));
    let url = format!("sqlite:{}", path.display());
    (url.clone(), open_store(&url).await)
}

/// The assertion store migrates the database first, so the gateway finds it ready.
async fn open_store(url: &str) -> Store {
    let options = StoreOptions {
        max_connections: 4,
        ..StoreOptions::default()
    };
    Store::connect(url, options)
        .await
        .unwrap_or_else(|e| panic!("cannot open the test database {url}: {e:?}"))
}

/// Fails loudly, naming the variable, when Redis does not answer a PING.
async fn check_redis(url: &str) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let first = url.split(',').next().unwrap_or(url);
    let host = first
        .trim_start_matches("redis://")
        .rsplit('@')
        .next()
        .unwrap_or_default()
        .split('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    let answer = tokio::time::timeout(Duration::from_secs(3), async {
        let mut conn = tokio::net::TcpStream::connect(&host).await?;
        conn.write_all(b"PING\r\n").await?;
        let mut buf = [0u8; 16];
        let n = conn.read(&mut buf).await?;
        Ok::<_, std::io::Error>(buf[..n].to_vec())
    })
    .await;
    match answer {
        Ok(Ok(reply)) if reply.starts_with(b"+PONG") => {}
        other => panic!(
            "Redis does not answer at REDIS_URL={url}: {other:?} (start it, or set REDIS_URL)"
        ),
    }
}

fn init_tracing() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_test_writer()
        .try_init();
}
