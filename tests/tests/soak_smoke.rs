//! The soak tool as a library, on a tiny on-sale against an in-process gateway (PostgreSQL,
//! Redis and the HTTP simulator with faults on): the verdict is clean, and the same verdict
//! machinery reports a breach once a sale row is deliberately removed.
#![allow(clippy::unwrap_used)]

use std::net::SocketAddr;

use clap::Parser;
use floodgate_tests::sim_control::SimControl;
use floodgate_tests::simulator::{SimServerConfig, spawn};
use floodgate_tests::soak::{self, Config, stats::Partial, verdict};
use gateway::config::Secret;
use reservation::payments::simulator::{Knobs, SimulatorConfig};
use sqlx::Connection;

fn env(name: &str) -> String {
    std::env::var(name)
        .unwrap_or_else(|_| panic!("{name} must be set (PostgreSQL and Redis are required)"))
}

/// A fresh database on the server of `DATABASE_URL`.
async fn fresh_database() -> String {
    let url = env("DATABASE_URL");
    let mut admin = sqlx::postgres::PgConnection::connect(&url)
        .await
        .unwrap_or_else(|e| panic!("PostgreSQL does not answer at DATABASE_URL={url}: {e}"));
    let name = format!("t_soak_{}", uuid::Uuid::now_v7().simple());
    sqlx::raw_sql(sqlx::AssertSqlSafe(format!("create database {name}")))
        .execute(&mut admin)
        .await
        .unwrap();
    let server = url.rsplit_once('/').unwrap().0;
    format!("{server}/{name}")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tiny_on_sale_is_clean_and_a_removed_sale_is_caught() {
    let redis = env("REDIS_URL");
    let database_url = fresh_database().await;
    // Migrated before the gateway starts, as `run.sh` leaves it to the gateway.
    let store = soak::store(&database_url).await.unwrap();

    let listener = gateway::listener::bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
    let addr = listener.local_addr().unwrap();
    let secret = "whsec_soak_smoke_0123456789abcdef0123".to_owned();
    let sim = spawn(SimServerConfig {
        simulator: SimulatorConfig {
            seed: 11,
            webhook_secret: secret.clone(),
            knobs: Knobs {
                webhook_url: Some(format!("http://{addr}/api/payments/webhook")),
                latency_max_ms: 20,
                slow_ms: 800,
                decline_rate: 0.05,
                lost_rate: 0.05,
                error_rate: 0.05,
                webhook_duplicate_rate: 0.2,
                webhook_out_of_order: true,
                ..Knobs::default()
            },
        },
        ..SimServerConfig::default()
    })
    .await
    .unwrap();

    let mut config = gateway::config::Config::embedded(addr, database_url.clone());
    config.redis_url = Some(redis);
    config.payment_url = Some(sim.base_url.clone());
    config.webhook_secret = Some(Secret::new(secret));
    config.organizer_key = Some(Secret::new("org_soak_smoke"));
    config.trusted_proxies = vec!["127.0.0.0/8".parse().unwrap()];
    // Simulated buyers share a few source addresses.
    config.sockets_per_address = 100_000;
    config.demo = Some(false);
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let gateway = tokio::spawn(gateway::run(config, listener, async move {
        let _ = stopped.await;
    }));

    let base = format!("http://{addr}");
    let soak_config = Config::parse_from([
        "soak",
        "--gateway",
        &base,
        "--organizer-key",
        "org_soak_smoke",
        "--database-url",
        &database_url,
        "--sim-url",
        &sim.base_url,
        "--arrivals",
        "300",
        "--seat-count",
        "30",
        "--window-s",
        "8",
        "--opens-in-s",
        "3",
        "--prequeue-share",
        "0.3",
        "--ws-share",
        "0.5",
        "--abandon-offer-share",
        "0.05",
        "--abandon-claimed-share",
        "0.05",
        "--abandon-hold-share",
        "0.05",
        "--two-tab-share",
        "0.1",
        "--declined-share",
        "0.1",
        "--slow-share",
        "0.05",
        "--lost-share",
        "0.05",
        "--error-share",
        "0.05",
        "--rate-per-min",
        "1200",
        "--max-active",
        "60",
        "--offer-s",
        "5",
        "--hold-ttl-s",
        "4",
        "--max-hold-s",
        "10",
        "--resolve-s",
        "2",
        "--abandon-s",
        "6",
        "--source-addrs",
        "2",
        "--max-duration-s",
        "240",
        "--quiet",
    ]);
    let event = soak_config.event.clone();
    let seat_count = u64::from(soak_config.seat_count);
    let max_active = u64::from(soak_config.max_active);
    let demand = soak::demand(&soak_config);
    let report = soak::run(soak_config).await.unwrap();
    println!("{}", report.table());
    assert!(report.verdict.clean, "{:#?}", report.verdict);
    assert_eq!(report.arrivals, 300);

    // Now break the rows the way a double-booking bug would leave them: a sale row gone.
    sqlx::query(
        "delete from sales where event_id = $1 and seat_id = \
         (select min(seat_id) from sales where event_id = $1)",
    )
    .bind(&event)
    .execute(store.pool())
    .await
    .unwrap();
    let ledger = SimControl::new(&sim.base_url).ledger().await.unwrap();
    // And the run as a load-refusing, order-breaking queue would have left it: an admitted
    // buyer answered 503, and 5 of 100 pairs queued against their arrival order.
    let mut partial = Partial::default();
    partial.counts.insert("admitted_met_503".into(), 1);
    // FIFO judged from the door log: `inverted` of 100 pairs, `unlogged` buyers missing from it.
    let door = |inverted, unlogged| soak::fifo::Judged {
        inversions: soak::fifo::Inversions {
            pairs: 100,
            inverted,
        },
        basis: "reached the door",
        unlogged: Some(unlogged),
    };
    let facts = verdict::Facts {
        fifo: door(5, 0),
        partial: &partial,
        demand,
        seat_count,
        max_active,
        unfinished: 0,
    };
    let judged = verdict::judge(&store, &event.parse().unwrap(), &ledger, &facts)
        .await
        .unwrap();
    assert!(!judged.clean, "a removed sale went unnoticed");
    let failed: Vec<&str> = judged
        .checks
        .iter()
        .filter(|c| !c.ok)
        .map(|c| c.name.as_str())
        .collect();
    assert!(failed.iter().any(|n| n.contains("inv 2")), "{failed:?}");
    assert!(
        failed.iter().any(|n| n.contains("min(demand")),
        "{failed:?}"
    );
    assert!(
        failed.contains(&"no admitted buyer refused for load"),
        "{failed:?}"
    );
    assert!(failed.contains(&"FIFO order kept"), "{failed:?}");

    // In order, but judged from a door log that lacks some who joined: not judged clean.
    let unlogged = verdict::Facts {
        fifo: door(0, 3),
        ..facts
    };
    let judged = verdict::judge(&store, &event.parse().unwrap(), &ledger, &unlogged)
        .await
        .unwrap();
    let fifo = judged
        .checks
        .iter()
        .find(|c| c.name == "FIFO order kept")
        .unwrap();
    assert!(!fifo.ok, "{fifo:?}");

    let _ = stop.send(());
    let _ = gateway.await;
}
