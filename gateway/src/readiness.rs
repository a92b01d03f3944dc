//! What `/readyz` answers from: the state the background loops keep, never a query per call.
//! One probe loop asks the database and the queue backend once a second; the supervisor
//! marks each loop up while it runs and down while it waits to be restarted.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use tokio_util::sync::CancellationToken;

use crate::state::AppState;

/// How often the probe asks the database and the queue backend.
pub const PROBE_EVERY: Duration = Duration::from_secs(1);
/// A dependency whose last good answer is older than this is down. A few probes' worth, so one
/// slow answer under load does not flap readiness.
pub const STALE_AFTER: Duration = Duration::from_secs(3);
/// How long one probe may wait for an answer.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The loops and dependencies `/readyz` judges.
#[derive(Default)]
pub struct Readiness {
    inner: Mutex<Inner>,
}

#[derive(Default)]
struct Inner {
    /// Each supervised loop: running (true) or waiting to be restarted (false).
    loops: BTreeMap<&'static str, bool>,
    database_ok_at: Option<Instant>,
    queue_backend_ok_at: Option<Instant>,
}

impl Readiness {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn set_loop(&self, name: &'static str, running: bool) {
        self.lock().loops.insert(name, running);
    }

    pub fn database_answered(&self) {
        self.lock().database_ok_at = Some(Instant::now());
    }

    pub fn queue_backend_answered(&self) {
        self.lock().queue_backend_ok_at = Some(Instant::now());
    }

    /// What is down, by name (`database`, `queue_backend`, or a loop's name); empty = ready.
    pub fn down(&self) -> Vec<&'static str> {
        let inner = self.lock();
        let fresh = |at: Option<Instant>| at.is_some_and(|t| t.elapsed() < STALE_AFTER);
        let mut down = Vec::new();
        if !fresh(inner.database_ok_at) {
            down.push("database");
        }
        if !fresh(inner.queue_backend_ok_at) {
            down.push("queue_backend");
        }
        down.extend(
            inner
                .loops
                .iter()
                .filter(|(_, running)| !**running)
                .map(|(name, _)| *name),
        );
        down
    }
}

/// Asks the database and the queue backend once a second until `stop`; `/readyz` reads what it
/// found. Supervised like the other loops (if it dies, both go stale and read as down).
pub async fn probe(state: AppState, stop: CancellationToken) {
    let mut every = tokio::time::interval(PROBE_EVERY);
    every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut database_was_up = true;
    let mut backend_was_up = true;
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {}
        }
        let (database, backend) = tokio::join!(
            tokio::time::timeout(PROBE_TIMEOUT, state.store.ping()),
            tokio::time::timeout(PROBE_TIMEOUT, state.admission.ping_backend()),
        );
        let database_up = matches!(database, Ok(Ok(())));
        if database_up {
            state.readiness.database_answered();
        } else if database_was_up {
            tracing::error!("the database does not answer; not ready");
        }
        if database_up && !database_was_up {
            tracing::info!("the database answers again");
        }
        database_was_up = database_up;
        let backend_up = matches!(backend, Ok(Ok(())));
        if backend_up {
            state.readiness.queue_backend_answered();
        } else if backend_was_up {
            tracing::error!("the queue backend does not answer; not ready");
        }
        if backend_up && !backend_was_up {
            tracing::info!("the queue backend answers again");
        }
        backend_was_up = backend_up;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nothing_heard_yet_is_down_and_a_stopped_loop_is_named() {
        let readiness = Readiness::default();
        assert_eq!(readiness.down(), ["database", "queue_backend"]);
        readiness.database_answered();
        readiness.queue_backend_answered();
        readiness.set_loop("meter", true);
        assert!(readiness.down().is_empty());
        readiness.set_loop("meter", false);
        assert_eq!(readiness.down(), ["meter"]);
    }
}
