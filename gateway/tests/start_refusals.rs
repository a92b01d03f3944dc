//! `gateway::run` refuses, before touching any backend, the payment settings that cannot
//! work: PostgreSQL with no provider and no `FLOODGATE_PAYMENT=simulated`, and a provider URL
//! that would carry the secret key in clear. (Every rule is unit-tested in `payment_mode.rs`;
//! this shows the running gateway applies them.)
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use gateway::config::Config;

/// Nothing listens here: reaching the database would fail differently, and slowly.
const UNREACHABLE_PG: &str = "postgres://postgres@127.0.0.1:1/none";

async fn start(config: Config) -> anyhow::Result<()> {
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    tokio::time::timeout(
        Duration::from_secs(10),
        gateway::run(config, listener, std::future::pending()),
    )
    .await
    .expect("a refused configuration stops the gateway at once")
}

#[tokio::test]
async fn postgres_without_a_payment_provider_does_not_start() {
    let config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    let error = start(config).await.expect_err("refused").to_string();
    assert!(error.contains("FLOODGATE_PAYMENT=simulated"), "{error}");
    assert!(error.contains("FLOODGATE_PAYMENT_URL"), "{error}");
}

#[tokio::test]
async fn a_provider_over_plain_http_elsewhere_than_loopback_does_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    config.payment_url = Some("http://api.stripe.com".into());
    let error = start(config).await.expect_err("refused").to_string();
    assert!(error.contains("in clear"), "{error}");
}

#[tokio::test]
async fn a_provider_url_the_client_cannot_speak_does_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    config.payment_url = Some("ftp://pay.example.com".into());
    let error = start(config).await.expect_err("refused").to_string();
    assert!(error.contains("speaks only https://"), "{error}");
}
