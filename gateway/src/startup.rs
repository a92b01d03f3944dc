//! Building the gateway from its configuration: the store (migrations applied), secrets, the
//! waiting room, the payment provider, the demo event; then the background loops every
//! instance runs (meter, sweeper, outbox worker, reconciler, organizer webhooks); leases make
//! several instances safe.

use std::sync::Arc;
use std::time::Duration;

use admission::{Admission, AdmissionConfig};
use reservation::outbox::{OutboxConfig, SessionEnded, SessionSink, SinkError, run_outbox};
use reservation::payments::{PaymentConfig, Provider};
use reservation::reconcile::{ReconcileConfig, run_reconciler};
use reservation::{Store, StoreOptions};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::admission_db::StoreAdmissionDb;
use crate::config::Config;
use crate::payment_mode::{self, PaymentMode};
use crate::seat_cache::SeatCache;
use crate::state::{AppState, Settings, Shared};
use crate::supervisor::Supervisor;
use crate::tls_roots::{self, ExtraRoots};
use crate::{demo, secrets};

pub async fn build(config: &Config, shutdown: CancellationToken) -> anyhow::Result<AppState> {
    let payment_mode = payment_mode::payment_mode(config)?;
    match (payment_mode, config.payment) {
        (PaymentMode::Simulated, Some(_)) => tracing::warn!(
            "PAYMENTS ARE SIMULATED (FLOODGATE_PAYMENT=simulated): orders are confirmed and no \
             money is taken; set FLOODGATE_PAYMENT_URL to sell for real"
        ),
        (PaymentMode::Simulated, None) => {
            tracing::info!("payments are simulated (the embedded default): no money is taken");
        }
        (PaymentMode::Provider, _) => {}
    }
    let roots = config
        .tls_ca_file
        .as_deref()
        .map(ExtraRoots::load)
        .transpose()?;
    let database_url = tls_roots::database_url(
        &config.database_url,
        roots.as_ref().map(|r| r.path.as_path()),
    );
    let mut store = Store::connect(&database_url, StoreOptions::default()).await?;
    let secrets = secrets::load(config, &store).await?;
    store.set_receipt_secret(secrets.receipt_secret.as_bytes());
    if let Some(key) = &secrets.generated_organizer_key {
        // Shown once, on the terminal only: it is never logged and the database keeps its hash.
        eprintln!("\n  Organizer key (shown once; keep it): {key}\n");
    }
    let mut admission_config = AdmissionConfig::new(secrets.keys);
    admission_config.join_limit_per_min = config.join_limit_per_min;
    admission_config.waiting_reads_per_s = config.waiting_reads_per_s;
    admission_config.tls_ca_pem = roots.as_ref().map(|r| r.pem.clone());
    let queue_url = config
        .redis_url
        .clone()
        .unwrap_or_else(|| "memory".to_owned());
    let db = Arc::new(StoreAdmissionDb::new(store.clone()));
    let admission = Admission::connect(&queue_url, db, admission_config).await?;
    let provider = Provider::from_config(&PaymentConfig {
        url: config.payment_url.clone(),
        api_key: config
            .payment_key
            .as_ref()
            .map(|k| k.expose().to_owned())
            .unwrap_or_default(),
        webhook_secret: secrets.webhook_secret.clone(),
        request_timeout: Duration::from_secs(10),
        ca_pem: roots.map(|r| r.pem),
    })?;
    if config.demo_enabled() {
        demo::seed(&store).await?;
        // Subscribing registers the event with this instance's meter, so it ticks from the start.
        drop(admission.subscribe(demo::DEMO_EVENT));
    }
    Ok(AppState::new(Shared {
        store,
        admission,
        provider,
        seats: SeatCache::default(),
        settings: Arc::new(Settings {
            organizer_key_hashes: secrets.organizer_key_hashes,
            webhook_secret: secrets.webhook_secret,
            trusted_proxies: config.trusted_proxies.clone(),
            payment_overdue_s: i64::from(config.payment_overdue_s),
            payment_mode,
        }),
        health: Default::default(),
        readiness: Default::default(),
        shutdown,
        guard: Arc::new(crate::overload::Guard::new(&config.budgets())),
        fanouts: crate::fanout::FanOuts::default(),
        socket_feeds: crate::socket_feed::SocketFeeds::default(),
        sockets: crate::socket_limits::LiveSockets::new(config.sockets_per_address),
        keys: Default::default(),
        exports: Arc::new(tokio::sync::Semaphore::new(
            crate::csv_stream::EXPORTS_AT_ONCE,
        )),
    }))
}

/// Starts the loops every instance runs, supervised (restarted when one ends or panics, and
/// reported on `/readyz`); they stop when `shutdown` is cancelled.
pub async fn spawn_loops(
    state: &AppState,
    backpressure: crate::backpressure::Thresholds,
    hooks: reservation::hooks::HookConfig,
) -> anyhow::Result<JoinSet<()>> {
    let mut loops = Supervisor::new(state.readiness.clone(), state.shutdown.clone());
    let (probed, stop) = (state.clone(), state.shutdown.clone());
    loops.spawn("readiness_probe", move || {
        crate::readiness::probe(probed.clone(), stop.clone())
    });
    let (watched, stop) = (state.clone(), state.shutdown.clone());
    loops.spawn("backpressure", move || {
        crate::backpressure::run(watched.clone(), backpressure.clone(), stop.clone())
    });
    let (admission, stop) = (state.admission.clone(), state.shutdown.clone());
    loops.spawn("meter", move || {
        let (admission, stop) = (admission.clone(), stop.clone());
        async move { admission.run_meter(stop.cancelled_owned()).await }
    });
    let (store, stop) = (state.store.clone(), state.shutdown.clone());
    loops.spawn("sweeper", move || sweep(store.clone(), stop.clone()));
    let (sampled, stop) = (state.clone(), state.shutdown.clone());
    loops.spawn("metrics_sampler", move || {
        crate::ops_gauges::run(sampled.clone(), stop.clone())
    });

    // The payment loops get their own small pool, so a slow provider never starves requests.
    // Jobs hold a connection only between provider calls, so 8 serve the worker's 64 jobs.
    let worker_store = state
        .store
        .sibling(StoreOptions {
            max_connections: 8,
            ..StoreOptions::default()
        })
        .await?;
    let admission = state.admission.clone();
    let sink = SessionSink::new(move |ended: SessionEnded| {
        let admission = admission.clone();
        async move {
            // Repeats are harmless: admission frees a slot once per session.
            admission
                .session_ended(&ended.event_id, &ended.session_id)
                .await
                .map_err(|e| SinkError::from(e.to_string()))
        }
    });
    let (stop, store, provider) = (
        state.shutdown.clone(),
        worker_store.clone(),
        state.provider.clone(),
    );
    loops.spawn("outbox_worker", move || {
        let (store, provider, sink, stop) =
            (store.clone(), provider.clone(), sink.clone(), stop.clone());
        async move {
            if let Err(error) = run_outbox(
                store,
                provider,
                sink,
                OutboxConfig::default(),
                stop.cancelled_owned(),
            )
            .await
            {
                tracing::error!(%error, "outbox worker stopped");
            }
        }
    });
    let (stop, provider) = (state.shutdown.clone(), state.provider.clone());
    loops.spawn("reconciler", move || {
        let (store, provider, stop) = (worker_store.clone(), provider.clone(), stop.clone());
        async move {
            if let Err(error) = run_reconciler(
                store,
                provider,
                ReconcileConfig::default(),
                stop.cancelled_owned(),
            )
            .await
            {
                tracing::error!(%error, "reconciler stopped");
            }
        }
    });
    // Organizer webhooks: a pool of their own, held only between deliveries.
    let hook_store = state
        .store
        .sibling(StoreOptions {
            max_connections: 4,
            ..StoreOptions::default()
        })
        .await?;
    let stop = state.shutdown.clone();
    loops.spawn("webhooks", move || {
        let (store, hooks, stop) = (hook_store.clone(), hooks.clone(), stop.clone());
        async move {
            if let Err(error) =
                reservation::hooks::run_hooks(store, hooks, stop.cancelled_owned()).await
            {
                tracing::error!(%error, "webhook worker stopped");
            }
        }
    });
    Ok(loops.into_tasks())
}

/// Expired holds back to available once a second, in small batches. Tidiness only: expiry
/// itself is the permission, whatever the sweeper did.
async fn sweep(store: Store, stop: CancellationToken) {
    let mut every = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            _ = every.tick() => {
                if let Err(error) = store.sweep(200).await {
                    tracing::warn!(%error, "sweep failed");
                }
            }
        }
    }
}

/// The in-process simulator sends its webhooks to this gateway, like a real provider would.
pub fn point_simulator_at(state: &AppState, addr: std::net::SocketAddr, https: bool) {
    let scheme = if https { "https" } else { "http" };
    if let Provider::Simulated(simulated) = &state.provider {
        simulated
            .simulator
            .set_webhook_url(&format!("{scheme}://{addr}/api/payments/webhook"));
    }
}
