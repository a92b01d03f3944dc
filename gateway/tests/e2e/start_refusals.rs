//! `gateway::run` refuses, before touching any backend, the payment settings that cannot
//! work: PostgreSQL with no provider and no `FLOODGATE_PAYMENT=simulated`, and a provider URL
//! that would carry the secret key in clear; signing secrets shorter than 32 bytes; a frame
//! ancestors setting that would write its own policy. (Every rule is unit-tested in
//! `payment_mode.rs`, `secrets.rs` and `security_headers.rs`; this shows the running gateway
//! applies them.)
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;
use std::time::Duration;

use gateway::config::{Config, Secret};

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

#[tokio::test]
async fn a_token_secret_shorter_than_32_bytes_does_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    config.token_secret = Some(Secret::new("tok_0123456789abcdef0123456789a"));
    let error = start(config).await.expect_err("refused").to_string();
    assert!(
        error.contains("FLOODGATE_TOKEN_SECRET is 31 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn a_short_key_among_rotated_token_secrets_does_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    let current = "c".repeat(32);
    config.token_secrets = Some(Secret::new(format!("k2:{current},k1:hunter2")));
    let error = start(config).await.expect_err("refused").to_string();
    assert!(
        error.contains(r#"FLOODGATE_TOKEN_SECRETS key "k1""#),
        "{error}"
    );
    assert!(!error.contains("hunter2"), "{error}");
}

#[tokio::test]
async fn a_webhook_secret_shorter_than_32_bytes_does_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    config.webhook_secret = Some(Secret::new("whsec_test"));
    let error = start(config).await.expect_err("refused").to_string();
    assert!(
        error.contains("FLOODGATE_WEBHOOK_SECRET is 10 bytes"),
        "{error}"
    );
}

#[tokio::test]
async fn frame_ancestors_that_would_add_directives_do_not_start() {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), UNREACHABLE_PG);
    config.frame_ancestors = "'self'; script-src *".into();
    let error = start(config).await.expect_err("refused").to_string();
    assert!(error.contains("FLOODGATE_FRAME_ANCESTORS"), "{error}");
}
