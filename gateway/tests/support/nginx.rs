//! nginx in front of a test gateway, configured by the repository's own
//! `deploy/nginx/start.sh` (the template the runbook ships) on a free loopback port, with a
//! scratch prefix removed when it is dropped. nginx missing fails the test, naming the package.

use std::collections::BTreeSet;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::http::{DEADLINE, Gateway};

/// Ports this process's nginx instances listen on. A free port is found by binding port 0 and
/// letting it go, so two tests starting nginx at once could be handed the same one: the second
/// would find the first's nginx answering there, and lose it when that test ended.
static PORTS: Mutex<BTreeSet<u16>> = Mutex::new(BTreeSet::new());

fn ports() -> std::sync::MutexGuard<'static, BTreeSet<u16>> {
    PORTS.lock().unwrap_or_else(PoisonError::into_inner)
}

pub struct Nginx {
    child: Child,
    pub addr: SocketAddr,
    prefix: PathBuf,
}

impl Nginx {
    /// nginx (one worker) proxying to `upstream`.
    pub fn start(upstream: &str) -> Self {
        let port = loop {
            let port = TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.local_addr())
                .expect("a free loopback port for nginx")
                .port();
            if ports().insert(port) {
                break port;
            }
        };
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let prefix =
            std::env::temp_dir().join(format!("floodgate-nginx-{}", uuid::Uuid::now_v7().simple()));
        let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../deploy/nginx/start.sh");
        let mut child = Command::new("bash")
            .arg(&script)
            .args(["--listen", &addr.to_string()])
            .arg("--prefix")
            .arg(&prefix)
            .args(["--upstream", upstream, "--workers", "1"])
            .stdin(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", script.display()));
        let started = Instant::now();
        loop {
            if let Ok(Some(status)) = child.try_wait() {
                let mut why = String::new();
                if let Some(mut err) = child.stderr.take() {
                    let _ = std::io::Read::read_to_string(&mut err, &mut why);
                }
                let log = std::fs::read_to_string(prefix.join("error.log")).unwrap_or_default();
                panic!(
                    "nginx did not start ({status}); is Debian's `nginx` installed \
                     (bash scripts/test-tools.sh)?\n{why}\n{log}"
                );
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                break;
            }
            assert!(
                started.elapsed() < DEADLINE,
                "nginx was not listening on {addr} within {DEADLINE:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
        Self {
            child,
            addr,
            prefix,
        }
    }

    /// The door log of joins (`deploy/nginx/floodgate.conf.in`, `floodgate_door`).
    pub fn join_log(&self) -> PathBuf {
        self.prefix.join("joins.log")
    }

    /// A gateway handle whose requests go through nginx (buyer verbs, sockets and all).
    pub fn front(&self, organizer_key: &str) -> Gateway {
        let (stop, _) = tokio::sync::oneshot::channel();
        let task = tokio::spawn(std::future::pending::<anyhow::Result<()>>());
        Gateway::new(
            format!("http://{}", self.addr),
            organizer_key.to_owned(),
            stop,
            task,
        )
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // SIGTERM lets the master stop its workers; a SIGKILL would leave them listening.
        let _ = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status();
        let _ = self.child.wait();
        ports().remove(&self.addr.port());
        let _ = std::fs::remove_dir_all(&self.prefix);
    }
}
