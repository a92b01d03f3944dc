//! The real gateway binary as a child process: its CPU time, resident set and log lines are its
//! own, not mixed with the test's client, its allocator or other tests of the same binary.

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use super::http::wait_ready_at;

/// The gateway binary, its log-line counter and its address; dropping it kills it.
pub struct GatewayProcess {
    child: Child,
    lines: Arc<AtomicU64>,
    pub base: String,
}

impl Drop for GatewayProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl GatewayProcess {
    /// Starts `target/…/gateway` on `database_url` (and `redis_url`), with simulated payments and
    /// no per-address join limit (every test request comes from 127.0.0.1), plus the test's own
    /// `env`; returns once `/readyz` answers 200.
    pub async fn start(
        database_url: &str,
        redis_url: Option<&str>,
        organizer_key: &str,
        env: &[(&str, &str)],
    ) -> Self {
        let addr = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_gateway"));
        command
            .env_remove("REDIS_URL")
            .env_remove("RUST_LOG")
            .env("FLOODGATE_LISTEN", addr.to_string())
            .env("DATABASE_URL", database_url)
            .env("FLOODGATE_ORGANIZER_KEY", organizer_key)
            .env(
                "FLOODGATE_TOKEN_SECRET",
                "tok-child-gateway-0123456789abcdef0123456789",
            )
            .env(
                "FLOODGATE_WEBHOOK_SECRET",
                "whsec-child-gateway-0123456789abcdef012345",
            )
            .env("FLOODGATE_PAYMENT", "simulated")
            .env("FLOODGATE_JOIN_LIMIT_PER_MIN", "0")
            .env("FLOODGATE_DEMO", "false")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped());
        if let Some(redis) = redis_url {
            command.env("REDIS_URL", redis);
        }
        command.envs(env.iter().copied());
        let mut child = command.spawn().expect("start the gateway binary");
        let stderr = child.stderr.take().expect("the gateway's stderr");
        let lines = Arc::new(AtomicU64::new(0));
        let counted = lines.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines() {
                if line.is_err() {
                    return;
                }
                counted.fetch_add(1, Ordering::SeqCst);
            }
        });
        let gateway = Self {
            child,
            lines,
            base: format!("http://{addr}"),
        };
        gateway.wait_ready().await;
        gateway
    }

    async fn wait_ready(&self) {
        let stat = format!("/proc/{}/stat", self.child.id());
        // Exited and not yet reaped, the child is a zombie: state `Z` after its name.
        let stopped = || {
            std::fs::read_to_string(&stat)
                .map(|s| {
                    s.rsplit(')')
                        .next()
                        .is_some_and(|rest| rest.trim_start().starts_with('Z'))
                })
                .unwrap_or(true)
        };
        // Starting includes the migrations of a fresh database.
        let within = Duration::from_secs(20);
        wait_ready_at(&reqwest::Client::new(), &self.base, within, stopped).await;
    }

    fn proc_file(&self, name: &str) -> String {
        std::fs::read_to_string(format!("/proc/{}/{name}", self.child.id()))
            .unwrap_or_else(|e| panic!("read the gateway's /proc {name}: {e}"))
    }

    /// utime + stime of the process, in seconds (`/proc/PID/stat`, fields 14 and 15).
    pub fn cpu_s(&self) -> f64 {
        let stat = self.proc_file("stat");
        // The command name may hold spaces; the fields after its closing parenthesis do not.
        let after = &stat[stat.rfind(')').expect("stat has a command name") + 2..];
        let fields: Vec<&str> = after.split_whitespace().collect();
        let ticks: u64 =
            fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
        // The clock tick (`getconf CLK_TCK`) is 100 on Linux.
        ticks as f64 / 100.0
    }

    /// The process's resident set in bytes (`VmRSS` of `/proc/PID/status`).
    pub fn rss(&self) -> u64 {
        status_bytes(&self.proc_file("status"), "VmRSS:")
    }

    /// The most the resident set has been since the process started (`VmHWM`), in bytes: the
    /// kernel keeps it, so no peak between two readings is missed.
    pub fn peak_rss(&self) -> u64 {
        status_bytes(&self.proc_file("status"), "VmHWM:")
    }

    /// Lines the gateway has written to its log so far.
    pub fn lines(&self) -> u64 {
        self.lines.load(Ordering::SeqCst)
    }
}

/// The field `name` (`VmRSS:`, `VmHWM:`) of a `/proc/…/status` text, in bytes.
pub fn status_bytes(status: &str, name: &str) -> u64 {
    let kb: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix(name))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{name} in /proc status"));
    kb * 1024
}

fn free_port() -> SocketAddr {
    let socket = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
    socket.local_addr().expect("bound address")
}
