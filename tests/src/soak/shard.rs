//! One worker's share of the buyers (indices ≡ worker mod workers): spawned at their arrival
//! times, never waiting for each other, with a monitor that tells them when the event has
//! finally sold out.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use tokio::task::JoinSet;

use super::client::Net;
use super::config::Config;
use super::context::{Ctx, section, unix_ms};
use super::organizer::Organizer;
use super::plan::{Plan, SeatPicker, seat_ids};
use super::stats::{MeterSample, Partial, Stats};
use super::trust::Trust;
use super::{buyer, progress};

pub async fn run(config: &Config, worker: u32) -> anyhow::Result<Partial> {
    let start_ms = config.start_ms.unwrap_or_else(unix_ms);
    let net = Net::new(
        &config.gateways,
        config.source_addresses(),
        config.http_concurrency,
        config.max_sockets,
        &Trust::load(config.ca_file.as_deref())?,
    )?;
    let stats = Arc::new(Stats::new());
    let picker = SeatPicker::new(
        seat_ids(section(config), config.seat_count),
        config.zipf_s,
        config.seats,
    );
    let ctx = Arc::new(Ctx::new(config, net, stats.clone(), start_ms, picker));

    let mut plans: Vec<Plan> = (u64::from(worker)..config.arrivals)
        .step_by(config.workers as usize)
        .map(|i| Plan::draw(config, i))
        .collect();
    plans.sort_by_key(|p| p.arrive_after);
    let mine = plans.len() as u64;

    let label = if config.workers > 1 {
        format!(" w{worker}")
    } else {
        String::new()
    };
    let shown = progress::spawn(stats.clone(), mine, config.quiet, label);
    // The first worker also samples what held offers back, for "offers against the rate set".
    let sample_rate = (worker == 0).then_some(u64::from(config.max_active));
    let watcher = tokio::spawn(watch_sold_out(
        Organizer::new(config)?,
        ctx.clone(),
        sample_rate,
    ));

    let mut buyers = JoinSet::new();
    for plan in plans {
        // Spawn just before the arrival so half a million sleeping futures do not sit in memory;
        // the arrival itself is still open loop (nobody waits for an earlier buyer).
        let at = ctx.start + plan.arrive_after;
        tokio::time::sleep_until(at.checked_sub(Duration::from_millis(5)).unwrap_or(at)).await;
        let ctx = ctx.clone();
        buyers.spawn(async move { buyer::run(&ctx, plan).await });
        while buyers.try_join_next().is_some() {}
    }
    while buyers.join_next().await.is_some() {}
    shown.abort();
    watcher.abort();
    let mut partial = stats.partial(mine);
    partial.counts.insert(
        "gateway_failovers".into(),
        ctx.net.failovers.load(Ordering::Relaxed),
    );
    partial.cpu_s = own_cpu_s();
    Ok(partial)
}

/// Polls the organizer stats once a second; sets the sold-out flag when no seat is available,
/// held or paying (none can come back). With `max_active`, also records whether only the rate
/// held offers back that second, how many offers the meter had made and the counts behind the
/// chance of a seat.
async fn watch_sold_out(organizer: Organizer, ctx: Arc<Ctx>, max_active: Option<u64>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    // A read slower than a second is followed by one read, not by a burst making up the
    // seconds it missed: the stats are read from a server already behind.
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    loop {
        tick.tick().await;
        // Both at once, so the cap published and the counts are of the same moment and a slow
        // snapshot does not hold back the sold-out check.
        let (counted, snapshot) = tokio::join!(organizer.seats(), organizer.snapshot());
        let at_ms = ctx.now_ms();
        let Ok((seats, stats)) = counted else {
            continue;
        };
        if seats.sold_out() {
            ctx.sold_out.store(true, Ordering::Relaxed);
        }
        if let Some(cap) = max_active {
            let published = snapshot
                .ok()
                .and_then(|s| serde_json::from_value(s["cap"].clone()).ok());
            if published.is_none() {
                ctx.stats.count("meter_samples_without_cap");
            }
            ctx.stats.meter_sample(MeterSample {
                cap: published,
                ..MeterSample::from_stats(at_ms, &stats, cap)
            });
        }
    }
}

fn own_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rfind(')').map(|i| &stat[i + 2..]).unwrap_or("");
    let f: Vec<f64> = after.split(' ').filter_map(|v| v.parse().ok()).collect();
    // utime and stime are fields 14 and 15 (11 and 12 after the state field).
    (f.get(10).copied().unwrap_or(0.0) + f.get(11).copied().unwrap_or(0.0)) / 100.0
}
