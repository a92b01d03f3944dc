//! Building the gateway from its configuration: the store (migrations applied), secrets, the
//! waiting room, the payment provider, the demo event; then the background loops every
//! instance runs (meter, sweeper; the outbox worker and reconciler with the payments saga).

use std::sync::Arc;
use std::time::Duration;

use admission::{Admission, AdmissionConfig};
use reservation::payments::{PaymentConfig, Provider};
use reservation::{Store, StoreOptions};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::admission_db::StoreAdmissionDb;
use crate::config::Config;
use crate::seat_cache::SeatCache;
use crate::state::{AppState, Settings};
use crate::{demo, secrets};

pub async fn build(config: &Config, shutdown: CancellationToken) -> anyhow::Result<AppState> {
    let store = Store::connect(&config.database_url, StoreOptions::default()).await?;
    let secrets = secrets::load(config, &store).await?;
    if let Some(key) = &secrets.generated_organizer_key {
        // Shown once, on the terminal only: it is never logged and the database keeps its hash.
        eprintln!("\n  Organizer key (shown once; keep it): {key}\n");
    }
    let mut admission_config = AdmissionConfig::new(secrets.keys);
    admission_config.join_limit_per_min = config.join_limit_per_min;
    let queue_url = config
        .redis_url
        .clone()
        .unwrap_or_else(|| "memory".to_owned());
    let db = Arc::new(StoreAdmissionDb {
        store: store.clone(),
    });
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
    })?;
    if config.demo_enabled() {
        demo::seed(&store).await?;
        // Subscribing registers the event with this instance's meter, so it ticks from the start.
        drop(admission.subscribe(demo::DEMO_EVENT));
    }
    Ok(AppState {
        store,
        admission,
        provider,
        seats: SeatCache::default(),
        settings: Arc::new(Settings {
            organizer_key_hashes: secrets.organizer_key_hashes,
            webhook_secret: secrets.webhook_secret,
            trusted_proxies: config.trusted_proxies.clone(),
        }),
        shutdown,
    })
}

/// Starts the loops every instance runs; they stop when `shutdown` is cancelled.
pub fn spawn_loops(state: &AppState) -> JoinSet<()> {
    let mut tasks = JoinSet::new();
    let stop = state.shutdown.clone();
    let admission = state.admission.clone();
    tasks.spawn(async move { admission.run_meter(stop.cancelled_owned()).await });

    let stop = state.shutdown.clone();
    let store = state.store.clone();
    tasks.spawn(async move {
        let mut every = tokio::time::interval(Duration::from_secs(1));
        loop {
            tokio::select! {
                () = stop.cancelled() => return,
                _ = every.tick() => {
                    // Tidiness only: expiry itself is the permission, whatever the sweeper did.
                    if let Err(error) = store.sweep(200).await {
                        tracing::warn!(%error, "sweep failed");
                    }
                }
            }
        }
    });
    tasks
}
