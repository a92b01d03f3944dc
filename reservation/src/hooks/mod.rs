//! Webhooks to the organizer's own systems: the organizer subscribes a URL to facts of an
//! event (the queue opened, paused or resumed, sold out, an order confirmed or refunded, a
//! payment stuck); each fact becomes one delivery row per subscription, and a worker in every
//! gateway delivers them, signed, retrying with backoff for a day. Nothing here is on the
//! money path: a sale writes at most a row per subscription and never waits for a receiver.
//!
//! # Layout
//! - `kind.rs`: the kinds, the URL and the secret, parsed at the edge.
//! - `subscription.rs`: subscriptions made, listed, deleted.
//! - `record.rs`: facts recorded (the test `ping`; the scan for facts no transaction makes).
//! - `delivery.rs`: the delivery outbox: claim with a lease, attempts, listing.
//! - `send.rs`: one signed HTTP attempt.

mod delivery;
mod kind;
mod record;
mod send;
mod subscription;

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::Error;
use crate::outbox::backoff;
use crate::store::Store;

pub use delivery::{Attempt, Delivery, LISTED};
pub use kind::{
    HookSecret, HookUrl, InvalidHook, Kind, Kinds, PING, SECRET_MAX, SECRET_MIN, URL_CHARS,
    WEBHOOKS_PER_EVENT,
};
pub use send::SIGNATURE_HEADER;
pub use subscription::Subscription;

/// What a webhook request of the organizer can come to.
#[derive(Debug, thiserror::Error)]
pub enum HookError {
    #[error("no such webhook")]
    NotFound,
    #[error("the event has {max} webhooks already")]
    TooMany { max: i64 },
    #[error(transparent)]
    Invalid(#[from] InvalidHook),
    #[error(transparent)]
    Store(#[from] Error),
}

/// How the delivery worker paces itself.
#[derive(Debug, Clone)]
pub struct HookConfig {
    /// Deliveries in flight at once in one gateway.
    pub concurrency: usize,
    /// How long one attempt may take, connection included.
    pub timeout: Duration,
    /// Longer than `timeout`, so a live worker's delivery is not sent twice at once.
    pub lease: Duration,
    /// How often an idle worker looks for due deliveries.
    pub poll: Duration,
    /// How often the facts no transaction records are looked for.
    pub scan: Duration,
    /// The first retry's delay; each next one doubles, up to `backoff_max`.
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// After this long since the fact, a failed delivery is given up.
    pub give_up_after: Duration,
    /// Seconds past its abandon deadline after which an unanswered payment is `payment.stuck`.
    pub payment_overdue_s: i64,
}

impl Default for HookConfig {
    fn default() -> Self {
        Self {
            concurrency: 16,
            timeout: Duration::from_secs(10),
            lease: Duration::from_secs(60),
            poll: Duration::from_millis(500),
            scan: Duration::from_secs(5),
            backoff_base: Duration::from_secs(10),
            backoff_max: Duration::from_secs(3600),
            give_up_after: Duration::from_secs(24 * 3600),
            payment_overdue_s: 60,
        }
    }
}

/// Delivers organizer webhooks until `shutdown` resolves. `store` should be a small pool of
/// its own (a slow receiver holds no connection, but a burst of deliveries should not take
/// the requests' ones).
pub async fn run_hooks(
    store: Store,
    config: HookConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let client = send::client(config.timeout).map_err(|e| {
        Error::Storage(sqlx::Error::Configuration(
            format!("webhook client: {e}").into(),
        ))
    })?;
    let ctx = Arc::new((store, client, config));
    let mut shutdown = pin!(shutdown);
    let mut running: JoinSet<()> = JoinSet::new();
    let mut scan = tokio::time::interval(ctx.2.scan);
    scan.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        let room = ctx.2.concurrency.saturating_sub(running.len());
        let mut idle = true;
        if room > 0 {
            match ctx.0.claim_deliveries(room, ctx.2.lease).await {
                Ok(jobs) => {
                    idle = jobs.len() < room;
                    for job in jobs {
                        let ctx = ctx.clone();
                        running.spawn(async move { deliver(&ctx.0, &ctx.1, &ctx.2, job).await });
                    }
                }
                Err(error) => tracing::warn!(%error, "webhook claim failed"),
            }
        }
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            _ = scan.tick() => {
                if let Err(error) = ctx.0.scan_facts(ctx.2.payment_overdue_s).await {
                    tracing::warn!(%error, "webhook scan failed");
                }
            }
            Some(_) = running.join_next(), if !running.is_empty() => {}
            () = tokio::time::sleep(ctx.2.poll), if idle => {}
        }
    }
    while running.join_next().await.is_some() {}
    Ok(())
}

#[tracing::instrument(skip_all, fields(delivery = job.id, kind = %job.kind, tries = job.tries))]
async fn deliver(
    store: &Store,
    client: &reqwest::Client,
    config: &HookConfig,
    job: delivery::Claimed,
) {
    let now_ms = time::OffsetDateTime::now_utc().unix_timestamp_nanos() / 1_000_000;
    let tried = send::attempt(client, &job, (now_ms / 1000) as i64).await;
    let retry_in = if tried.succeeded() {
        None
    } else {
        let delay = backoff(job.tries, config.backoff_base, config.backoff_max);
        let age_ms = (now_ms as i64).saturating_sub(job.created_at_ms);
        let give_up_ms = config.give_up_after.as_millis() as i64;
        if age_ms.saturating_add(delay.as_millis() as i64) > give_up_ms {
            tracing::error!(
                url = %job.url, error = tried.error.as_deref().unwrap_or_default(),
                "webhook delivery given up after its retry window"
            );
            None
        } else {
            tracing::info!(
                error = tried.error.as_deref().unwrap_or_default(),
                "webhook delivery failed; retrying"
            );
            Some(delay)
        }
    };
    if let Err(error) = store
        .record_delivery_attempt(job.id, &tried, retry_in)
        .await
    {
        // The lease runs out and the delivery is tried again: receivers deduplicate on its id.
        tracing::warn!(%error, "webhook delivery not recorded");
    }
}
