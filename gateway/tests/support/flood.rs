//! An anonymous crowd hammering cheap routes (joins, event reads, fairness, made-up receipt
//! reads of the reservations group) until told to stop, counting what it was answered.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::http::Answer;

/// What the flood was answered, by status (0: no answer at all).
#[derive(Default)]
pub struct Flood {
    pub statuses: Mutex<BTreeMap<u16, u64>>,
}

impl Flood {
    pub fn count(&self, status: u16) -> u64 {
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&status)
            .copied()
            .unwrap_or(0)
    }

    pub fn snapshot(&self) -> BTreeMap<u16, u64> {
        self.statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone()
    }
}

/// One flooding client, until `stop`.
pub async fn flood(app_url: String, event: String, stop: Arc<AtomicBool>, seen: Arc<Flood>) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("an HTTP client");
    let mut turn = 0u32;
    while !stop.load(Ordering::Relaxed) {
        turn += 1;
        let request = match turn % 4 {
            0 => client.post(format!("{app_url}/api/events/{event}/queue")),
            1 => client.get(format!("{app_url}/api/events/{event}")),
            2 => client.get(format!("{app_url}/api/events/{event}/fairness")),
            // A receipt read: the reservations group, without an admission token.
            _ => client
                .get(format!("{app_url}/api/holds/h-{turn}"))
                .header("floodgate-receipt", format!("rk-{turn}")),
        };
        let status = match request.send().await {
            Ok(response) => Answer::from(response).await.status,
            Err(_) => 0,
        };
        *seen
            .statuses
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .entry(status)
            .or_default() += 1;
    }
}

/// Starts `clients` flooding clients and waits until the crowd is refused somewhere (20 of
/// its requests answered 503); panics if that takes over 30 s.
pub async fn until_shed(
    app_url: &str,
    event: &str,
    clients: usize,
) -> (
    Arc<AtomicBool>,
    Arc<Flood>,
    Vec<tokio::task::JoinHandle<()>>,
) {
    let stop = Arc::new(AtomicBool::new(false));
    let seen = Arc::new(Flood::default());
    let handles = (0..clients)
        .map(|_| {
            tokio::spawn(flood(
                app_url.to_owned(),
                event.to_owned(),
                stop.clone(),
                seen.clone(),
            ))
        })
        .collect();
    let started = tokio::time::Instant::now();
    while seen.count(503) < 20 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{clients} flooding clients never overflowed the budgets: {:?}",
            seen.snapshot()
        );
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    (stop, seen, handles)
}

/// Budgets a few dozen flooding clients overflow: this many reservations permits, and four
/// each for joins (with a line of four) and reads.
pub fn small_budgets(reservations: usize) -> impl Fn(&mut gateway::config::Config) + Send + Sync {
    move |config| {
        config.max_inflight_reservations = reservations;
        config.max_inflight_joins = 4;
        config.join_queue = 4;
        config.max_inflight_reads = 4;
    }
}
