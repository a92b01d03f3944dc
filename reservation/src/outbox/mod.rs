//! The outbox worker: runs the work each transaction left behind (provider calls, the
//! `session_ended` signal to admission), at least once, in every gateway instance.
//!
//! # Layout
//! - `claim.rs`: claiming rows with a lease, finishing them, backoff.
//! - `authorize.rs`: the `authorize` job.
//! - `money.rs`: `capture`, `void`, `refund`.
//! - `converge.rs`: the one path from a provider answer to rows (worker, reconciler, webhook).
//! - `record.rs`: the conditional updates that record provider answers.
//! - `backlog.rs`: how far behind the outbox is (a backpressure signal).
//! - `sink.rs`: [`SessionSink`], how ended sessions reach admission without a dependency on it.

mod authorize;
mod backlog;
mod claim;
mod converge;
mod money;
mod record;
mod sink;

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::ids::AttemptId;
use crate::payments::Provider;
use crate::store::Store;
use crate::{Error, StoreOptions};

pub use backlog::Backlog;
use claim::Job;
pub(crate) use claim::backoff;
pub(crate) use converge::{Converged, money_job};
pub use sink::{SessionEnded, SessionSink, SinkError};

/// How the worker paces itself.
#[derive(Debug, Clone)]
pub struct OutboxConfig {
    /// Jobs run at once by one worker.
    pub concurrency: usize,
    /// How long a claimed job is kept from other workers. Longer than the provider's request
    /// timeout, so a live worker's job is never run twice at once in normal operation.
    pub lease: Duration,
    /// How often an idle worker looks for due rows.
    pub poll: Duration,
    pub backoff_base: Duration,
    pub backoff_max: Duration,
    /// After an attempt is abandoned, how many more times to look for money that a timed-out
    /// request may still create at the provider.
    pub late_money_checks: u32,
}

impl Default for OutboxConfig {
    fn default() -> Self {
        Self {
            concurrency: 64,
            lease: Duration::from_secs(60),
            poll: Duration::from_millis(250),
            backoff_base: Duration::from_millis(500),
            backoff_max: Duration::from_secs(60),
            late_money_checks: 5,
        }
    }
}

/// What a job asks of the row after running.
pub(crate) enum Step {
    Done,
    /// Try again after the backoff for its try count.
    Retry(String),
    /// Nothing owed now: look again after the backoff, with a new payload. Not backlog.
    Watch(String, serde_json::Value),
}

pub(crate) struct Ctx {
    pub store: Store,
    pub provider: Provider,
    pub sink: SessionSink,
    pub config: OutboxConfig,
}

/// Runs the outbox until `shutdown` resolves. Returns `Err` only when a failpoint "killed" the
/// worker (tests); storage and provider trouble is retried with backoff, never fatal.
///
/// `store` should be the worker's own small pool ([`Store::sibling`]) so provider latency
/// never starves request handlers of connections.
pub async fn run_outbox(
    store: Store,
    provider: Provider,
    sink: SessionSink,
    config: OutboxConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let ctx = Arc::new(Ctx {
        store,
        provider,
        sink,
        config,
    });
    let mut shutdown = pin!(shutdown);
    let mut running: JoinSet<Result<(), Error>> = JoinSet::new();
    // Claim in batches: one claim (a committed transaction) per finished job capped the
    // worker at a few jobs in flight while hundreds were due.
    let batch = (ctx.config.concurrency / 4).max(1);
    loop {
        let room = ctx.config.concurrency.saturating_sub(running.len());
        let mut idle = false;
        if room >= batch || running.is_empty() {
            match ctx.store.claim_jobs(room, ctx.config.lease).await {
                Ok(jobs) => {
                    idle = jobs.len() < room;
                    for job in jobs {
                        running.spawn(run_job(ctx.clone(), job));
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "outbox claim failed");
                    idle = true;
                }
            }
        }
        tokio::select! {
            biased;
            () = &mut shutdown => break,
            Some(done) = running.join_next(), if !running.is_empty() => {
                crashed(done)?;
                while let Some(done) = running.try_join_next() {
                    crashed(done)?;
                }
            }
            () = tokio::time::sleep(ctx.config.poll), if idle => {}
        }
    }
    // Let in-flight jobs end cleanly: an aborted one would only wait out its lease.
    while running.join_next().await.is_some() {}
    Ok(())
}

/// A failpoint "killed" the worker: as if the process died here, in-flight jobs are dropped
/// with the set and their leases run out for another worker.
fn crashed(done: Result<Result<(), Error>, tokio::task::JoinError>) -> Result<(), Error> {
    match done {
        Ok(Err(Error::Crashed(c))) => Err(Error::Crashed(c)),
        _ => Ok(()),
    }
}

#[tracing::instrument(skip_all, fields(job = job.id, kind = %job.kind, tries = job.tries))]
async fn run_job(ctx: Arc<Ctx>, job: Job) -> Result<(), Error> {
    let step = match dispatch(&ctx, &job).await {
        Ok(step) => step,
        Err(e @ Error::Crashed(_)) => return Err(e),
        Err(error) => {
            tracing::warn!(%error, "outbox job failed");
            Step::Retry(error.to_string())
        }
    };
    let stored = match step {
        Step::Done => ctx.store.finish_job(job.id).await,
        Step::Retry(why) => {
            let delay = claim::backoff(job.tries, ctx.config.backoff_base, ctx.config.backoff_max);
            ctx.store.retry_job(job.id, delay, &why, None).await
        }
        Step::Watch(why, payload) => {
            let delay = claim::backoff(job.tries, ctx.config.backoff_base, ctx.config.backoff_max);
            ctx.store
                .retry_job(job.id, delay, &why, Some(&payload))
                .await
        }
    };
    if let Err(error) = stored {
        // The lease runs out and the job runs again; every job is idempotent.
        tracing::warn!(%error, "outbox row not updated");
    }
    Ok(())
}

async fn dispatch(ctx: &Ctx, job: &Job) -> Result<Step, Error> {
    if job.kind == "session_ended" {
        return sink::deliver(ctx, job).await;
    }
    let Some(attempt) = job
        .attempt_id
        .as_deref()
        .and_then(|a| a.parse::<AttemptId>().ok())
    else {
        tracing::error!(job = job.id, kind = %job.kind, "outbox job without a usable attempt id");
        return Ok(Step::Done);
    };
    match job.kind.as_str() {
        "authorize" => authorize::run(ctx, job, &attempt).await,
        "capture" => money::capture(ctx, &attempt, &job.payload).await,
        "void" => money::void(ctx, &job.event_id, &attempt, &job.payload).await,
        "refund" => money::refund(ctx, &job.event_id, &attempt, &job.payload).await,
        other => {
            tracing::error!(kind = other, "unknown outbox job kind");
            Ok(Step::Done)
        }
    }
}

impl Store {
    /// Another handle on the same database with its own pool (the worker's and the
    /// reconciler's), so their provider waits never take connections from requests.
    pub async fn sibling(&self, options: StoreOptions) -> Result<Store, Error> {
        let url = self.pool.connect_options().database_url.to_string();
        Store::connect(&url, options).await
    }

    /// Outbox rows not yet done, by kind (tests and the stuck view).
    pub async fn outbox_backlog(&self) -> Result<Vec<(String, i64)>, Error> {
        Ok(sqlx::query_as(
            "select kind, count(*) from outbox where done_at is null group by kind order by kind",
        )
        .fetch_all(&self.pool)
        .await?)
    }
}
