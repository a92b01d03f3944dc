//! What both gateway benchmarks share: starting real `gateway` processes (the binary Cargo
//! builds beside the bench, `CARGO_BIN_EXE_gateway`) on fresh backends, re-executing the bench
//! itself as worker processes, and reading a process's memory and CPU from `/proc`.
//!
//! # Layout
//! - `mod.rs`: gateway processes, fresh PostgreSQL databases, Redis cleanup, `/proc` readings
//! - `worker.rs`: the bench re-executed in a role (client, bare server), spoken to by lines
//! - `http1.rs`: reading HTTP/1.1 answers off raw load-generator connections
//! - `stats.rs`: percentiles and the summary table's formatting
#![allow(dead_code)]

pub mod http1;
pub mod stats;
pub mod worker;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

pub const ORGANIZER_KEY: &str = "bench-organizer-key";
/// One signing secret for every gateway of a run, so a token from one is good at the others.
pub const TOKEN_SECRET: &str = "bench-token-secret-0123456789abcdef";
pub const REDIS_URL: &str = "redis://127.0.0.1:6379";

/// A directory for this run's logs and SQLite files, kept after the run for inspection.
pub fn run_dir() -> PathBuf {
    let dir = std::env::temp_dir().join(format!("floodgate-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("create the bench's temp directory");
    dir
}

/// A free loopback port: bound, read, released (the gateway binds it again a moment later).
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("bind a free loopback port")
        .port()
}

/// Which database and queue a gateway process runs on.
#[derive(Clone, Debug)]
pub struct Backends {
    pub database_url: String,
    pub redis_url: Option<String>,
}

impl Backends {
    /// The embedded default: a fresh SQLite file and the in-memory queue.
    pub fn embedded(name: &str) -> Self {
        let path = run_dir().join(format!("{name}.db"));
        Self {
            database_url: format!("sqlite:{}", path.display()),
            redis_url: None,
        }
    }

    pub fn postgres_redis(db: &FreshPostgres) -> Self {
        Self {
            database_url: db.url.clone(),
            redis_url: Some(REDIS_URL.to_owned()),
        }
    }
}

/// One `gateway` process, killed when dropped.
pub struct GatewayProcess {
    pub addr: SocketAddr,
    pub pid: u32,
    pub log: PathBuf,
    child: Child,
}

impl GatewayProcess {
    /// Starts the built `gateway` binary with everything set by environment (as an operator
    /// would) and returns once `/readyz` answers.
    pub async fn start(name: &str, backends: &Backends, join_limit_per_min: u32) -> Self {
        let port = free_port();
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let log = run_dir().join(format!("{name}.log"));
        let log_file = std::fs::File::create(&log).expect("create the gateway's log file");
        let mut command = Command::new(env!("CARGO_BIN_EXE_gateway"));
        command
            .env("FLOODGATE_LISTEN", addr.to_string())
            .env("DATABASE_URL", &backends.database_url)
            .env("FLOODGATE_ORGANIZER_KEY", ORGANIZER_KEY)
            .env("FLOODGATE_TOKEN_SECRET", TOKEN_SECRET)
            .env(
                "FLOODGATE_WEBHOOK_SECRET",
                "whsec_bench_0123456789abcdef0123456789",
            )
            .env(
                "FLOODGATE_JOIN_LIMIT_PER_MIN",
                join_limit_per_min.to_string(),
            )
            .env("FLOODGATE_TRUSTED_PROXIES", "127.0.0.0/8")
            // Thousands of sockets share each source address.
            .env("FLOODGATE_SOCKETS_PER_ADDRESS", "100000")
            .env("FLOODGATE_DEMO", "false")
            // The production default filter, whatever the shell running the bench has set.
            .env_remove("RUST_LOG")
            .env_remove("REDIS_URL")
            .env_remove("FLOODGATE_PAYMENT_URL")
            // Benches measure the gateway, not a provider: the in-process simulator, by name.
            .env("FLOODGATE_PAYMENT", "simulated")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log_file)
            .kill_on_drop(true);
        if let Some(redis) = &backends.redis_url {
            command.env("REDIS_URL", redis);
        }
        let child = command.spawn().expect("start the gateway binary");
        let pid = child.id().expect("a running gateway has a pid");
        let gateway = Self {
            addr,
            pid,
            log,
            child,
        };
        gateway.wait_ready().await;
        gateway
    }

    pub fn base(&self) -> String {
        format!("http://{}", self.addr)
    }

    async fn wait_ready(&self) {
        let client = reqwest::Client::new();
        let started = Instant::now();
        loop {
            let ready = client
                .get(format!("{}/readyz", self.base()))
                .timeout(Duration::from_secs(2))
                .send()
                .await
                .is_ok_and(|r| r.status().is_success());
            if ready {
                return;
            }
            assert!(
                started.elapsed() < Duration::from_secs(60),
                "gateway at {} not ready within 60 s; see {}",
                self.addr,
                self.log.display()
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

/// The organizer API of one gateway.
pub struct Organizer {
    base: String,
    client: reqwest::Client,
}

impl Organizer {
    pub fn new(base: &str) -> Self {
        Self {
            base: base.to_owned(),
            client: reqwest::Client::new(),
        }
    }

    async fn call(&self, method: reqwest::Method, path: &str, body: &Value) -> Value {
        let response = self
            .client
            .request(method, format!("{}{path}", self.base))
            .bearer_auth(ORGANIZER_KEY)
            .json(body)
            .send()
            .await
            .unwrap_or_else(|e| panic!("{path}: {e}"));
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        assert!(status.is_success(), "{path} answered {status}: {body}");
        body
    }

    /// Creates an event that is open now, with a unique id and `seats` seats in one row
    /// (`A-A-1`, `A-A-2`, …), and returns the id.
    pub async fn create_open_event(&self, prefix: &str, admission: Value, seats: u32) -> String {
        let event = format!("{prefix}-{}", uuid::Uuid::now_v7().simple());
        let opens_at = time::OffsetDateTime::now_utc()
            .format(&time::format_description::well_known::Rfc3339)
            .expect("format now as RFC 3339");
        let body = json!({
            "event": event, "name": "Bench night", "opens_at": opens_at, "admission": admission,
        });
        self.call(reqwest::Method::POST, "/api/admin/events", &body)
            .await;
        let seats = json!({ "generate": { "section": "A", "rows": 1, "per_row": seats, "price_cents": 2500 } });
        self.call(
            reqwest::Method::POST,
            &format!("/api/admin/events/{event}/seats"),
            &seats,
        )
        .await;
        event
    }

    /// `PATCH …/admission`; the answering gateway ticks before it answers.
    pub async fn tune(&self, event: &str, patch: Value) {
        self.call(
            reqwest::Method::PATCH,
            &format!("/api/admin/events/{event}/admission"),
            &patch,
        )
        .await;
    }
}

/// A fresh PostgreSQL database for one run; dropped (forcibly) by `drop_now`.
pub struct FreshPostgres {
    pub url: String,
}

impl FreshPostgres {
    pub async fn create() -> Self {
        let url = reservation::testing::fresh_database_url("bench_").await;
        Self { url }
    }

    pub async fn drop_now(self) {
        if let Err(e) = reservation::testing::drop_database(&self.url).await {
            eprintln!("could not drop a bench database: {e}");
        }
    }
}

/// Deletes an event's queue keys (`{fg:EVENT}:*`) from the shared Redis, so repeated runs do
/// not accumulate buyers there. A raw RESP `EVAL`, to need no Redis client here.
pub async fn forget_redis_event(event: &str) {
    let script = "local n = 0 for _, k in ipairs(redis.call('KEYS', ARGV[1])) do \
                  n = n + redis.call('DEL', k) end return n";
    let pattern = format!("{{fg:{event}}}:*");
    let args = ["EVAL", script, "0", pattern.as_str()];
    let mut request = format!("*{}\r\n", args.len());
    for arg in args {
        request.push_str(&format!("${}\r\n{arg}\r\n", arg.len()));
    }
    let host = REDIS_URL.trim_start_matches("redis://");
    let outcome = async {
        let mut conn = tokio::net::TcpStream::connect(host).await?;
        conn.write_all(request.as_bytes()).await?;
        let mut reply = [0u8; 64];
        let n = conn.read(&mut reply).await?;
        Ok::<_, std::io::Error>(String::from_utf8_lossy(&reply[..n]).into_owned())
    };
    match tokio::time::timeout(Duration::from_secs(10), outcome).await {
        Ok(Ok(reply)) if reply.starts_with(':') => {}
        other => eprintln!("could not delete Redis keys {pattern}: {other:?}"),
    }
}

/// Resident set size of a process, in bytes (`VmRSS` of `/proc/PID/status`).
pub fn rss_bytes(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_else(|e| panic!("read /proc/{pid}/status: {e}"));
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map(|kib| kib * 1024)
        .unwrap_or_else(|| panic!("no VmRSS in /proc/{pid}/status"))
}

/// CPU time a process has used so far (user + system), from `/proc/PID/stat`.
pub fn cpu_time(pid: u32) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .unwrap_or_else(|e| panic!("read /proc/{pid}/stat: {e}"));
    // The command name (field 2) may hold spaces: count fields after its closing parenthesis.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<u64> = after
        .split_whitespace()
        .map(|f| f.parse().unwrap_or(0))
        .collect();
    // utime and stime are fields 14 and 15 of the whole line, 12 and 13 after the name.
    let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
    // USER_HZ is 100 on Linux.
    Duration::from_millis(ticks * 10)
}
