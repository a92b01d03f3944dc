//! The conformance harness: one story, run against the memory backend (paused tokio time) and
//! a real Redis at REDIS_URL (a manual clock handed to the scripts).
#![allow(dead_code)]

use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use admission::testing::{MemoryDb, control};
use admission::{Admission, AdmissionConfig, Clock, Control, Joined, KeyRing, TickReport};
use time::OffsetDateTime;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Memory,
    Redis,
}

pub fn redis_url() -> String {
    std::env::var("REDIS_URL").unwrap_or_else(|_| "redis://127.0.0.1:6379".to_owned())
}

/// Panics loudly when Redis does not answer: a skipped backend is a defect.
pub async fn require_redis(url: &str) {
    let client = redis::Client::open(url).unwrap_or_else(|e| panic!("REDIS_URL={url}: {e}"));
    let mut conn = tokio::time::timeout(
        Duration::from_secs(5),
        client.get_multiplexed_async_connection(),
    )
    .await
    .unwrap_or_else(|_| panic!("REDIS_URL={url} did not answer within 5 s"))
    .unwrap_or_else(|e| panic!("REDIS_URL={url} did not answer: {e}"));
    let pong: String = redis::cmd("PING")
        .query_async(&mut conn)
        .await
        .unwrap_or_else(|e| panic!("REDIS_URL={url} did not answer PING: {e}"));
    assert_eq!(pong, "PONG");
}

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
    match kind {
        Kind::Memory => Clock::system(),
        Kind::Redis => Clock::manual(OffsetDateTime::now_utc().unix_timestamp() * 1000),
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
        let url = match kind {
            Kind::Memory => "memory".to_owned(),
            Kind::Redis => redis_url(),
        };
        Self::with(kind, name, clock, url, tune).await
    }

    pub async fn with(
        kind: Kind,
        name: &str,
        clock: Clock,
        url: String,
        tune: impl FnOnce(&mut Control),
    ) -> Harness {
        if kind == Kind::Redis {
            require_redis(&url).await;
        }
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
        match self.kind {
            Kind::Memory => tokio::time::advance(by).await,
            Kind::Redis => self.clock.advance(by),
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

/// Runs one story against both backends.
#[macro_export]
macro_rules! both {
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
        }
    };
}
