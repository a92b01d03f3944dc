//! The soak tool: replays an on-sale against running gateways through the public contract
//! (API.md) and judges the outcome from PostgreSQL and the payment simulator's ledger.
//!
//! # Layout
//! - `config`: every knob, as clap flags
//! - `plan`: what each buyer does, drawn from the seed and its index; Zipf seat picking
//! - `client`: HTTP with connection reuse over several source addresses; WebSockets
//! - `trust`: the roots `https://` gateways are checked against (`--ca-file`)
//! - `context`: what a worker's buyers share
//! - `buyer`, `waiting`, `purchase`: one buyer's journey (join → wait → claim → hold → pay)
//! - `seat_map`: the seat map read conditionally, as a browser's cache does
//! - `order`: a buyer's queue place from its token (for "offers in queue order")
//! - `organizer`: event creation, admission settings and stats through the organizer API
//! - `stats`, `progress`: what the run records and shows while running
//! - `shard`: one worker's share of the buyers; `workers`: re-executing as worker processes
//! - `settle`, `verdict`: waiting for payments to settle, then judging
//! - `baseline`: joins/s of a bare axum route (and of the gateway) with the same client
//! - `fifo`: pairs of buyers queued against their arrival order; `door`: arrivals from the
//!   proxy's log of joins
//! - `figures`: the storm's figures against their targets
//! - `cpu`, `report`: the CPU split and the final table / JSON

pub mod baseline;
pub mod buyer;
pub mod client;
pub mod config;
pub mod context;
pub mod cpu;
pub mod door;
pub mod fifo;
pub mod figures;
pub mod order;
pub mod organizer;
pub mod page;
pub mod plan;
pub mod progress;
pub mod purchase;
pub mod report;
pub mod seat_map;
pub mod settle;
pub mod shard;
pub mod stats;
pub mod trust;
pub mod verdict;
pub mod waiting;
pub mod workers;

use std::time::Instant;

use reservation::payments::simulator::Ledger;
use reservation::{EventId, Store, StoreOptions};

use crate::sim_control::SimControl;

pub use config::Config;
pub use report::Report;

/// Connects to the gateways' database with a small pool (the server is shared).
pub async fn store(url: &str) -> anyhow::Result<Store> {
    Ok(Store::connect(
        url,
        StoreOptions {
            max_connections: 4,
            ..StoreOptions::default()
        },
    )
    .await?)
}

/// When the event's last order was made, in ms since the run's start (`None`: nothing sold).
async fn last_sale_ms(
    store: &Store,
    event: &EventId,
    start_ms: u64,
) -> anyhow::Result<Option<u64>> {
    use sqlx::Row;
    let last: Option<i64> =
        sqlx::query("select fg_ms(max(created_at)) as t from orders where event_id = $1")
            .bind(event.as_str())
            .fetch_one(store.pool())
            .await?
            .try_get("t")?;
    Ok(last.map(|t| u64::try_from(t).unwrap_or(0).saturating_sub(start_ms)))
}

/// Buyers who mean to buy: they stay to the end and pay with a card that can succeed.
pub fn demand(config: &Config) -> u64 {
    (0..config.arrivals)
        .map(|i| plan::Plan::draw(config, i))
        .filter(|p| p.wants_to_buy() && p.card != "pm_card_error")
        .count() as u64
}

/// The whole run: create the event, drive the buyers (in this process or in workers), wait for
/// payments to settle, judge, measure the baseline, report.
pub async fn run(mut config: Config) -> anyhow::Result<Report> {
    config.validate()?;
    let began = Instant::now();
    let store = store(&config.database_url).await?;
    let sim = SimControl::new(&config.sim_url);
    let organizer = organizer::Organizer::new(&config)?;
    let cpu_before = cpu::sample(&config.watch_pids);
    organizer.create_event(&config).await?;
    let start_ms = context::unix_ms();
    config.start_ms = Some(start_ms);

    let partial = if config.workers > 1 {
        workers::run(&config).await?
    } else {
        shard::run(&config, 0).await?
    };

    let unfinished = partial.get("outcome_unfinished");
    let event: EventId = config
        .event
        .parse()
        .map_err(|e| anyhow::anyhow!("event id: {e}"))?;
    settle::wait(&store, &event, &config).await?;
    let final_stats = organizer.stats().await.unwrap_or_default();
    let ledger: Ledger = sim.ledger().await?;
    // The service can keep only the order its door saw: the verdict judges buyers by when their
    // first join reached the proxy (its log), or with no proxy by when it left the soak. By
    // the planned arrival, the soak's own backlog of joins not yet sent (its pool, its share
    // of two cores) would count as the service's.
    let fifo_sent = fifo::count(&partial.sent_arrivals, fifo::GAP_MS);
    let fifo_planned = fifo::count(&partial.arrivals, fifo::GAP_MS);
    let door = config
        .door_log
        .as_deref()
        .map(|path| door::read(path, &partial.join_keys))
        .transpose()?;
    let fifo = match &door {
        Some(door) => fifo::Judged {
            inversions: fifo::count(&door.arrivals, fifo::GAP_MS),
            basis: "reached the door",
            unlogged: Some(door.missing),
        },
        None => fifo::Judged {
            inversions: fifo_sent,
            basis: "left the soak",
            unlogged: None,
        },
    };
    let last_sale_ms = last_sale_ms(&store, &event, start_ms).await?;
    let facts = verdict::Facts {
        fifo,
        partial: &partial,
        demand: demand(&config),
        seat_count: u64::from(config.seat_count),
        max_active: u64::from(config.max_active),
        unfinished,
    };
    let verdict = verdict::judge(&store, &event, &ledger, &facts).await?;
    let wall_s = began.elapsed().as_secs_f64();
    let cpu = cpu::split(&cpu_before, &cpu::sample(&config.watch_pids));

    let baseline = if config.baseline_s > 0 {
        Some(baseline::measure(&config).await?)
    } else {
        None
    };
    let storm = figures::build(&figures::Inputs {
        partial: &partial,
        arrivals: config.arrivals,
        rate_per_min: u64::from(config.rate_per_min),
        fifo,
        fifo_sent,
        door_to_token_ms: door.as_ref().and_then(|d| {
            Some((
                d.door_to_token_at(0.5)?,
                d.door_to_token_at(0.99)?,
                d.door_to_token_at(1.0)?,
            ))
        }),
        fifo_planned,
        last_sale_ms,
        cpu: &cpu,
        window_s: config.window_s,
        limits: baseline.as_ref().map(|b| figures::Limits {
            joins_per_s: b.gateway_per_s,
            snapshot_reads_per_s: b.snapshot_reads_per_s,
        }),
    });
    let mut report = report::build(
        &partial,
        report::Inputs {
            event: config.event.clone(),
            scenario: serde_json::to_value(&config)?,
            wall_s,
            arrivals: config.arrivals,
            baseline_joins_per_s: baseline.as_ref().map(|b| b.bare_per_s),
            cpu,
            final_stats,
            storm,
            verdict,
        },
    );
    if let Some(b) = baseline {
        report.counts.insert(
            "baseline_gateway_joins_per_s".into(),
            b.gateway_per_s.round() as u64,
        );
        report.counts.insert(
            "baseline_snapshot_reads_per_s".into(),
            b.snapshot_reads_per_s.round() as u64,
        );
    }
    if let Some(scenario) = report.scenario.as_object_mut() {
        scenario.remove("organizer_key");
        scenario.remove("database_url");
    }
    if let Some(path) = &config.range_samples {
        let mut csv = csv::Writer::from_path(path)?;
        for range in &partial.first_ranges {
            csv.serialize(range)?;
        }
        csv.flush()?;
    }
    if let Some(path) = &config.json {
        std::fs::write(path, serde_json::to_vec_pretty(&report)?)?;
    }
    Ok(report)
}
