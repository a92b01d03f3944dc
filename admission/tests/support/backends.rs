//! The queue backends a story runs against, and where the suite finds each one: memory in the
//! test's own process, and the shared servers `bash scripts/test.sh` starts (or finds) and
//! names in the environment. A backend that is not there fails its tests; it never skips them.

use std::time::Duration;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    /// One Redis node: `REDIS_URL`, or the local server on its standard port.
    Redis,
    /// A three-master Redis Cluster: `REDIS_CLUSTER_URL`, its nodes comma-separated.
    RedisCluster,
    /// One Valkey node: `VALKEY_URL`.
    Valkey,
    /// A three-master Valkey cluster: `VALKEY_CLUSTER_URL`, its nodes comma-separated.
    ValkeyCluster,
}

impl Kind {
    /// The variable that names this backend's server(s); `None` for memory.
    pub fn env_var(self) -> Option<&'static str> {
        match self {
            Kind::Memory => None,
            Kind::Redis => Some("REDIS_URL"),
            Kind::RedisCluster => Some("REDIS_CLUSTER_URL"),
            Kind::Valkey => Some("VALKEY_URL"),
            Kind::ValkeyCluster => Some("VALKEY_CLUSTER_URL"),
        }
    }

    pub fn is_memory(self) -> bool {
        self == Kind::Memory
    }

    pub fn is_cluster(self) -> bool {
        matches!(self, Kind::RedisCluster | Kind::ValkeyCluster)
    }

    /// The queue URL `Admission::connect` takes for this backend. Panics, naming the command
    /// that starts every backend, when the environment does not name it.
    pub fn url(self) -> String {
        match self {
            Kind::Memory => "memory".to_owned(),
            Kind::Redis => {
                std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
            }
            other => {
                let var = other.env_var().unwrap_or_default();
                match std::env::var(var) {
                    Ok(url) if !url.trim().is_empty() => url,
                    _ => panic!(
                        "{var} is not set, so the {other:?} stories cannot run: run them through \
                         `bash scripts/test.sh` (or `bash scripts/with-services.sh cargo test …`), \
                         which starts that server, or set {var} to one that answers"
                    ),
                }
            }
        }
    }
}

/// Panics loudly when the backend's server(s) do not answer: a skipped backend is a defect.
pub async fn require(kind: Kind, url: &str) {
    if kind.is_memory() {
        return;
    }
    let var = kind.env_var().unwrap_or_default();
    let pong: String = tokio::time::timeout(Duration::from_secs(5), async {
        if kind.is_cluster() {
            let nodes: Vec<&str> = url.split(',').map(str::trim).collect();
            let client = redis::cluster::ClusterClient::new(nodes)?;
            let mut conn = client.get_async_connection().await?;
            redis::cmd("PING").query_async(&mut conn).await
        } else {
            let client = redis::Client::open(url)?;
            let mut conn = client.get_multiplexed_async_connection().await?;
            redis::cmd("PING").query_async(&mut conn).await
        }
    })
    .await
    .unwrap_or_else(|_| {
        panic!("{var}={url} did not answer within 5 s (bash scripts/test.sh starts it)")
    })
    .unwrap_or_else(|e| panic!("{var}={url} did not answer: {e} (bash scripts/test.sh starts it)"));
    assert_eq!(pong, "PONG");
}
