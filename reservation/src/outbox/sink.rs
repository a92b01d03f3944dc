//! `session_ended` rows go to a caller-supplied async sink: the gateway passes a closure that
//! frees the admission slot, tests pass a channel. Reservation never depends on admission.

use std::pin::Pin;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::Error;

use super::claim::Job;
use super::{Ctx, Step};

/// A hold reached a final state, so its admission session is over.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionEnded {
    pub session_id: String,
    pub event_id: String,
    pub hold_id: String,
    /// `confirmed`, `released`, `expired` or `abandoned`.
    pub reason: String,
}

/// Whatever the sink failed with; the row is retried with backoff.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

type SinkFuture = Pin<Box<dyn Future<Output = Result<(), SinkError>> + Send>>;

/// Where `session_ended` rows go. Cheap to clone. Delivery is at least once: a sink must
/// tolerate a repeat (freeing a slot twice must be a no-op on its side).
#[derive(Clone)]
pub struct SessionSink(Arc<dyn Fn(SessionEnded) -> SinkFuture + Send + Sync>);

impl std::fmt::Debug for SessionSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SessionSink")
    }
}

impl SessionSink {
    pub fn new<F, Fut>(f: F) -> Self
    where
        F: Fn(SessionEnded) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<(), SinkError>> + Send + 'static,
    {
        SessionSink(Arc::new(move |e| Box::pin(f(e))))
    }

    /// Sends each ended session down a channel (tests).
    pub fn channel(tx: tokio::sync::mpsc::UnboundedSender<SessionEnded>) -> Self {
        SessionSink::new(move |e| {
            let sent = tx
                .send(e)
                .map_err(|_| SinkError::from("session sink closed"));
            async move { sent }
        })
    }

    /// Drops every signal (a deployment without admission).
    pub fn discard() -> Self {
        SessionSink::new(|_| async { Ok(()) })
    }
}

pub(super) async fn deliver(ctx: &Ctx, job: &Job) -> Result<Step, Error> {
    let ended: SessionEnded = match serde_json::from_value(job.payload.clone()) {
        Ok(e) => e,
        Err(error) => {
            tracing::error!(%error, job = job.id, "unreadable session_ended row");
            return Ok(Step::Done);
        }
    };
    Ok(match (ctx.sink.0)(ended).await {
        Ok(()) => Step::Done,
        Err(error) => Step::Retry(format!("session sink: {error}")),
    })
}
