//! A payments-saga test rig: a fresh PostgreSQL database, the simulator over HTTP, the real
//! HTTP provider client, and the outbox worker / reconciler as tasks a test can stop, kill and
//! start again. Webhooks go to a small receiver calling `intake_webhook`, as the gateway will.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use anyhow::Context;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::routing::post;
use reservation::outbox::{OutboxConfig, SessionEnded, SessionSink, run_outbox};
use reservation::payments::Provider;
use reservation::payments::simulator::SimulatorConfig;
use reservation::reconcile::{ReconcileConfig, run_reconciler};
use reservation::webhook_intake::{WebhookAck, WebhookError, intake_webhook};
use reservation::{Error, EventId, Store, StoreOptions};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::invariants::check_invariants;
use crate::simulator::{SimServerConfig, SimulatorHandle, spawn};

pub const WEBHOOK_SECRET: &str = "whsec_saga_tests";
pub const API_KEY: &str = "sk_test_saga";

/// Webhook deliveries by what intake answered.
#[derive(Debug, Default)]
pub struct WebhookCounts {
    pub applied: AtomicU64,
    pub duplicate: AtomicU64,
    pub unmatched: AtomicU64,
    pub refused: AtomicU64,
    pub unavailable: AtomicU64,
}

pub struct Rig {
    pub store: Store,
    pub sim: SimulatorHandle,
    /// The worker's and reconciler's provider (HTTP, `timeout` per request).
    pub provider: Provider,
    pub sink: SessionSink,
    pub ended: mpsc::UnboundedReceiver<SessionEnded>,
    pub outbox: OutboxConfig,
    pub reconcile: ReconcileConfig,
    pub webhooks: Arc<WebhookCounts>,
}

/// A running worker or reconciler.
pub struct Loop {
    task: JoinHandle<Result<(), Error>>,
    stop: Option<oneshot::Sender<()>>,
}

impl Loop {
    /// Kills the task where it stands (a process death): in-flight jobs keep their leases.
    pub fn kill(self) {
        self.task.abort();
    }

    /// Asks it to stop and waits.
    pub async fn stop(mut self) -> Result<(), Error> {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.task.await.expect("loop task does not panic")
    }

    /// Waits for it to end by itself (a failpoint crash).
    pub async fn ended(self, within: Duration) -> Result<(), Error> {
        tokio::time::timeout(within, self.task)
            .await
            .expect("the loop ends in time")
            .expect("loop task does not panic")
    }
}

impl Rig {
    /// `timeout` is the provider client's per-request timeout.
    pub async fn new(timeout: Duration) -> Rig {
        let store = reservation::testing::fresh_postgres().await;
        let sim = spawn(SimServerConfig {
            api_key: Some(API_KEY.into()),
            simulator: SimulatorConfig {
                webhook_secret: WEBHOOK_SECRET.into(),
                ..SimulatorConfig::default()
            },
            ..SimServerConfig::default()
        })
        .await
        .expect("simulator binds 127.0.0.1:0");
        let provider = sim.http_provider(API_KEY, timeout);
        let (tx, ended) = mpsc::unbounded_channel();
        Rig {
            store,
            sim,
            provider,
            sink: SessionSink::channel(tx),
            ended,
            outbox: OutboxConfig {
                concurrency: 32,
                lease: timeout * 2 + Duration::from_millis(500),
                poll: Duration::from_millis(50),
                backoff_base: Duration::from_millis(100),
                backoff_max: Duration::from_secs(2),
                late_money_checks: 3,
            },
            reconcile: ReconcileConfig {
                interval: Duration::from_millis(250),
                batch: 500,
                concurrency: 32,
                late_money_checks: 3,
            },
            webhooks: Arc::default(),
        }
    }

    /// A new buyer holds `seat` and starts paying with `card` (the worker is not involved).
    pub async fn checkout(
        &self,
        event: &EventId,
        seat: &str,
        card: &str,
    ) -> (reservation::Hold, reservation::PaymentAttempt) {
        let buyer = reservation::testing::session(&self.store, event).await;
        let seat: reservation::SeatId = seat.parse().expect("seat id");
        let hold = self.store.hold(&buyer, &[seat]).await.expect("hold");
        let attempt = self
            .store
            .begin_payment(&buyer, &hold.hold_id, card)
            .await
            .expect("checkout");
        (hold, attempt)
    }

    /// The worker on its own small pool, as in the gateway.
    pub async fn start_worker(&self) -> Loop {
        let store = self
            .store
            .sibling(StoreOptions {
                max_connections: 6,
                ..StoreOptions::default()
            })
            .await
            .expect("worker pool connects");
        let (stop, rx) = oneshot::channel();
        let task = tokio::spawn(run_outbox(
            store,
            self.provider.clone(),
            self.sink.clone(),
            self.outbox.clone(),
            async move {
                let _ = rx.await;
            },
        ));
        Loop {
            task,
            stop: Some(stop),
        }
    }

    pub async fn start_reconciler(&self) -> Loop {
        let store = self
            .store
            .sibling(StoreOptions {
                max_connections: 4,
                ..StoreOptions::default()
            })
            .await
            .expect("reconciler pool connects");
        let (stop, rx) = oneshot::channel();
        let task = tokio::spawn(run_reconciler(
            store,
            self.provider.clone(),
            self.reconcile.clone(),
            async move {
                let _ = rx.await;
            },
        ));
        Loop {
            task,
            stop: Some(stop),
        }
    }

    /// Serves `POST /hook` on port 0 through `intake_webhook` and points the simulator at it.
    pub async fn serve_webhooks(&self) {
        let state = (
            self.store.clone(),
            self.provider.clone(),
            self.webhooks.clone(),
        );
        let app = axum::Router::new()
            .route("/hook", post(hook))
            .with_state(state);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("webhook receiver binds 127.0.0.1:0");
        let url = format!(
            "http://{}/hook",
            listener.local_addr().expect("bound address")
        );
        tokio::spawn(async move { axum::serve(listener, app).await });
        self.sim.simulator.set_webhook_url(&url);
    }

    /// Waits until nothing is left to do: no open attempt, no outbox row, no authorization
    /// still holding money unresolved. Then the invariants must hold, settled.
    pub async fn settle(&self, event: &EventId, within: Duration) -> anyhow::Result<()> {
        let deadline = tokio::time::Instant::now() + within;
        loop {
            let open: i64 = sqlx::query_scalar(
                "select count(*) from payment_attempts where state in ('pending', 'ambiguous', 'authorized')",
            )
            .fetch_one(self.store.pool())
            .await?;
            let backlog = self.store.outbox_backlog().await?;
            let ledger = self.sim.simulator.ledger();
            let unsettled = ledger.unsettled().len();
            if open == 0 && backlog.is_empty() && unsettled == 0 {
                break;
            }
            if tokio::time::Instant::now() > deadline {
                anyhow::bail!(
                    "not settled: {open} open attempts, backlog {backlog:?}, {unsettled} unsettled"
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        self.assert_invariants(event, true).await
    }

    pub async fn assert_invariants(&self, event: &EventId, settled: bool) -> anyhow::Result<()> {
        let ledger = self.sim.simulator.ledger();
        let bad = check_invariants(&self.store, event, &ledger, settled)
            .await
            .context("reading the rows")?;
        anyhow::ensure!(bad.is_empty(), "invariants violated:\n{}", bad.join("\n"));
        Ok(())
    }
}

async fn hook(
    State((store, provider, counts)): State<(Store, Provider, Arc<WebhookCounts>)>,
    headers: HeaderMap,
    body: Bytes,
) -> StatusCode {
    let signature = headers
        .get("stripe-signature")
        .and_then(|v| v.to_str().ok());
    let counter = |c: &AtomicU64| c.fetch_add(1, Ordering::Relaxed);
    match intake_webhook(
        &store,
        &provider,
        WEBHOOK_SECRET.as_bytes(),
        signature,
        &body,
    )
    .await
    {
        Ok(WebhookAck::Applied { .. }) => {
            counter(&counts.applied);
            StatusCode::OK
        }
        Ok(WebhookAck::Duplicate { .. }) => {
            counter(&counts.duplicate);
            StatusCode::OK
        }
        Ok(WebhookAck::Unmatched) => {
            counter(&counts.unmatched);
            StatusCode::OK
        }
        Err(WebhookError::Signature(_) | WebhookError::Malformed(_)) => {
            counter(&counts.refused);
            StatusCode::BAD_REQUEST
        }
        Err(WebhookError::ProviderUnavailable(_)) => {
            counter(&counts.unavailable);
            StatusCode::SERVICE_UNAVAILABLE
        }
        Err(WebhookError::Store(_)) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}
