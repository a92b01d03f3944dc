//! The reconciler: attempts with no clear answer by their deadlines (DESIGN §4).
//!
//! Past `resolve_by` it asks the provider (search by attempt id) and applies the answer
//! through the same path as the worker and webhooks. Past `abandon_at` the policy release
//! applies: the attempt is abandoned, its seats freed, and any money found is given back by a
//! `void` / `refund` job. Nothing is decided without a definite provider answer, so while the
//! provider is unreachable attempts wait, and the first answer after `abandon_at` closes them.

use std::pin::pin;
use std::sync::Arc;
use std::time::Duration;

use tokio::task::JoinSet;

use crate::ids::{AttemptId, trusted};
use crate::outbox::{Converged, money_job};
use crate::payments::{Outcome, Provider};
use crate::views::AttemptState;
use crate::{Error, Store};

/// How the reconciler paces itself.
#[derive(Debug, Clone)]
pub struct ReconcileConfig {
    pub interval: Duration,
    /// Attempts looked at per pass.
    pub batch: i64,
    /// Provider questions in flight at once.
    pub concurrency: usize,
    /// After an abandon that found no money, how many times the `void` job looks again for a
    /// request that timed out but may still land.
    pub late_money_checks: u32,
}

impl Default for ReconcileConfig {
    fn default() -> Self {
        Self {
            interval: Duration::from_secs(5),
            batch: 200,
            concurrency: 16,
            late_money_checks: 5,
        }
    }
}

/// What one pass did, for tests and logs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Reconciled {
    pub asked: usize,
    pub confirmed: usize,
    pub declined: usize,
    pub abandoned: usize,
    pub unanswered: usize,
}

/// Runs passes every `config.interval` until `shutdown` resolves.
pub async fn run_reconciler(
    store: Store,
    provider: Provider,
    config: ReconcileConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), Error> {
    let mut shutdown = pin!(shutdown);
    loop {
        match reconcile_once(&store, &provider, &config).await {
            Ok(r) if r.asked > 0 => tracing::debug!(?r, "reconciled"),
            Ok(_) => {}
            Err(e @ Error::Crashed(_)) => return Err(e),
            Err(error) => tracing::warn!(%error, "reconcile pass failed"),
        }
        tokio::select! {
            () = &mut shutdown => return Ok(()),
            () = tokio::time::sleep(config.interval) => {}
        }
    }
}

struct Due {
    attempt: AttemptId,
    event_id: String,
    past_abandon: bool,
}

/// An open attempt past `resolve_by`, as the pass reads it.
#[derive(sqlx::FromRow)]
struct DueRow {
    attempt_id: String,
    event_id: String,
    past_abandon: i64,
}

/// One pass over open attempts past `resolve_by`.
#[tracing::instrument(skip_all, err)]
pub async fn reconcile_once(
    store: &Store,
    provider: &Provider,
    config: &ReconcileConfig,
) -> Result<Reconciled, Error> {
    let rows = sqlx::query_as::<_, DueRow>(store.sql(
        "select attempt_id, event_id, case when abandon_at <= NOW then 1 else 0 end as past_abandon \
         from payment_attempts where state in ('pending', 'ambiguous', 'authorized') and resolve_by <= NOW \
         order by resolve_by limit $1",
    ))
    .bind(config.batch)
    .fetch_all(store.pool())
    .await?;
    let due: Vec<Due> = rows
        .into_iter()
        .map(|r| {
            Ok(Due {
                attempt: trusted(r.attempt_id)?,
                event_id: r.event_id,
                past_abandon: r.past_abandon == 1,
            })
        })
        .collect::<Result<_, Error>>()?;
    let shared = Arc::new((store.clone(), provider.clone(), config.clone()));
    let mut set = JoinSet::new();
    let mut total = Reconciled::default();
    for d in due {
        while set.len() >= config.concurrency.max(1) {
            tally(&mut total, set.join_next().await)?;
        }
        let shared = shared.clone();
        set.spawn(async move {
            let (store, provider, config) = &*shared;
            one(store, provider, config, &d).await
        });
    }
    while !set.is_empty() {
        tally(&mut total, set.join_next().await)?;
    }
    Ok(total)
}

enum Did {
    Confirmed,
    Declined,
    Abandoned,
    Unanswered,
}

fn tally(
    total: &mut Reconciled,
    joined: Option<Result<Result<Did, Error>, tokio::task::JoinError>>,
) -> Result<(), Error> {
    let Some(joined) = joined else { return Ok(()) };
    total.asked += 1;
    match joined {
        Ok(Ok(Did::Confirmed)) => total.confirmed += 1,
        Ok(Ok(Did::Declined)) => total.declined += 1,
        Ok(Ok(Did::Abandoned)) => total.abandoned += 1,
        Ok(Ok(Did::Unanswered)) => total.unanswered += 1,
        Ok(Err(e @ Error::Crashed(_))) => return Err(e),
        Ok(Err(error)) => tracing::warn!(%error, "reconciling one attempt failed"),
        Err(error) => tracing::warn!(%error, "reconcile task panicked"),
    }
    Ok(())
}

async fn one(
    store: &Store,
    provider: &Provider,
    config: &ReconcileConfig,
    d: &Due,
) -> Result<Did, Error> {
    let answer = provider.search(d.attempt.as_str()).await;
    if !d.past_abandon {
        return Ok(
            match store.converge(&d.attempt, &d.event_id, &answer).await? {
                Converged::Confirmed | Converged::Compensating => Did::Confirmed,
                Converged::Declined => Did::Declined,
                Converged::Pending | Converged::AwaitingBuyer => Did::Unanswered,
            },
        );
    }
    // Policy release. Money found goes back through its own job; no money found is watched
    // for a while in case a timed-out authorize still lands.
    let (kind, payment_id, checks) = match &answer {
        Outcome::Ambiguous { .. } => {
            store.converge(&d.attempt, &d.event_id, &answer).await?;
            return Ok(Did::Unanswered);
        }
        Outcome::Processing { .. } => return Ok(Did::Unanswered),
        // The buyer never finished authenticating: cancel the payment so a late completion
        // cannot authorize money for seats already freed.
        Outcome::Authorized { payment_id } | Outcome::ActionRequired { payment_id, .. } => {
            ("void", Some(payment_id.as_str()), 0)
        }
        Outcome::Captured { payment_id } => ("refund", Some(payment_id.as_str()), 0),
        Outcome::Declined { .. }
        | Outcome::Canceled { .. }
        | Outcome::NotFound
        | Outcome::Rejected { .. }
        | Outcome::Refunded { .. } => ("void", None, config.late_money_checks),
    };
    let a = store.abandon(&d.attempt).await?;
    if a.state != AttemptState::Abandoned {
        // Finalized or declined by the worker or a webhook in the meantime (abandon closes
        // only an attempt still open, judged under the seat locks): theirs stands, and the
        // money of a sale is its order's, never voided or refunded here.
        return Ok(match a.state {
            AttemptState::Declined => Did::Declined,
            _ => Did::Confirmed,
        });
    }
    store
        .enqueue(
            kind,
            &d.event_id,
            d.attempt.as_str(),
            &money_job(&d.attempt, payment_id, checks),
        )
        .await?;
    Ok(Did::Abandoned)
}
