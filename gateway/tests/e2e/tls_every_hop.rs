//! Every hop over real TLS, with a CA made at test time: the buyer's (the gateway serving
//! HTTPS), PostgreSQL (`ssl=on`, `hostssl` only, `sslmode=verify-full`), Redis (`rediss://`,
//! its plain port off) and the payment provider (the simulator behind HTTPS). A sale goes
//! from join to confirmed order through all of them; a certificate from the wrong CA is
//! refused on each.
#![allow(clippy::unwrap_used)]

use crate::support;

use std::net::SocketAddr;
use std::time::Duration;

use floodgate_tests::tls::{HttpsServer, Pki, serve_https};
use floodgate_tests::tls_cluster::TlsRedisCluster;
use floodgate_tests::tls_servers::{TlsPostgres, TlsRedis};
use gateway::config::{Config, Secret};
use reservation::payments::simulator::{Knobs, Simulator, SimulatorConfig};
use reservation::payments::{Outcome, Provider, StripeClient};
use reservation::{Store, StoreOptions};
use serde_json::json;
use support::buyer::{Held, seat};
use support::http::Gateway;

const PAYMENT_KEY: &str = "sk_test_tls";

/// The payment simulator, reachable only over HTTPS; no webhooks (answers settle the saga).
async fn https_simulator(pki: &Pki) -> (Simulator, HttpsServer) {
    let simulator = Simulator::new(SimulatorConfig {
        seed: 17,
        webhook_secret: "whsec_tls_0123456789abcdef0123456789".into(),
        knobs: Knobs {
            webhook_url: None,
            ..Knobs::default()
        },
    });
    let router = floodgate_tests::simulator::router(simulator.clone(), Some(PAYMENT_KEY.into()));
    (simulator, serve_https(router, pki).await)
}

/// The real gateway on `config`, on an HTTPS port, with a client trusting `pki`'s CA.
async fn start_gateway(mut config: Config, pki: &Pki) -> Gateway {
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    config.listen = addr;
    config.tls_cert_file = Some(pki.cert_file.clone());
    config.tls_key_file = Some(pki.key_file.clone());
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(gateway::run(config, listener, async move {
        let _ = stopped.await;
    }));
    let mut gateway = Gateway::new(format!("https://{addr}"), "org_tls".into(), stop, task);
    gateway.http = Pki::client(&pki.ca_file);
    gateway.wait_ready().await;
    gateway
}

fn config(database_url: String) -> Config {
    let mut config = Config::embedded(SocketAddr::from(([127, 0, 0, 1], 0)), database_url);
    config.organizer_key = Some(Secret::new("org_tls"));
    config.token_secret = Some(Secret::new("tok_tls_0123456789abcdef0123456789abcdef"));
    config.webhook_secret = Some(Secret::new("whsec_tls_0123456789abcdef0123456789"));
    config.payment_key = Some(Secret::new(PAYMENT_KEY));
    config.join_limit_per_min = 0;
    config.demo = Some(false);
    config
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_completes_with_every_hop_encrypted() {
    let pki = Pki::new();
    let postgres = TlsPostgres::start(&pki);
    let redis = TlsRedis::start(&pki);
    let (simulator, provider) = https_simulator(&pki).await;

    // The URL asks for a verified certificate but names no CA: FLOODGATE_TLS_CA_FILE supplies
    // it, as it does for Redis and the provider.
    let mut config = config(format!("{}?sslmode=verify-full", postgres.base_url));
    config.redis_url = Some(redis.url.clone());
    config.payment_url = Some(provider.base_url.clone());
    config.tls_ca_file = Some(pki.ca_file.clone());
    let app = start_gateway(config, &pki).await;
    assert!(app.base_url.starts_with("https://"));
    let ready = app.get("/readyz").await.expect(200);
    assert!(ready.text.contains("payments: provider"), "{ready:?}");

    let event = app
        .create_event(4, json!({"rate_per_min": 600, "max_active": 10}))
        .await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1), seat(2)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "tls-pay-1")
        .await
        .expect(202);
    let order = app.wait_confirmed(&buyer, &held.hold_id).await;
    let receipt = app
        .read_order_with_receipt(&order, &held.receipt_key)
        .await
        .expect(200);
    assert_eq!(receipt.body["order_id"], json!(order), "{receipt:?}");

    // The provider was reached over HTTPS (it listens on nothing else) and took the money once.
    let ledger = simulator.ledger();
    assert_eq!(ledger.attempts.len(), 1, "{ledger:?}");
    assert!(ledger.charged_twice().is_empty(), "{ledger:?}");

    // PostgreSQL: every client connection to the gateway's database is encrypted, and a
    // client without TLS is turned away.
    let check = Store::connect(
        &postgres.verify_full_url(&pki.ca_file),
        StoreOptions {
            max_connections: 1,
            ..StoreOptions::default()
        },
    )
    .await
    .expect("connect with verify-full and the right CA");
    let (encrypted, clear) =
        reservation::testing::postgres_connection_encryption(&check, "postgres").await;
    assert!(
        encrypted >= 2,
        "the gateway's pool and ours, encrypted: {encrypted}"
    );
    assert_eq!(clear, 0, "no connection in clear");
    let plain = format!("{}?sslmode=disable", postgres.base_url);
    assert!(
        Store::connect(&plain, StoreOptions::default())
            .await
            .is_err(),
        "PostgreSQL accepts only TLS"
    );

    // The buyer's hop: a client that does not trust the gateway's CA cannot talk to it.
    let stranger = Pki::client(&pki.wrong_ca_file);
    let refused = stranger.get(app.url("/readyz")).send().await;
    assert!(
        refused.is_err(),
        "a client of another CA is refused: {refused:?}"
    );

    app.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_payment_client_refuses_a_provider_certificate_from_the_wrong_ca() {
    let pki = Pki::new();
    let (_simulator, provider) = https_simulator(&pki).await;
    let client = |ca: Option<Vec<u8>>| {
        Provider::Http(
            StripeClient::with_roots(
                &provider.base_url,
                PAYMENT_KEY,
                Duration::from_secs(5),
                ca.as_deref(),
            )
            .unwrap(),
        )
    };
    // Trusted: the provider answers (this payment does not exist).
    assert_eq!(
        client(Some(pki.ca_pem())).retrieve("pi_missing").await,
        Outcome::NotFound
    );
    // The platform's roots alone, or another CA: the handshake fails and nothing is sent.
    for ca in [None, Some(pki.wrong_ca_pem())] {
        match client(ca).retrieve("pi_missing").await {
            Outcome::Ambiguous { why } => assert!(why.contains("transport"), "{why}"),
            other => panic!("a provider with an untrusted certificate answered: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_verify_full_refuses_a_server_certificate_from_the_wrong_ca() {
    let pki = Pki::new();
    let postgres = TlsPostgres::start(&pki);
    let options = || StoreOptions {
        max_connections: 1,
        ..StoreOptions::default()
    };
    Store::connect(&postgres.verify_full_url(&pki.ca_file), options())
        .await
        .expect("verify-full with the right CA connects");
    let wrong = Store::connect(&postgres.verify_full_url(&pki.wrong_ca_file), options()).await;
    let Err(error) = wrong else {
        panic!("verify-full with the wrong CA is refused");
    };
    let error = format!("{error:?}");
    assert!(error.to_lowercase().contains("certificate"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_gateway_refuses_a_redis_certificate_from_the_wrong_ca() {
    let pki = Pki::new();
    let postgres = TlsPostgres::start(&pki);
    let redis = TlsRedis::start(&pki);
    // PostgreSQL names its own (right) CA; the extra CA, wrong for Redis, reaches only Redis.
    let mut config = config(postgres.verify_full_url(&pki.ca_file));
    config.redis_url = Some(redis.url.clone());
    config.payment = Some(gateway::payment_mode::PaymentChoice::Simulated);
    config.tls_ca_file = Some(pki.wrong_ca_file.clone());
    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let started = tokio::time::timeout(
        Duration::from_secs(30),
        gateway::run(config, listener, std::future::pending()),
    )
    .await
    .expect("the gateway gives up on Redis rather than waiting");
    let error = format!(
        "{:#}",
        started.expect_err("Redis with an untrusted certificate")
    );
    assert!(error.to_lowercase().contains("certificate"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sale_completes_on_a_redis_cluster_that_speaks_only_tls() {
    let pki = Pki::new();
    let postgres = TlsPostgres::start(&pki);
    let cluster = TlsRedisCluster::start(&pki);
    let (_simulator, provider) = https_simulator(&pki).await;

    let mut config = config(format!("{}?sslmode=verify-full", postgres.base_url));
    config.redis_url = Some(cluster.url.clone());
    config.payment_url = Some(provider.base_url.clone());
    config.tls_ca_file = Some(pki.ca_file.clone());
    let app = start_gateway(config, &pki).await;

    let event = app
        .create_event(2, json!({"rate_per_min": 600, "max_active": 10}))
        .await;
    let buyer = app.admit(&event).await;
    let held = Held::from(&app.hold(&buyer, &[seat(1)]).await.expect(201));
    app.checkout(&buyer, &held.hold_id, "pm_card_visa", "tls-cluster-pay-1")
        .await
        .expect(202);
    app.wait_confirmed(&buyer, &held.hold_id).await;
}
