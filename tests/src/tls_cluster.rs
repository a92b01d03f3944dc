//! A throwaway three-master Redis Cluster that speaks only TLS, client and cluster bus alike,
//! with the certificates of a [`Pki`]: what a managed `rediss://` cluster looks like to the
//! gateway. Stopped when dropped.

use std::net::TcpListener;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use crate::tls::Pki;
use crate::tls_servers::tls_redis_server;

/// How long the nodes may take to listen and agree on the slots.
const START_DEADLINE: Duration = Duration::from_secs(30);

pub struct TlsRedisCluster {
    /// `rediss://127.0.0.1:P1,rediss://127.0.0.1:P2,rediss://127.0.0.1:P3`: the gateway's
    /// `REDIS_URL` form for a cluster.
    pub url: String,
    nodes: Vec<Child>,
    _dir: tempfile::TempDir,
}

/// A port whose cluster bus port (port + 10000) is free too; ephemeral ports can be too high
/// for that, so the search stays below them.
fn cluster_port() -> u16 {
    (20_000..30_000)
        .step_by(7)
        .find(|&port| {
            TcpListener::bind(("127.0.0.1", port)).is_ok()
                && TcpListener::bind(("127.0.0.1", port + 10_000)).is_ok()
        })
        .expect("a free loopback port below 30000 with its bus port free")
}

impl TlsRedisCluster {
    pub fn start(pki: &Pki) -> TlsRedisCluster {
        let dir = tempfile::Builder::new()
            .prefix("floodgate-redis-tls-cluster-")
            .tempdir()
            .expect("temporary folder for the Redis Cluster");
        let mut ports = Vec::new();
        let mut nodes = Vec::new();
        for n in 0..3 {
            // Taken one at a time: a port is only known free once its node listens on it.
            let port = cluster_port();
            let node_dir = dir.path().join(format!("node{n}"));
            std::fs::create_dir_all(&node_dir).expect("node folder");
            let child = tls_redis_server(pki, port, &node_dir)
                .args(["--tls-cluster", "yes", "--cluster-enabled", "yes"])
                .spawn()
                .unwrap_or_else(|e| {
                    panic!("the TLS cluster test starts its own redis-server: install it (apt-get install -y redis-server): {e}")
                });
            nodes.push(child);
            let started = Instant::now();
            while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
                assert!(
                    started.elapsed() < START_DEADLINE,
                    "redis-server with TLS did not listen on {port}"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
            ports.push(port);
        }
        let cluster = TlsRedisCluster {
            url: ports
                .iter()
                .map(|p| format!("rediss://127.0.0.1:{p}"))
                .collect::<Vec<_>>()
                .join(","),
            nodes,
            _dir: dir,
        };
        let cli = |args: &[String]| {
            Command::new("redis-cli")
                .arg("--tls")
                .arg("--cacert")
                .arg(&pki.ca_file)
                .args(args)
                .output()
                .unwrap_or_else(|e| {
                    panic!("redis-cli is needed to form the cluster (apt-get install -y redis-tools): {e}")
                })
        };
        let mut create = vec!["--cluster".to_owned(), "create".to_owned()];
        create.extend(ports.iter().map(|p| format!("127.0.0.1:{p}")));
        create.push("--cluster-yes".to_owned());
        let formed = cli(&create);
        assert!(
            formed.status.success(),
            "redis-cli --cluster create over TLS failed: {}{}",
            String::from_utf8_lossy(&formed.stdout),
            String::from_utf8_lossy(&formed.stderr)
        );
        let started = Instant::now();
        for port in &ports {
            loop {
                let info = cli(&[
                    "-p".to_owned(),
                    port.to_string(),
                    "cluster".to_owned(),
                    "info".to_owned(),
                ]);
                if String::from_utf8_lossy(&info.stdout).contains("cluster_state:ok") {
                    break;
                }
                assert!(
                    started.elapsed() < START_DEADLINE,
                    "the TLS cluster never reached cluster_state:ok on {port}"
                );
                std::thread::sleep(Duration::from_millis(100));
            }
        }
        cluster
    }
}

impl Drop for TlsRedisCluster {
    fn drop(&mut self) {
        for node in &mut self.nodes {
            let _ = node.kill();
            let _ = node.wait();
        }
    }
}
