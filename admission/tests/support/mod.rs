//! The conformance harness: one story, run against the memory backend (paused tokio time) and
//! each shared backend the suite starts (Redis, Redis Cluster, Valkey, Valkey cluster), with a
//! manual clock handed to the scripts.
#![allow(dead_code)]

mod backends;

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use admission::testing::{MemoryDb, control};
use admission::{Admission, AdmissionConfig, Clock, Control, Joined, KeyRing, TickReport};
use time::OffsetDateTime;

pub use backends::{Kind, require};

pub fn keys() -> KeyRing {
    KeyRing::parse("k2:new-secret-for-tests,k1:old-secret-for-tests").expect("valid ring")
}

pub struct Harness {
    pub kind: Kind,
    pub adm: Admission,
    pub db: Arc<MemoryDb>,
    pub clock: Clock,
    pub event: String,
    pub url: String,
}

pub fn unique_event(name: &str) -> String {
    format!("{name}-{}", uuid::Uuid::new_v4().simple())
}

pub fn clock_for(kind: Kind) -> Clock {
    if kind.is_memory() {
        Clock::system()
    } else {
        Clock::manual(OffsetDateTime::now_utc().unix_timestamp() * 1000)
    }
}

pub fn config(clock: &Clock) -> AdmissionConfig {
    let mut cfg = AdmissionConfig::new(keys());
    cfg.clock = clock.clone();
    cfg.join_limit_per_min = 0;
    cfg
}

impl Harness {
    /// A fresh event that opened a second ago, with the schema's default controls changed by
    /// `tune`.
    pub async fn new(kind: Kind, name: &str, tune: impl FnOnce(&mut Control)) -> Harness {
        let clock = clock_for(kind);
        Self::with(kind, name, clock, kind.url(), tune).await
    }

    pub async fn with(
        kind: Kind,
        name: &str,
        clock: Clock,
        url: String,
        tune: impl FnOnce(&mut Control),
    ) -> Harness {
        require(kind, &url).await;
        let db = Arc::new(MemoryDb::new(clock.clone()));
        let event = unique_event(name);
        let mut c = control(at(clock.now_ms() - 1000), "seed-of-the-test-event");
        tune(&mut c);
        db.set_control(&event, c);
        let adm = Admission::connect(&url, db.clone(), config(&clock))
            .await
            .expect("admission connects");
        Harness {
            kind,
            adm,
            db,
            clock,
            event,
            url,
        }
    }

    /// A second instance over the same queue backend, database and clock.
    pub async fn instance(&self) -> Admission {
        Admission::connect(&self.url, self.db.clone(), config(&self.clock))
            .await
            .expect("admission connects")
    }

    pub async fn advance(&self, by: Duration) {
        if self.kind.is_memory() {
            tokio::time::advance(by).await;
        } else {
            self.clock.advance(by);
        }
    }

    pub async fn join(&self) -> Joined {
        self.adm
            .join(&self.event, client(), None)
            .await
            .expect("join")
    }

    /// A join the queue must refuse (paused, sold out, closed): the error.
    pub async fn refused_join(&self) -> admission::AdmissionError {
        self.adm
            .join(&self.event, client(), None)
            .await
            .expect_err("the join must be refused")
    }

    pub async fn join_n(&self, n: usize) -> Vec<Joined> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.join().await);
        }
        out
    }

    pub async fn tick(&self) -> TickReport {
        self.adm.tick(&self.event).await.expect("tick")
    }

    /// Advances `step` and ticks, `n` times; returns every offer made, in order.
    pub async fn run(&self, n: usize, step: Duration) -> Vec<u64> {
        let mut offered = Vec::new();
        for _ in 0..n {
            self.advance(step).await;
            offered.extend(self.tick().await.offered);
        }
        offered
    }

    pub fn update(&self, change: impl FnOnce(&mut Control)) {
        self.db.update_control(&self.event, change);
    }
}

pub fn client() -> IpAddr {
    [127, 0, 0, 1].into()
}

pub fn at(ms: i64) -> OffsetDateTime {
    OffsetDateTime::from_unix_timestamp_nanos(ms as i128 * 1_000_000).expect("valid time")
}

/// Runs one story against every backend: memory, Redis, Redis Cluster, Valkey and a Valkey
/// cluster. The shared ones are named by the environment `bash scripts/test.sh` sets up; a
/// missing one fails its test.
#[macro_export]
macro_rules! every_backend {
    ($story:ident) => {
        mod $story {
            use super::support::Kind;
            #[tokio::test(start_paused = true)]
            async fn memory() {
                super::$story(Kind::Memory).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis() {
                super::$story(Kind::Redis).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn redis_cluster() {
                super::$story(Kind::RedisCluster).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey() {
                super::$story(Kind::Valkey).await;
            }
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn valkey_cluster() {
                super::$story(Kind::ValkeyCluster).await;
            }
        }
    };
}
