//! The background loops every instance runs (meter, outbox worker, reconciler, sweeper,
//! backpressure, the metrics sampler and the readiness probe) are supervised: a loop that ends
//! or panics before shutdown is logged as an error, counted
//! (`floodgate_loop_restarts_total{loop}`), reported down on `/readyz` while it waits, and
//! started again after a short backoff. A loop that silently stopped would leave offers, payments
//! or seat releases undone with the gateway still answering as if all were well.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::readiness::Readiness;

const FIRST_BACKOFF: Duration = Duration::from_millis(200);
const MAX_BACKOFF: Duration = Duration::from_secs(5);
/// A loop that ran this long before dying starts again at the first backoff.
const HEALTHY_RUN: Duration = Duration::from_secs(30);

pub struct Supervisor {
    tasks: JoinSet<()>,
    readiness: Arc<Readiness>,
    stop: CancellationToken,
}

impl Supervisor {
    pub fn new(readiness: Arc<Readiness>, stop: CancellationToken) -> Self {
        Self {
            tasks: JoinSet::new(),
            readiness,
            stop,
        }
    }

    /// Runs `start()` as the loop `name` until shutdown, starting it again whenever it ends or
    /// panics before then.
    pub fn spawn<F, Fut>(&mut self, name: &'static str, start: F)
    where
        F: Fn() -> Fut + Send + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let (readiness, stop) = (self.readiness.clone(), self.stop.clone());
        metrics::counter!("floodgate_loop_restarts_total", "loop" => name).increment(0);
        readiness.set_loop(name, true);
        self.tasks.spawn(async move {
            let mut backoff = FIRST_BACKOFF;
            loop {
                readiness.set_loop(name, true);
                let started = Instant::now();
                // Its own task, so a panic ends that task only and is seen here as a `JoinError`.
                let ended = tokio::spawn(failpoint::wrap(name, start())).await;
                if stop.is_cancelled() {
                    return;
                }
                readiness.set_loop(name, false);
                metrics::counter!("floodgate_loop_restarts_total", "loop" => name).increment(1);
                match ended {
                    Ok(()) => tracing::error!(loop = name, "background loop ended; restarting it"),
                    Err(error) if error.is_panic() => {
                        let panic = error.into_panic();
                        let message = panic
                            .downcast_ref::<&str>()
                            .map(|s| (*s).to_owned())
                            .or_else(|| panic.downcast_ref::<String>().cloned())
                            .unwrap_or_default();
                        tracing::error!(loop = name, panic = %message, "background loop panicked; restarting it");
                    }
                    Err(error) => {
                        tracing::error!(loop = name, %error, "background loop stopped; restarting it");
                    }
                }
                if started.elapsed() >= HEALTHY_RUN {
                    backoff = FIRST_BACKOFF;
                }
                tokio::select! {
                    () = stop.cancelled() => return,
                    () = tokio::time::sleep(backoff) => {}
                }
                backoff = (backoff * 2).min(MAX_BACKOFF);
            }
        });
    }

    pub fn into_tasks(self) -> JoinSet<()> {
        self.tasks
    }
}

/// A test can make a running loop panic (feature `failpoints`); without the feature the loop
/// runs untouched.
pub mod failpoint {
    use std::future::Future;

    #[cfg(not(feature = "failpoints"))]
    pub(super) fn wrap<Fut: Future<Output = ()>>(_name: &'static str, run: Fut) -> Fut {
        run
    }

    #[cfg(feature = "failpoints")]
    pub(super) async fn wrap<Fut: Future<Output = ()>>(name: &'static str, run: Fut) {
        let armed = async {
            loop {
                let notified = ARMED.1.notified();
                if take(name) {
                    panic!("failpoint: loop {name} made to panic");
                }
                notified.await;
            }
        };
        tokio::select! {
            () = run => {}
            () = armed => {}
        }
    }

    #[cfg(feature = "failpoints")]
    static ARMED: std::sync::LazyLock<(std::sync::Mutex<Vec<&'static str>>, tokio::sync::Notify)> =
        std::sync::LazyLock::new(Default::default);

    #[cfg(feature = "failpoints")]
    fn take(name: &str) -> bool {
        let mut armed = ARMED.0.lock().unwrap_or_else(|p| p.into_inner());
        match armed.iter().position(|n| *n == name) {
            Some(at) => {
                armed.remove(at);
                true
            }
            None => false,
        }
    }

    /// Makes the running loop `name` panic once (the first instance of it to notice, in a
    /// process running several gateways).
    #[cfg(feature = "failpoints")]
    pub fn panic_loop(name: &'static str) {
        ARMED.0.lock().unwrap_or_else(|p| p.into_inner()).push(name);
        ARMED.1.notify_waiters();
    }
}
